//! The floor, the product's push and the push sketches (D77), heard in rounds on two
//! stacks: the floor's (bench/floor.yaml), which also serves the sketches' routes, and
//! the stand-in's.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use super::latency::{Heard, Marks, SETTLE, Watched, Windows};
use crate::agent::{Behaviour, TestAgent};
use crate::e2e::{INPUT_REQUIRED, SOON, WORKING};
use crate::stack::{Stack, now_ms, unique};

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

/// The agent the sketches ask GetTask of (bench/floor.yaml's `AGENTS` names this port).
pub const SKETCH_AGENT_PORT: u16 = 27195;

/// The floor, the product's push and the sketches, heard in rounds: each round pushes the
/// floor once, makes one change of the product's push stand-in, then pushes each sketch
/// once, so that whatever the test bed does at a moment falls on all of them alike. Each
/// waits `SETTLE` after the last one's note (and the product's, after its park), so that
/// what LocalStack does after one (an asynchronous invoke's bookkeeping, the floor's next
/// park) does not fall on the next. Round 0 warms every function and is not counted;
/// `changes` rounds follow. Returns the floor's, the product's and each sketch's (in
/// `SKETCHES`' order).
pub async fn in_rounds(
    floor_stack: &Stack,
    stack: &Stack,
    push: (&'static str, u16),
    changes: usize,
) -> Result<Rounds, String> {
    let agent = TestAgent::try_start(SKETCH_AGENT_PORT, Behaviour::default())
        .await
        .map_err(|e| format!("the sketches' agent on 127.0.0.1:{SKETCH_AGENT_PORT}: {e}"))?;
    let mut floor = Floor::start(floor_stack).await?;
    let mut sketches = vec![];
    for (_, route) in SKETCHES {
        sketches.push(Sketch::start(floor_stack, &agent, route).await?);
    }
    let mut product = Watched::start(stack, push, "push", Windows::PerChange).await?;
    let mut floor_heard = Heard::default();
    let mut sketches_heard = vec![Heard::default(); SKETCHES.len()];
    let mut round = async |k: u64, count: bool| -> Result<(), String> {
        tokio::time::sleep(SETTLE).await;
        let marks = floor.push(k).await?;
        tokio::time::sleep(SETTLE).await;
        if count {
            floor_heard.record(marks);
            product.change().await?;
        } else {
            product.warm().await?;
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
    Ok(Rounds {
        floor: floor_heard,
        push: product.finish().await?,
        sketches: sketches_heard,
    })
}

/// What the rounds heard.
pub struct Rounds {
    pub floor: Heard,
    pub push: Heard,
    /// In `SKETCHES`' order.
    pub sketches: Vec<Heard>,
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
