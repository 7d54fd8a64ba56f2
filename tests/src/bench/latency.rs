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
    /// Per stand-in, from just before its first WORKING change to its last WORKING note
    /// and the park after it: only heard changes happen in these windows.
    pub windows: Vec<(u64, u64)>,
    /// The row reads the benchmark itself made in those windows (to tell parked), which
    /// the request counts leave out.
    pub own_row_reads: u64,
}

/// Changes per stand-in before its final one: a final note ends a stand-in, so finals
/// need stand-ins of their own.
pub const CHANGES_PER_STANDIN: usize = 5;

/// `changes` WORKING changes (and one final per five) heard through `persona`'s watch.
pub async fn stand_in(
    stack: &Stack,
    persona: &str,
    port: u16,
    watch: &str,
    changes: usize,
) -> Result<Heard, String> {
    let agent = TestAgent::try_start(port, Behaviour::default())
        .await
        .map_err(|e| format!("the {persona} agent on 127.0.0.1:{port}: {e}"))?;
    let mut heard = Heard::default();
    let rows = aws_sdk_dynamodb::Client::new(&stack.config);
    let table = stack.out("TableName").to_owned();
    let mut used_remotes: Vec<String> = vec![];
    let mut left = changes;
    while left > 0 {
        let batch = left.min(CHANGES_PER_STANDIN);
        left -= batch;
        agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
        let id = unique(&format!("bench-{watch}"));
        start_as(stack, persona, &id).await;
        stack.wait_notes(&id, 1, SOON).await;
        wait_parked(stack, &id, watch).await;
        let remote = agent
            .task_ids()
            .into_iter()
            .find(|t| !used_remotes.contains(t))
            .ok_or("the agent has no task for the new stand-in")?;
        used_remotes.push(remote.clone());
        let window_from = now_ms();
        let mut window_to = window_from;
        for k in 1..=batch + 1 {
            let last = k == batch + 1;
            let (state, text) = if last {
                (COMPLETED, "Done".to_owned())
            } else {
                (WORKING, format!("step {k}"))
            };
            let changed = now_ms();
            agent.change(&remote, state, &text, false).await;
            // The agent's push answered (a 204): only then is the answer's time a mark.
            let answered = (watch == "push").then(now_ms).filter(|_| {
                agent
                    .pushes_sent()
                    .last()
                    .is_some_and(|(_, status)| *status == 204)
            });
            stack.wait_notes(&id, k + 1, SOON).await;
            let note = stack
                .notes_timed(&id)
                .into_iter()
                .find(|n| n.note["seq"] == json!(k as u64 + 1))
                .ok_or("the note was counted but not found")?;
            let ms = note.received_ms.saturating_sub(changed);
            if last {
                heard.final_ms.push(ms);
            } else {
                heard.working_ms.push(ms);
                heard.marks.push(Marks {
                    standin: id.clone(),
                    changed,
                    answered,
                    sent: note.sent_ms,
                    received: note.received_ms,
                });
                heard.own_row_reads += wait_row_parked(&rows, &table, &id).await?;
                window_to = now_ms();
            }
        }
        heard.windows.push((window_from, window_to));
        stack.wait_execution(&id, "SUCCEEDED", SOON).await;
        heard.standins.push(id);
    }
    Ok(heard)
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
    stand_in(stack, agent, port, "poll", changes).await
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

/// The routes of the push sketches on the floor's stack (D77), by the name each is
/// reported under: the door hears in place, or hands a hearer the stand-in's id (and
/// waits), or its claim as hints (and waits), or its claim without waiting.
pub const SKETCHES: [(&str, &str); 4] = [
    ("in_place", "in-place"),
    ("to_hearer", "to-hearer"),
    ("to_hearer_hinted", "to-hearer-hinted"),
    ("to_hearer_async", "to-hearer-async"),
];

/// The name the sketches' rows give their agent, which the floor stack's functions
/// reach through their own registry (`AGENTS` in bench/floor.yaml).
const SKETCH_AGENT: &str = "sketch-agent";

/// How long each push of a round waits after the last note.
const SETTLE: Duration = Duration::from_millis(250);

/// The agent the sketches ask GetTask of (bench/floor.yaml's `AGENTS` names this port).
pub const SKETCH_AGENT_PORT: u16 = 27195;

/// The floor and the sketches, heard in rounds: each round pushes the floor once, then
/// each sketch once, so that whatever the test bed does at a moment falls on all of them
/// alike, and each push waits `SETTLE` after the last note, so that what LocalStack does
/// after one (an asynchronous invoke's bookkeeping, the floor's next park) does not fall
/// on the next. Round 0 warms every function and is not counted; `changes` rounds follow.
/// Returns the floor's and each sketch's (in `SKETCHES`' order).
pub async fn floor_and_sketches(
    stack: &Stack,
    changes: usize,
) -> Result<(Heard, Vec<Heard>), String> {
    let agent = TestAgent::try_start(SKETCH_AGENT_PORT, Behaviour::default())
        .await
        .map_err(|e| format!("the sketches' agent on 127.0.0.1:{SKETCH_AGENT_PORT}: {e}"))?;
    let mut floor = Floor::start(stack).await?;
    let mut sketches = vec![];
    for (_, route) in SKETCHES {
        sketches.push(Sketch::start(stack, &agent, route).await?);
    }
    let mut floor_heard = Heard::default();
    let mut sketches_heard = vec![Heard::default(); SKETCHES.len()];
    let mut round = async |k: u64, count: bool| -> Result<(), String> {
        tokio::time::sleep(SETTLE).await;
        let marks = floor.push(k).await?;
        if count {
            floor_heard.record(marks);
        }
        for (sketch, heard) in sketches.iter().zip(sketches_heard.iter_mut()) {
            tokio::time::sleep(SETTLE).await;
            let marks = sketch.push(&agent, k).await?;
            if count {
                heard.record(marks);
            }
        }
        Ok(())
    };
    round(0, false).await?;
    for k in 1..=changes as u64 {
        round(k, true).await?;
    }
    floor_heard.standins.push(floor.stop().await);
    for (sketch, heard) in sketches.iter().zip(sketches_heard.iter_mut()) {
        heard.standins.push(sketch.id.clone());
    }
    Ok((floor_heard, sketches_heard))
}

impl Marks {
    /// A push sent at `pushed` to `standin`'s route, answered at `answered`, whose note
    /// came as `note`.
    fn pushed(standin: &str, pushed: u64, answered: u64, note: &crate::stack::Received) -> Self {
        Self {
            standin: standin.to_owned(),
            changed: pushed,
            answered: Some(answered),
            sent: note.sent_ms,
            received: note.received_ms,
        }
    }
}

impl Heard {
    fn record(&mut self, marks: Marks) {
        self.working_ms
            .push(marks.received.saturating_sub(marks.changed));
        self.marks.push(marks);
    }
}

/// The floor's one execution: parked, rung by a push, told, parked again.
struct Floor<'a> {
    stack: &'a Stack,
    sfn: aws_sdk_sfn::Client,
    db: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
    id: String,
    /// The park token the last push used: the next push waits for another.
    parked: Option<String>,
}

