//! Heard latency, one change at a time: the agent's change (or the floor's push) to the
//! note at the parent queue. Each change waits until the stand-in is parked again, so every
//! note is one change heard from a park, never a coalesced burst.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use crate::agent::{Behaviour, TestAgent};
use crate::e2e::{COMPLETED, INPUT_REQUIRED, SOON, WORKING, start_as, wait_parked};
use crate::stack::{Stack, now_ms, unique};

/// When one WORKING change passed each point on its way to the parent (epoch ms).
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// The stand-in (execution name) that heard it.
    pub standin: String,
    /// The agent changed the task (the floor: the push was sent).
    pub changed: u64,
    /// The agent's push was answered (push and floor only; a follow has no push).
    pub answered: Option<u64>,
    /// SQS took the note (its `SentTimestamp`).
    pub sent: Option<u64>,
    /// The parent's consumer received the note.
    pub received: u64,
}

/// One watch's measurements: WORKING notes and final notes, in milliseconds, and the
/// stand-ins (execution names) that made them.
#[derive(Debug, Default, Clone)]
pub struct Heard {
    /// Each WORKING change's way to the parent, for the breakdown of where the time goes.
    pub marks: Vec<Marks>,
    pub working_ms: Vec<u64>,
    pub final_ms: Vec<u64>,
    pub standins: Vec<String>,
    /// When only this watch's heard changes happen (`Windows`): the calls made then are
    /// its cost.
    pub windows: Vec<(u64, u64)>,
    /// The row reads the benchmark itself made in those windows (to tell parked), which
    /// the request counts leave out.
    pub own_row_reads: u64,
}

impl Heard {
    pub(super) fn record(&mut self, marks: Marks) {
        self.working_ms
            .push(marks.received.saturating_sub(marks.changed));
        self.marks.push(marks);
    }
}

/// Changes per stand-in before its final one: a final note ends a stand-in, so finals
/// need stand-ins of their own.
pub const CHANGES_PER_STANDIN: usize = 5;

/// What a window of a watch's cost covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// A stand-in's changes, heard back to back: from just before its first change to
    /// the park after its last WORKING one.
    PerStandIn,
    /// Each change alone, from the change to `TAIL` after its park, for changes heard in
    /// rounds beside other stacks' pushes (whose calls must not be counted).
    PerChange,
}

/// How long each push of the rounds waits after the last note (`rounds`).
pub const SETTLE: Duration = Duration::from_millis(250);

/// How long a per-change window stays open after the park, for the functions' last
/// REPORT lines; nothing else begins until it closes.
const TAIL: u64 = 150;

/// A persona's stand-ins, heard one change at a time: each stand-in hears
/// `CHANGES_PER_STANDIN` WORKING changes, then a final one that ends it, and the next
/// change starts another.
pub struct Watched<'a> {
    stack: &'a Stack,
    agent: TestAgent,
    persona: &'static str,
    watch: &'static str,
    windows: Windows,
    rows: aws_sdk_dynamodb::Client,
    used_remotes: Vec<String>,
    current: Option<Hearing>,
    heard: Heard,
}

/// The stand-in hearing now.
struct Hearing {
    id: String,
    /// The agent's task.
    remote: String,
    /// WORKING changes heard so far.
    changes: usize,
    /// Its window's start, and its last park after a change.
    from: u64,
    parked: u64,
}

