//! The parent queue on SQS FIFO: grouped by stand-in (order), deduplicated by its
//! sequence number (exactly once within the deduplication window).

use std::collections::{HashMap, HashSet};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use futures_util::future::join_all;

use super::{ParentNote, ParentQueue, QueueError};

#[derive(Clone)]
pub struct SqsParentQueue {
    client: Client,
    queue_url: String,
}

impl SqsParentQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// One SendMessageBatch; an answer per entry (a refused call refuses them all).
    async fn send_batch(
        &self,
        notes: &[&ParentNote],
        batch: Vec<(usize, String)>,
    ) -> Vec<(usize, Result<(), QueueError>)> {
        let indexes: Vec<usize> = batch.iter().map(|(i, _)| *i).collect();
        let all = |why: String| {
            let err = QueueError::Unavailable(why);
            indexes.iter().map(|&i| (i, Err(err.clone()))).collect()
        };
        let entries = batch.into_iter().map(|(i, body)| {
            SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_group_id(group_id(&notes[i].task_id))
                .message_deduplication_id(dedup_id(notes[i]))
                .message_body(body)
                .build()
        });
        let entries = match entries.collect::<Result<Vec<_>, _>>() {
            Ok(entries) => entries,
            Err(e) => return all(format!("build batch: {e}")),
        };
        let sent = self
            .client
            .send_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
        let out = match sent {
            Ok(out) => out,
            Err(e) => return all(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()),
        };
        let taken: HashSet<&str> = out.successful().iter().map(|s| s.id()).collect();
        // SQS says whether the fault is the sender's (refused however often it is sent).
        let refused: HashMap<&str, QueueError> = out
            .failed()
            .iter()
            .map(|f| {
                let why = format!("{}: {}", f.code(), f.message().unwrap_or_default());
                (f.id(), QueueError::refused_if(f.sender_fault(), why))
            })
            .collect();
        let answer = |id: &str| match refused.get(id) {
            _ if taken.contains(id) => Ok(()),
            Some(why) => Err(why.clone()),
            None => Err(QueueError::Unavailable("no answer for it".into())),
        };
        indexes
            .iter()
            .map(|&i| (i, answer(&i.to_string())))
            .collect()
    }
}

/// SendMessageBatch takes at most 10 entries and 256 KiB in all; a note is at most a
/// few dozen KiB (its text is bounded), so a batch is cut at 10 or at this many bytes.
pub const BATCH_ENTRIES: usize = 10;
pub const BATCH_BYTES: usize = 200 * 1024;

impl ParentQueue for SqsParentQueue {
    async fn send(&self, note: &ParentNote) -> Result<(), QueueError> {
        let body = message_body(note)?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_group_id(group_id(&note.task_id))
            .message_deduplication_id(dedup_id(note))
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                let why = aws_sdk_sqs::error::DisplayErrorContext(&e).to_string();
                let code = aws_sdk_sqs::error::ProvideErrorMetadata::code(&e);
                QueueError::refused_if(code.is_some_and(refused_for_good), why)
            })
    }

    async fn send_each(&self, notes: &[&ParentNote]) -> Vec<Result<(), QueueError>> {
        let mut answers: Vec<Result<(), QueueError>> = vec![Ok(()); notes.len()];
        let mut bodies = Vec::with_capacity(notes.len());
        for (i, note) in notes.iter().enumerate() {
            match message_body(note) {
                Ok(body) => bodies.push((i, body)),
                Err(e) => answers[i] = Err(e),
            }
        }
        let calls = batches(bodies).into_iter();
        let sent = join_all(calls.map(|b| self.send_batch(notes, b))).await;
        for (i, answer) in sent.into_iter().flatten() {
            answers[i] = answer;
        }
        answers
    }
}

/// The note as SQS takes it. SQS refuses U+FFFE and U+FFFF in a body, and JSON carries
/// them as written; an agent's text holding one would be refused on every retry and
/// hold its stand-in's notes for a day. Escaped, the parent reads the same text.
pub fn message_body(note: &ParentNote) -> Result<String, QueueError> {
    let body = serde_json::to_string(note).map_err(|e| QueueError::Refused(e.to_string()))?;
    if !body.contains(['\u{FFFE}', '\u{FFFF}']) {
        return Ok(body);
    }
    Ok(body
        .replace('\u{FFFE}', "\\ufffe")
        .replace('\u{FFFF}', "\\uffff"))
}

/// Bodies cut into SendMessageBatch calls: at most 10 entries and `BATCH_BYTES` each.
pub fn batches(bodies: Vec<(usize, String)>) -> Vec<Vec<(usize, String)>> {
    let mut batches: Vec<Vec<(usize, String)>> = vec![];
    let mut bytes = 0;
    for (i, body) in bodies {
        let size = body.len();
        match batches.last_mut() {
            Some(b) if b.len() < BATCH_ENTRIES && bytes + size <= BATCH_BYTES => b.push((i, body)),
            _ => {
                batches.push(vec![(i, body)]);
                bytes = 0;
            }
        }
        bytes += size;
    }
    batches
}

