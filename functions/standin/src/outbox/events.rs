//! The note bus on EventBridge: each note one event, `source` "standin", the note's
//! state as its `detail-type`, the note as its `detail`, so a parent routes notes with
//! plain rules (questions to a person, completions to a workflow).

use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use futures_util::future::join_all;

use super::{NoteBus, ParentNote, QueueError};

/// Every note's `source`.
pub const SOURCE: &str = "standin";
/// PutEvents takes at most ten entries a call...
const PUT_BATCH: usize = 10;
/// ...of at most 256 KiB together, each entry's size counted as EventBridge counts it.
pub const PUT_BYTES: usize = 256 * 1024;

/// An entry's size as EventBridge counts it against a call's 256 KiB: its source, detail
/// type, detail and resources in UTF-8 bytes, and 14 for a time.
pub fn entry_bytes(entry: &PutEventsRequestEntry) -> usize {
    entry.source().map_or(0, str::len)
        + entry.detail_type().map_or(0, str::len)
        + entry.detail().map_or(0, str::len)
        + entry.resources().iter().map(String::len).sum::<usize>()
        + entry.time().map_or(0, |_| 14)
}

/// The entries' indexes in calls of at most ten entries and 256 KiB, in order; an entry
/// too big for any call is in none (its index is the second list).
pub fn batches(sizes: &[usize]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let (mut calls, mut too_big) = (Vec::new(), Vec::new());
    let (mut call, mut bytes): (Vec<usize>, usize) = (Vec::new(), 0);
    for (i, &size) in sizes.iter().enumerate() {
        if size > PUT_BYTES {
            too_big.push(i);
            continue;
        }
        if call.len() == PUT_BATCH || bytes + size > PUT_BYTES {
            calls.push(std::mem::take(&mut call));
            bytes = 0;
        }
        call.push(i);
        bytes += size;
    }
    if !call.is_empty() {
        calls.push(call);
    }
    (calls, too_big)
}
#[derive(Clone)]
pub struct EventBridgeBus {
    client: Client,
    bus: String,
}

impl EventBridgeBus {
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }

    fn entry(&self, note: &ParentNote) -> Result<PutEventsRequestEntry, QueueError> {
        let detail = serde_json::to_string(note)
            .map_err(|e| QueueError::Unavailable(format!("encode the note: {e}")))?;
        Ok(PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(note.state.as_str())
            .detail(detail)
            .build())
    }

    /// Puts one call's entries; one answer each. A call refused whole is split and its
    /// halves put again (a refusal of the call may be about its size); a single entry
    /// refused whole is refused for good: counted and alarmed by the outbox, never taken
    /// for sent.
    async fn put_call(&self, entries: Vec<PutEventsRequestEntry>) -> Vec<Result<(), QueueError>> {
        // Halves are put in order: depth first, the first half before the second.
        let mut pending = vec![entries];
        let mut answers = Vec::new();
        while let Some(call) = pending.pop() {
            let count = call.len();
            let put = self.client.put_events().set_entries(Some(call.clone()));
            match put.send().await {
                // One result per entry, in order; an entry with an error code was not put.
                Ok(out) => {
                    let given = out.entries().iter().map(|result| {
                        let Some(code) = result.error_code() else {
                            return Ok(());
                        };
                        let why = format!(
                            "EventBridge refused the note: {code} {}",
                            result.error_message().unwrap_or_default()
                        );
                        Err(QueueError::refused_if(!passing(code), why))
                    });
                    // An entry without a result was not shown to be put: sent again.
                    let missing = "EventBridge gave no result for the note";
                    let missing = std::iter::repeat(Err(QueueError::Unavailable(missing.into())));
                    answers.extend(given.chain(missing).take(count));
                }
                Err(err) => {
                    let why = format!("EventBridge unavailable: {}", DisplayErrorContext(&err));
                    let refused = err.code().is_some_and(|code| !passing(code));
                    // Only a refusal of what the call holds is worth halving; a missing
                    // bus or a permission refuses each half alike.
                    let about_the_call = err.code() == Some("ValidationException");
                    if refused && about_the_call && count > 1 {
                        let mut first = call;
                        let second = first.split_off(count / 2);
                        pending.push(second);
                        pending.push(first);
                        continue;
                    }
                    let answer = Err(QueueError::refused_if(refused, why));
                    answers.extend(std::iter::repeat_n(answer, count));
                }
            }
        }
        answers
    }
}

/// An error that passes: throttling, or EventBridge failing inside. Anything else (a
/// missing bus, a permission, a malformed event) will be refused again.
fn passing(code: &str) -> bool {
    matches!(
        code,
        "ThrottlingException" | "InternalFailure" | "InternalException" | "ServiceUnavailable"
    )
}