impl<'a> Floor<'a> {
    async fn start(stack: &'a Stack) -> Result<Self, String> {
        let sfn = aws_sdk_sfn::Client::new(&stack.config);
        let id = unique("floor");
        sfn.start_execution()
            .state_machine_arn(stack.out("StateMachineArn"))
            .name(&id)
            .input(json!({"id": id}).to_string())
            .send()
            .await
            .map_err(|e| format!("the floor execution did not start: {e}"))?;
        Ok(Self {
            stack,
            sfn,
            db: aws_sdk_dynamodb::Client::new(&stack.config),
            sqs: aws_sdk_sqs::Client::new(&stack.config),
            id,
            parked: None,
        })
    }

    async fn token(&self) -> Option<String> {
        self.db
            .get_item()
            .table_name(self.stack.out("TableName"))
            .key("id", AttributeValue::S(self.id.clone()))
            .consistent_read(true)
            .send()
            .await
            .ok()
            .and_then(|o| o.item()?.get("token")?.as_s().ok().cloned())
    }

    /// Waits for a park token other than the one the last push used.
    async fn wait_parked(&mut self, seq: u64) -> Result<(), String> {
        let deadline = std::time::Instant::now() + SOON;
        loop {
            let now = self.token().await;
            if now.is_some() && now != self.parked {
                self.parked = now;
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(format!("the floor did not park again around push {seq}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Push `seq` once the floor is parked, timed to its note; returns once it is parked
    /// again, so that its next park does not run beside the sketches' pushes.
    async fn push(&mut self, seq: u64) -> Result<Marks, String> {
        if self.parked.is_none() {
            self.wait_parked(seq).await?;
        }
        // The parent reads its queue while the push is on its way, as the stand-in's
        // parent does (the stack's collector): read only once the push was answered, a
        // note that reached the queue before that answer would be timed late.
        let pushed = now_ms();
        let push = async {
            let status = self
                .stack
                .http
                .post(self.stack.api_url("ApiId", &format!("/floor/{}", self.id)))
                .json(&json!({"seq": seq, "text": format!("step {seq}")}))
                .send()
                .await
                .map_err(|e| format!("the floor push failed: {e}"))?
                .status();
            if !status.is_success() {
                return Err(format!("the floor push answered {status}"));
            }
            Ok(now_ms())
        };
        let queue = self.stack.out("QueueUrl");
        let (answered, note) = tokio::try_join!(push, floor_note(&self.sqs, queue, &self.id, seq))?;
        self.wait_parked(seq).await?;
        Ok(Marks::pushed(&self.id, pushed, answered, &note))
    }

    /// Stops the execution; its name, for the histories.
    async fn stop(self) -> String {
        let _ = self
            .sfn
            .stop_execution()
            .execution_arn(self.stack.execution_arn(&self.id))
            .send()
            .await;
        self.id
    }
}

/// One sketch's stand-in: a row naming the agent, a task of its own and the token's
/// digest, pushed at `/{route}/{id}`.
struct Sketch<'a> {
    stack: &'a Stack,
    route: &'static str,
    id: String,
    token: String,
    remote: String,
    sqs: aws_sdk_sqs::Client,
}

impl<'a> Sketch<'a> {
    /// The sketch's task at the agent and its row; a push with another token must be
    /// refused before any is timed.
    async fn start(
        stack: &'a Stack,
        agent: &TestAgent,
        route: &'static str,
    ) -> Result<Self, String> {
        let agent_url = format!("http://127.0.0.1:{SKETCH_AGENT_PORT}");
        let known = agent.task_ids();
        agent.script_turn(&[(INPUT_REQUIRED, "Which colour?")]);
        let first_turn = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
            "messageId": unique(route), "role": "ROLE_USER", "parts": [{"text": "Paint it"}]}}});
        stack
            .http
            .post(&agent_url)
            .header("A2A-Version", "1.0")
            .json(&first_turn)
            .send()
            .await
            .map_err(|e| format!("the {route} agent's first turn: {e}"))?;
        let remote = agent
            .task_ids()
            .into_iter()
            .find(|t| !known.contains(t))
            .ok_or(format!("the agent made no task for {route}"))?;
        let sketch = Self {
            stack,
            route,
            id: unique(route),
            token: unique("sketch-token"),
            remote,
            sqs: aws_sdk_sqs::Client::new(&stack.config),
        };
        let digest = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(sketch.token.as_bytes()))
        };
        aws_sdk_dynamodb::Client::new(&stack.config)
            .put_item()
            .table_name(stack.out("TableName"))
            .item("id", AttributeValue::S(sketch.id.clone()))
            .item("digest", AttributeValue::S(digest))
            .item("agent", AttributeValue::S(SKETCH_AGENT.into()))
            .item("remote", AttributeValue::S(sketch.remote.clone()))
            .item("heard", AttributeValue::N("0".into()))
            .send()
            .await
            .map_err(|e| format!("the {route} row: {e}"))?;
        let (refused, _) = sketch.send(&format!("{}-not", sketch.token)).await?;
        if refused != 403 {
            return Err(format!("/{route} answered {refused} to a wrong token"));
        }
        sketch.waits_during_a_hearing().await?;
        Ok(sketch)
    }

    /// With a hearing in flight (a lease on the row), a push with the right token is not
    /// heard: it is recorded on the row as pending and answered 202.
    async fn waits_during_a_hearing(&self) -> Result<(), String> {
        let db = aws_sdk_dynamodb::Client::new(&self.stack.config);
        let table = self.stack.out("TableName");
        let key = AttributeValue::S(self.id.clone());
        let lease = (now_ms() + 60_000).to_string();
        let route = self.route;
        db.update_item()
            .table_name(table)
            .key("id", key.clone())
            .update_expression("SET hearing_until = :until")
            .expression_attribute_values(":until", AttributeValue::N(lease))
            .send()
            .await
            .map_err(|e| format!("the {route} row's lease: {e}"))?;
        let (status, _) = self.send(&self.token).await?;
        let row = db
            .get_item()
            .table_name(table)
            .key("id", key.clone())
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("the {route} row: {e}"))?;
        let pending = row
            .item()
            .and_then(|r| r.get("pending"))
            .and_then(|p| p.as_n().ok())
            .cloned();
        if status != 202 || pending.as_deref() != Some("1") {
            return Err(format!(
                "/{route} during a hearing answered {status} with pending {pending:?}, not 202 and 1"
            ));
        }
        db.update_item()
            .table_name(table)
            .key("id", key)
            .update_expression("REMOVE hearing_until, pending")
            .send()
            .await
            .map_err(|e| format!("the {route} row's lease: {e}"))?;
        Ok(())
    }

    async fn send(&self, token: &str) -> Result<(reqwest::StatusCode, u64), String> {
        let status = self
            .stack
            .http
            .post(
                self.stack
                    .api_url("ApiId", &format!("/{}/{}", self.route, self.id)),
            )
            .header("X-A2A-Notification-Token", token)
            .json(&json!({"state": WORKING}))
            .send()
            .await
            .map_err(|e| format!("the {} push failed: {e}", self.route))?
            .status();
        Ok((status, now_ms()))
    }

    /// Round `k`: the agent's change, then its push, timed to its note (the row's
    /// `heard` starts at 0, so round k's note is number k + 1).
    async fn push(&self, agent: &TestAgent, k: u64) -> Result<Marks, String> {
        agent
            .change(&self.remote, WORKING, &format!("step {k}"), false)
            .await;
        let pushed = now_ms();
        let answered = async {
            match self.send(&self.token).await? {
                (status, at) if status == 204 => Ok(at),
                (status, _) => Err(format!("the {} push answered {status}", self.route)),
            }
        };
        let queue = self.stack.out("QueueUrl");
        let (answered, note) =
            tokio::try_join!(answered, floor_note(&self.sqs, queue, &self.id, k + 1))?;
        Ok(Marks::pushed(&self.id, pushed, answered, &note))
    }
}

/// The floor's note `seq`, read from its queue as it arrives.
async fn floor_note(
    sqs: &aws_sdk_sqs::Client,
    queue: &str,
    id: &str,
    seq: u64,
) -> Result<crate::stack::Received, String> {
    let deadline = std::time::Instant::now() + SOON;
    loop {
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "note {seq} of {id} did not reach the floor's queue"
            ));
        }
        let mut notes = crate::stack::take_timed(sqs, queue).await?.into_iter();
        if let Some(note) =
            notes.find(|n| n.note["task_id"] == json!(id) && n.note["seq"] == json!(seq))
        {
            return Ok(note);
        }
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