/// A whole call's error codes that no retry can cure, for a single send.
fn refused_for_good(code: &str) -> bool {
    matches!(
        code,
        "InvalidParameterValue" | "InvalidMessageContents" | "MissingParameter"
    )
}

/// SQS takes at most 128 of these characters in a group or deduplication id.
#[cfg(test)]
fn fits_sqs(id: &str) -> bool {
    id.len() <= 128
        && !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c.is_ascii_punctuation())
}

/// The message group: the stand-in's id, which orders its notes. An id within the
/// control API's rules is its own group; any other is grouped by its SHA-256 after a
/// `:`, which no id within the rules holds, so no id can make SQS refuse the group or
/// share another stand-in's.
pub fn group_id(task_id: &str) -> String {
    if standin_wire::TaskId::parse(task_id).is_ok() {
        return task_id.to_owned();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(task_id.as_bytes());
    format!(":sha256:{}", hex::encode(digest))
}

/// FIFO deduplication: the same note sent again within five minutes is taken once.
pub fn dedup_id(note: &ParentNote) -> String {
    format!("{}:{}", group_id(&note.task_id), note.seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bodies(sizes: &[usize]) -> Vec<(usize, String)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, n)| (i, "x".repeat(*n)))
            .collect()
    }

    #[test]
    fn batches_hold_ten_entries_at_most_in_order() {
        let cut = batches(bodies(&[10; 23]));
        let sizes: Vec<usize> = cut.iter().map(Vec::len).collect();
        assert_eq!(sizes, [10, 10, 3]);
        let order: Vec<usize> = cut.iter().flatten().map(|(i, _)| *i).collect();
        assert_eq!(
            order,
            (0..23).collect::<Vec<_>>(),
            "every entry once, ids kept"
        );
        assert!(batches(vec![]).is_empty());
    }

    #[test]
    fn batches_stay_under_the_byte_bound() {
        let big = BATCH_BYTES / 3;
        let cut = batches(bodies(&[big, big, big, big, 10]));
        let sizes: Vec<usize> = cut.iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 2], "a fourth big body would pass the bound");
        for batch in &cut {
            assert!(batch.iter().map(|(_, b)| b.len()).sum::<usize>() <= BATCH_BYTES);
        }
    }

    #[test]
    fn every_id_makes_a_group_and_a_dedup_id_sqs_takes() {
        let note = |task_id: &str| ParentNote {
            task_id: task_id.into(),
            remote_task_id: None,
            agent: "a".into(),
            state: standin_wire::TaskState::Failed,
            text: String::new(),
            is_final: true,
            seq: 12,
            at: "2026-12-01T00:00:00.000Z".into(),
            changed_at: None,
            watch: None,
            artifacts: Vec::new(),
            artifacts_omitted: 0,
            parts: Vec::new(),
            trace_id: None,
        };
        assert_eq!(
            group_id("job-1_a"),
            "job-1_a",
            "a rule-abiding id is its own group"
        );
        assert_eq!(dedup_id(&note("job-1_a")), "job-1_a:12");
        for odd in ["with space", "ünïcode", &"x".repeat(200), "tab\there", ""] {
            let group = group_id(odd);
            assert!(fits_sqs(&group), "{odd:?} -> {group}");
            assert!(fits_sqs(&dedup_id(&note(odd))), "{odd:?}");
            assert_eq!(group, group_id(odd), "the same id, the same group");
        }
        assert_ne!(group_id("a b"), group_id("a  b"));
        let hashed = group_id("a b");
        assert_ne!(
            group_id(&hashed),
            hashed,
            "an id that looks hashed is not a hashed id's group"
        );
    }

    #[test]
    fn a_sender_fault_is_refused_for_good_and_any_other_is_retried() {
        assert!(matches!(
            QueueError::refused_if(true, "InvalidParameterValue: bad group".into()),
            QueueError::Refused(_)
        ));
        assert!(matches!(
            QueueError::refused_if(false, "ThrottlingException".into()),
            QueueError::Unavailable(_)
        ));
        assert!(refused_for_good("InvalidMessageContents"));
        assert!(!refused_for_good("RequestThrottled"));
    }

    #[test]
    fn a_body_sqs_refuses_is_escaped_and_reads_back_the_same() {
        let note = ParentNote {
            task_id: "t".into(),
            remote_task_id: Some("r".into()),
            agent: "a".into(),
            state: standin_wire::TaskState::Working,
            text: "odd \u{FFFE} and \u{FFFF} ok é".into(),
            is_final: false,
            seq: 1,
            at: "2026-12-01T00:00:00.000Z".into(),
            changed_at: None,
            watch: None,
            artifacts: Vec::new(),
            artifacts_omitted: 0,
            parts: Vec::new(),
            trace_id: None,
        };
        let body = message_body(&note).expect("body");
        assert!(!body.contains(['\u{FFFE}', '\u{FFFF}']), "{body}");
        assert!(body.contains('é'), "other text is left as it is");
        let back: ParentNote = serde_json::from_str(&body).expect("still JSON");
        assert_eq!(back, note);
    }
}