impl NoteBus for EventBridgeBus {
    async fn put_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let mut answers: Vec<Result<(), QueueError>> = vec![Ok(()); notes.len()];
        let mut entries: Vec<(usize, PutEventsRequestEntry)> = Vec::with_capacity(notes.len());
        for (i, note) in notes.iter().enumerate() {
            match self.entry(note) {
                Ok(entry) => entries.push((i, entry)),
                Err(err) => answers[i] = Err(err),
            }
        }
        let sizes: Vec<usize> = entries.iter().map(|(_, e)| entry_bytes(e)).collect();
        let (calls, too_big) = batches(&sizes);
        for at in too_big {
            answers[entries[at].0] = Err(QueueError::Refused(format!(
                "the note is {} bytes as an event, past the {PUT_BYTES} EventBridge takes",
                sizes[at]
            )));
        }
        // The calls go together: a round of a hundred stand-ins' notes is ten calls, and
        // one after another they outlast notify's invocation when each takes a second.
        let puts = calls
            .iter()
            .map(|call| self.put_call(call.iter().map(|&at| entries[at].1.clone()).collect()));
        for (call, put) in calls.iter().zip(join_all(puts).await) {
            for (&at, answer) in call.iter().zip(put) {
                answers[entries[at].0] = answer;
            }
        }
        answers
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[test]
    fn calls_hold_ten_entries_and_256_kib_at_most() {
        let kib = 1024;
        // Ten final notes of 40 KB each, as an outage leaves them: six fit one call.
        let (calls, too_big) = batches(&[40 * kib; 10]);
        assert_eq!(calls, [vec![0, 1, 2, 3, 4, 5], vec![6, 7, 8, 9]]);
        assert!(too_big.is_empty());
        for call in &calls {
            assert!(call.len() * 40 * kib <= PUT_BYTES);
        }
        let (calls, _) = batches(&[100; 25]);
        assert_eq!(
            calls.iter().map(Vec::len).collect::<Vec<_>>(),
            [10, 10, 5],
            "small notes: ten a call"
        );
        let (calls, too_big) = batches(&[10, PUT_BYTES + 1, PUT_BYTES, 10]);
        assert_eq!(calls, [vec![0], vec![2], vec![3]]);
        assert_eq!(too_big, [1], "an entry past 256 KiB fits no call");
        assert_eq!(batches(&[]), (vec![], vec![]));
    }

    /// A loopback EventBridge that holds each PutEvents until `calls` have been in flight
    /// together (or ten seconds have passed), then answers every entry put; it reports
    /// the most in flight.
    async fn eventbridge_counting(calls: usize) -> (String, Arc<AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let seen = most.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (in_flight, most) = (in_flight.clone(), most.clone());
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut chunk = [0u8; 8192];
                    // The whole request: its head, then as many bytes as it says.
                    loop {
                        let Ok(n) = socket.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&request).to_lowercase();
                        if let Some(head) = text.find("\r\n\r\n") {
                            let length = text
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if request.len() >= head + 4 + length {
                                break;
                            }
                        }
                    }
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let waited = tokio::time::Instant::now();
                    while most.load(Ordering::SeqCst) < calls
                        && waited.elapsed() < Duration::from_secs(10)
                    {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let body = format!(
                        "{{\"FailedEntryCount\":0,\"Entries\":[{}]}}",
                        ["{\"EventId\":\"e\"}"; PUT_BATCH].join(",")
                    );
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                    let _ = socket.shutdown().await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        (endpoint, seen)
    }

    fn note(task_id: &str) -> ParentNote {
        let row = crate::row::Row::new(task_id, "agent-a");
        let out = crate::state::remote_out("r-1", standin_wire::TaskState::Working, "working");
        crate::outbox::note_of(&row, &out, 1)
    }

    #[tokio::test]
    async fn a_round_s_puts_go_together_not_one_after_another() {
        let (endpoint, most) = eventbridge_counting(3).await;
        let config = aws_sdk_eventbridge::Config::builder()
            .behavior_version(aws_sdk_eventbridge::config::BehaviorVersion::latest())
            .region(aws_sdk_eventbridge::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_eventbridge::config::Credentials::for_tests())
            .endpoint_url(endpoint)
            .build();
        let bus = EventBridgeBus::new(Client::from_conf(config), "notes");
        // Twenty-five small notes are three calls.
        let notes: Vec<ParentNote> = (0..25).map(|i| note(&format!("t-{i}"))).collect();
        let answers = bus.put_each(&notes.iter().collect::<Vec<_>>()).await;
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        assert_eq!(
            most.load(Ordering::SeqCst),
            3,
            "the three calls were in flight together"
        );
    }

    #[test]
    fn an_entry_is_counted_as_eventbridge_counts_it() {
        let entry = PutEventsRequestEntry::builder()
            .source("standin")
            .detail_type("COMPLETED")
            .detail("{\"é\":1}")
            .resources("arn:x")
            .build();
        assert_eq!(entry_bytes(&entry), 7 + 9 + 8 + 5, "é is two bytes");
    }
}