impl<'a> Watched<'a> {
    pub async fn start(
        stack: &'a Stack,
        (persona, port): (&'static str, u16),
        watch: &'static str,
        windows: Windows,
    ) -> Result<Self, String> {
        let agent = TestAgent::try_start(port, Behaviour::default())
            .await
            .map_err(|e| format!("the {persona} agent on 127.0.0.1:{port}: {e}"))?;
        Ok(Self {
            stack,
            agent,
            persona,
            watch,
            windows,
            rows: aws_sdk_dynamodb::Client::new(&stack.config),
            used_remotes: vec![],
            current: None,
            heard: Heard::default(),
        })
    }

    /// One WORKING change heard (a new stand-in started for it when none is hearing); the
    /// stand-in's final change follows its `CHANGES_PER_STANDIN`th.
    pub async fn change(&mut self) -> Result<(), String> {
        let mut hearing = match self.current.take() {
            Some(hearing) => hearing,
            None => {
                let hearing = self.begin().await?;
                if self.windows == Windows::PerChange {
                    // As quiet before the change as every push of a round: what the start
                    // set going does not fall on it.
                    tokio::time::sleep(SETTLE).await;
                }
                hearing
            }
        };
        hearing.changes += 1;
        let marks = self.heard_change(&hearing, false).await?;
        let changed = marks.changed;
        self.heard.record(marks);
        let table = self.stack.out("TableName");
        self.heard.own_row_reads += wait_row_parked(&self.rows, table, &hearing.id).await?;
        hearing.parked = now_ms();
        if self.windows == Windows::PerChange {
            // The window closes before anything else begins, the final change included.
            self.heard.windows.push((changed, hearing.parked + TAIL));
            tokio::time::sleep(Duration::from_millis(TAIL)).await;
        }
        let ends = hearing.changes == CHANGES_PER_STANDIN;
        self.current = Some(hearing);
        if ends {
            self.end().await?;
        }
        Ok(())
    }

    /// A stand-in of one change and its final one, not counted: its functions warm.
    /// Before any counted change.
    pub async fn warm(&mut self) -> Result<(), String> {
        debug_assert!(self.current.is_none(), "warm before any counted change");
        let counted = std::mem::take(&mut self.heard);
        let warmed = async {
            self.change().await?;
            self.end().await
        }
        .await;
        self.heard = counted;
        warmed
    }

    /// The final change of the stand-in hearing now, if any; then all that was heard.
    pub async fn finish(mut self) -> Result<Heard, String> {
        self.end().await?;
        Ok(self.heard)
    }

    /// A new stand-in, parked after its first turn.
    async fn begin(&mut self) -> Result<Hearing, String> {
        self.agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
        let id = unique(&format!("bench-{}", self.watch));
        start_as(self.stack, self.persona, &id).await;
        self.stack.wait_notes(&id, 1, SOON).await;
        wait_parked(self.stack, &id, self.watch).await;
        let remote = self
            .agent
            .task_ids()
            .into_iter()
            .find(|t| !self.used_remotes.contains(t))
            .ok_or("the agent has no task for the new stand-in")?;
        self.used_remotes.push(remote.clone());
        let now = now_ms();
        Ok(Hearing {
            id,
            remote,
            changes: 0,
            from: now,
            parked: now,
        })
    }

    /// The final change of the stand-in hearing now, heard, and its execution's end.
    async fn end(&mut self) -> Result<(), String> {
        let Some(mut hearing) = self.current.take() else {
            return Ok(());
        };
        if self.windows == Windows::PerStandIn {
            self.heard.windows.push((hearing.from, hearing.parked));
        }
        hearing.changes += 1;
        let marks = self.heard_change(&hearing, true).await?;
        self.heard
            .final_ms
            .push(marks.received.saturating_sub(marks.changed));
        self.stack
            .wait_execution(&hearing.id, "SUCCEEDED", SOON)
            .await;
        self.heard.standins.push(hearing.id);
        Ok(())
    }

    /// The stand-in's change number `changes` (its note is the next number), the final one
    /// or a WORKING one, timed from the agent's change to the parent's note.
    async fn heard_change(&self, hearing: &Hearing, last: bool) -> Result<Marks, String> {
        let k = hearing.changes;
        let (state, text) = if last {
            (COMPLETED, "Done".to_owned())
        } else {
            (WORKING, format!("step {k}"))
        };
        let changed = now_ms();
        self.agent
            .change(&hearing.remote, state, &text, false)
            .await;
        // The agent's push answered (a 204): only then is the answer's time a mark.
        let answered = (self.watch == "push").then(now_ms).filter(|_| {
            self.agent
                .pushes_sent()
                .last()
                .is_some_and(|(_, status)| *status == 204)
        });
        self.stack.wait_notes(&hearing.id, k + 1, SOON).await;
        let note = self
            .stack
            .notes_timed(&hearing.id)
            .into_iter()
            .find(|n| n.note["seq"] == json!(k as u64 + 1))
            .ok_or("the note was counted but not found")?;
        Ok(Marks {
            standin: hearing.id.clone(),
            changed,
            answered,
            sent: note.sent_ms,
            received: note.received_ms,
        })
    }
}

/// `changes` WORKING changes (and one final per five) heard through `persona`'s watch,
/// back to back.
pub async fn stand_in(
    stack: &Stack,
    persona: (&'static str, u16),
    watch: &'static str,
    changes: usize,
) -> Result<Heard, String> {
    let mut watched = Watched::start(stack, persona, watch, Windows::PerStandIn).await?;
    for _ in 0..changes {
        watched.change().await?;
    }
    watched.finish().await
}

/// The polled agent the benchmark registers: no push, no stream, the default
/// `poll_max_interval`, so its latency is the default backoff's.
pub const POLL: (&str, u16) = ("bench-poll", 27159);

/// `changes` WORKING changes (and one final per five) heard by polling: `POLL`'s agent
/// registered through the agent registry with `updates = "poll"`, then heard one change
/// at a time as `stand_in` hears them, each made as the stand-in parks again after the
/// last (its poll wait back at 2 s).
pub async fn polled(stack: &Stack, changes: usize) -> Result<Heard, String> {
    let (agent, port) = POLL;
    let entry = json!({"url": format!("http://127.0.0.1:{port}"), "updates": "poll"});
    let path = format!("/agents/{agent}");
    match stack.try_control("PUT", &path, Some(entry)).await {
        Ok((200, _)) => {}
        Ok((status, body)) => return Err(format!("PUT {path} answered {status}: {body}")),
        Err(e) => return Err(format!("PUT {path}: {e}")),
    }
    stand_in(stack, (agent, port), "poll", changes).await
}

/// Waits until the row shows the stand-in parked with nothing in flight (a token stored by
/// the newest park, not woken, not closed, nothing pending), reading DynamoDB directly so
/// that no function runs for it; returns how many reads it took. Nothing pending: a push's
/// hearing tells its change before the wake takes the report it leaves, so a row parked
/// but with a report pending is the previous change still on its way, as the floor's is
/// until its Note parks again.
async fn wait_row_parked(
    rows: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
) -> Result<u64, String> {
    let deadline = std::time::Instant::now() + SOON;
    let mut reads = 0;
    loop {
        reads += 1;
        let item = rows
            .get_item()
            .table_name(table)
            .key("task_id", AttributeValue::S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("the row of {id} could not be read: {e}"))?;
        if let Some(row) = item.item() {
            let n = |k: &str| {
                row.get(k)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let closed = row
                .get("closed")
                .and_then(|v| v.as_bool().ok())
                .copied()
                .unwrap_or(false);
            let quiet = row
                .get("pending")
                .and_then(|v| v.as_m().ok())
                .is_none_or(|pending| {
                    pending.iter().all(|(kind, v)| {
                        kind == "replies" && v.as_l().is_ok_and(|replies| replies.is_empty())
                    })
                });
            if !closed && quiet && row.contains_key("park_token") && n("epoch") > n("woken") {
                return Ok(reads);
            }
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("{id} did not park again within {SOON:?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A push stand-in whose final push is lost on the way (A2A senders do not retry): from
/// the agent's change to the parent's final note, which only the backstop's re-check
/// can hear. Milliseconds.
pub async fn lost_final_push(stack: &Stack, persona: &str, port: u16) -> Result<u64, String> {
    let agent = TestAgent::try_start(port, Behaviour::default())
        .await
        .map_err(|e| format!("the {persona} agent on 127.0.0.1:{port}: {e}"))?;
    agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
    let id = unique("bench-lost");
    start_as(stack, persona, &id).await;
    stack.wait_notes(&id, 1, SOON).await;
    wait_parked(stack, &id, "push").await;
    let remote = agent
        .task_ids()
        .pop()
        .ok_or("the agent has no task for the stand-in")?;
    let changed = now_ms();
    agent.change_and_lose_the_push(&remote, COMPLETED, "Done; its push was lost");
    let deadline = changed + 5 * 60 * 1000;
    loop {
        let heard = stack
            .notes_received(&id)
            .into_iter()
            .find(|(note, _)| note["final"] == true);
        if let Some((_, received)) = heard {
            return Ok(received.saturating_sub(changed));
        }
        if now_ms() > deadline {
            return Err(format!(
                "{id}: the lost final push was not heard in 5 minutes"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
