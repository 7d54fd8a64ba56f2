//! The parent's control API over the in-memory ports: routing, every refusal and its
//! status, idempotent starts, an id whose execution outlived its row, replies named and
//! unnamed, status across rolls, the note log's pages, and no secret in any answer.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use serde_json::{Value, json};
use standin::agents::AgentsConfig;
use standin::control::ExecutionError;
use standin::control::memory::MemoryExecutions;
use standin::control::{Answer, Call, Control, NOTES_PAGE};
use standin::doorbell::memory::MemoryDoorbell;
use standin::push::token::PushToken;
use standin::registry::Catalog;
use standin::registry::memory::MemoryRegistry;
use standin::row::RowStore;
use standin::row::memory::MemoryStore;
use standin::row::{Row, Watch, WatchMode};
use standin::state::remote_out;
use standin_wire::TaskState;
use standin_wire::openapi::{check_response, operations};

struct World {
    store: MemoryStore,
    bell: MemoryDoorbell,
    executions: MemoryExecutions,
    agents: Catalog,
    registry: MemoryRegistry,
    blobs: standin::artifacts::memory::MemoryBlobs,
}

impl World {
    fn new() -> Self {
        let stack = AgentsConfig::parse(
            r#"{"agents":[{"id":"writer","url":"http://127.0.0.1:9"},{"id":"critic","url":"http://127.0.0.1:9"}]}"#,
        )
        .unwrap();
        let registry = MemoryRegistry::default();
        Self {
            store: MemoryStore::new(),
            bell: MemoryDoorbell::new(),
            executions: MemoryExecutions::new(),
            agents: Catalog::new(stack, Some(Box::new(registry.clone()))),
            registry,
            blobs: Default::default(),
        }
    }

    /// Every answer is also held to the control API's document (`api/control.openapi.json`):
    /// its status is documented for the call's operation and its body fits the schema.
    async fn call(&self, call: Call<'_>) -> Answer {
        let operation = match &call {
            Call::Start(_) => Some(("POST", "/standins".to_owned())),
            Call::Reply { task_id, .. } => Some(("POST", format!("/standins/{task_id}/reply"))),
            Call::Cancel { task_id, .. } => Some(("POST", format!("/standins/{task_id}/cancel"))),
            Call::Status { task_id } => Some(("GET", format!("/standins/{task_id}"))),
            Call::Notes { task_id, .. } => Some(("GET", format!("/standins/{task_id}/notes"))),
            Call::Artifacts { task_id, .. } => {
                Some(("GET", format!("/standins/{task_id}/artifacts")))
            }
            Call::Artifact {
                task_id,
                artifact_id,
            } => Some((
                "GET",
                format!("/standins/{task_id}/artifacts/{artifact_id}"),
            )),
            Call::List { .. } => Some(("GET", "/standins".to_owned())),
            Call::AgentPut { id, .. } => Some(("PUT", format!("/agents/{id}"))),
            Call::AgentShow { id } => Some(("GET", format!("/agents/{id}"))),
            Call::AgentRemove { id } => Some(("DELETE", format!("/agents/{id}"))),
            Call::AgentList { .. } => Some(("GET", "/agents".to_owned())),
            Call::NoRoute { .. } => None,
        };
        let answer = Control {
            store: &self.store,
            bell: &self.bell,
            executions: &self.executions,
            agents: &self.agents,
            artifacts: Some(&self.blobs),
            max_standin_secs: standin::steps::next::MAX_STANDIN_SECS,
        }
        .handle(call)
        .await;
        if let Some((method, path)) = operation {
            check_response(method, &path, answer.status, &answer.body)
                .unwrap_or_else(|err| panic!("{err}: {}", answer.body));
        }
        answer
    }

    async fn start(&self, body: Value) -> Answer {
        self.call(Call::Start(&body)).await
    }
}

fn error(answer: &Answer) -> &str {
    answer.body["error"].as_str().unwrap_or_default()
}

/// The router over a fresh world (leaked: a router's state lives as long as the process).
fn router() -> (&'static World, axum::Router) {
    let w: &'static World = Box::leak(Box::new(World::new()));
    let router = standin::control::http::router(Control {
        store: &w.store,
        bell: &w.bell,
        executions: &w.executions,
        agents: &w.agents,
        artifacts: Some(&w.blobs),
        max_standin_secs: standin::steps::next::MAX_STANDIN_SECS,
    });
    (w, router)
}

/// A request through the router: its status and JSON body.
async fn request(router: &axum::Router, method: &str, path: &str, body: Value) -> (u16, Value) {
    use tower::ServiceExt;
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn requests_are_routed_by_method_path_and_parameter() {
    let (w, router) = router();
    let mut row = Row::new("a", "writer");
    row.remote_task_id = Some("r".into());
    w.store.create(&row).await.unwrap();
    let (status, started) = request(
        &router,
        "POST",
        "/standins",
        json!({"agent": "writer", "message": "go", "task_id": "b"}),
    )
    .await;
    assert_eq!(
        (status, &started["task_id"]),
        (200, &json!("b")),
        "{started}"
    );
    let (status, replied) = request(
        &router,
        "POST",
        "/standins/a/reply",
        json!({"text": "more"}),
    )
    .await;
    assert_eq!(status, 202, "{replied}");
    assert_eq!(w.store.snapshot("a").unwrap().pending.replies, ["more"]);
    let (status, notes) = request(&router, "GET", "/standins/a/notes?after=0", json!(null)).await;
    assert_eq!(
        (status, notes["task_id"].as_str()),
        (200, Some("a")),
        "{notes}"
    );
    let (status, cancelled) = request(
        &router,
        "POST",
        "/standins/a/cancel",
        json!({"reason": "enough"}),
    )
    .await;
    assert_eq!(status, 202, "{cancelled}");
    assert!(w.store.snapshot("a").unwrap().pending.cancel.is_some());
    let (status, listed) = request(&router, "GET", "/standins", json!(null)).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["standins"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    let (status, _) = request(&router, "GET", "/standins/notes", json!(null)).await;
    assert_eq!(
        status, 404,
        "a stand-in may be called notes: its status, not found"
    );
    let (status, refused) = request(&router, "DELETE", "/standins/a", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route DELETE /standins/a"))
    );
    let (status, refused) = request(&router, "POST", "/standins/", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route POST /standins/")),
        "the path as it came"
    );
    let (status, refused) = request(&router, "GET", "/elsewhere", json!(null)).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("no route GET /elsewhere"))
    );
}

/// The document and the router agree: every documented operation reaches its handler.
#[tokio::test]
async fn every_operation_of_the_document_is_routed() {
    let (_, router) = router();
    let ops = operations().unwrap();
    assert_eq!(ops.len(), 12);
    for op in ops {
        let method = op.method.to_ascii_uppercase();
        let path = op
            .template
            .replace("{task_id}", "job-1")
            .replace("{agent_id}", "agent-1")
            .replace("{artifact_id}", "report");
        let (status, body) = request(&router, &method, &path, json!({})).await;
        assert!(
            !body["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("no route")),
            "{method} {path}: {status} {body}"
        );
    }
}

#[tokio::test]
async fn an_unknown_route_is_a_404_naming_it() {
    let w = World::new();
    let answer = w
        .call(Call::NoRoute {
            method: "PUT",
            path: "/x",
        })
        .await;
    assert_eq!((answer.status, error(&answer)), (404, "no route PUT /x"));
}

#[tokio::test]
async fn a_start_creates_the_row_and_the_execution_with_the_first_turn() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "Write it", "task_id": "job-1"}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["task_id"], "job-1");
    assert_eq!(answer.body["execution_arn"], w.executions.arn_of("job-1"));
    let row = w.store.snapshot("job-1").expect("the row");
    assert_eq!((row.agent.as_str(), row.closed), ("writer", false));
    assert!(row.created_at.is_some());
    let input: Value = serde_json::from_str(&w.executions.input_of("job-1").unwrap()).unwrap();
    assert_eq!(input["message"], "Write it");
    assert_eq!(input["agent"], "writer");
}

/// A start may ask for a deadline, at most the stack's; past it, or not a whole number of
/// seconds, it is refused naming the field and nothing starts.
#[tokio::test]
async fn a_start_asks_a_deadline_within_the_stacks() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "due", "deadline_secs": 90}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let input: Value = serde_json::from_str(&w.executions.input_of("due").unwrap()).unwrap();
    assert_eq!(input["deadline_secs"], 90);
    let most = standin::steps::next::MAX_STANDIN_SECS;
    for bad in [json!(most + 1), json!(0), json!("90")] {
        let answer = w
            .start(
                json!({"agent": "writer", "message": "m", "task_id": "late", "deadline_secs": bad}),
            )
            .await;
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
        assert!(
            error(&answer).starts_with("body.deadline_secs"),
            "{}",
            answer.body
        );
    }
    assert!(w.executions.input_of("late").is_none(), "nothing started");
}

#[tokio::test]
async fn a_start_without_an_id_gets_one() {
    let w = World::new();
    let answer = w
        .start(json!({"agent": "writer", "message": "Write it"}))
        .await;
    assert_eq!(answer.status, 200);
    let id = answer.body["task_id"].as_str().unwrap();
    assert!(id.starts_with("si-") && id.len() == 27, "{id}");
    assert!(w.store.snapshot(id).is_some());
}

#[tokio::test]
async fn every_bad_start_is_a_400_saying_what_to_fix() {
    let w = World::new();
    let long = "x".repeat(32 * 1024 + 1);
    let cases = [
        (json!({"message": "m"}), "body.agent is required"),
        (
            json!({"agent": 7, "message": "m"}),
            "body.agent is required",
        ),
        (json!({"agent": "writer"}), "body.message is required"),
        (
            json!({"agent": "writer", "message": ""}),
            "body.message is required",
        ),
        (
            json!({"agent": "writer", "message": long}),
            "body.message is 32769 bytes; the limit is 32768",
        ),
        (
            json!({"agent": "writer", "message": "m", "task_id": "a__1"}),
            r#"task_id must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        (
            json!({"agent": "writer", "message": "m", "task_id": "a b"}),
            r#"task_id must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        // Not a string: refused, where it used to be ignored (and an id made up).
        (
            json!({"agent": "writer", "message": "m", "task_id": 42}),
            r#"task_id must be 1-64 characters of [A-Za-z0-9_-], without "__" (kept for rolled executions)"#,
        ),
        // Whoever may start stand-ins must not have the stack answer any task token.
        (
            json!({"agent": "writer", "message": "m", "parent_task_token": "tok-123"}),
            standin_wire::NO_TOKEN_HERE,
        ),
    ];
    for (body, expected) in cases {
        let answer = w.start(body.clone()).await;
        assert_eq!((answer.status, error(&answer)), (400, expected), "{body}");
    }
    let unknown = w.start(json!({"agent": "painter", "message": "m"})).await;
    assert_eq!(unknown.status, 400);
    assert_eq!(error(&unknown), r#"unknown agent "painter""#);
    assert_eq!(unknown.body["agents"], json!(["writer", "critic"]));
    // The agent is checked first: whatever else is wrong, the known ones are named.
    let unknown = w
        .start(json!({"agent": "painter", "task_id": "a__1"}))
        .await;
    assert_eq!(error(&unknown), r#"unknown agent "painter""#);
    assert_eq!(w.executions.started(), 0, "nothing started");
}

#[tokio::test]
async fn starting_the_same_stand_in_twice_answers_the_same_execution() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "Write it", "task_id": "twice"});
    let first = w.start(body.clone()).await;
    let second = w.start(body).await;
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.body, second.body);
    assert_eq!(w.executions.started(), 1);
}

#[tokio::test]
async fn a_start_for_another_agent_or_an_ended_stand_in_is_a_409() {
    let w = World::new();
    w.start(json!({"agent": "writer", "message": "m", "task_id": "taken"}))
        .await;
    let other = w
        .start(json!({"agent": "critic", "message": "m", "task_id": "taken"}))
        .await;
    assert_eq!(
        (other.status, error(&other)),
        (409, "stand-in taken exists for another agent")
    );
    w.store.close("taken", None).await.unwrap();
    let again = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "taken"}))
        .await;
    assert_eq!(again.status, 409);
    assert!(
        error(&again).contains("has ended; its notes stay readable"),
        "{}",
        again.body
    );
}

#[tokio::test]
async fn an_id_whose_execution_outlived_its_row_is_refused_and_closed() {
    let w = World::new();
    // An earlier stand-in of this id ran and ended; its row expired since.
    w.executions.add("old", "SUCCEEDED");
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "old"}))
        .await;
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert!(error(&answer).contains("was used by an earlier stand-in that has ended"));
    assert!(
        w.store.snapshot("old").unwrap().closed,
        "the id answers ended from now on"
    );
}

#[tokio::test]
async fn a_start_step_functions_cannot_answer_about_is_a_503_and_closes_nothing() {
    let w = World::new();
    w.executions.add("busy", "RUNNING");
    w.executions
        .fail_status(Some(ExecutionError::Backend("throttled".into())));
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "busy"}))
        .await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(!w.store.snapshot("busy").unwrap().closed);
}

#[tokio::test]
async fn a_start_retried_after_a_503_for_an_ended_id_is_refused_not_answered_200() {
    let w = World::new();
    w.executions.add("again", "SUCCEEDED");
    w.executions
        .fail_status(Some(ExecutionError::Backend("throttled".into())));
    let body = json!({"agent": "writer", "message": "m", "task_id": "again"});
    assert_eq!(w.start(body.clone()).await.status, 503);
    w.executions.fail_status(None);
    let retry = w.start(body).await;
    assert_eq!(retry.status, 409, "{}", retry.body);
    assert!(
        w.store.snapshot("again").unwrap().closed,
        "nothing runs: the id has ended"
    );
}

#[tokio::test]
async fn starting_a_rolled_stand_in_again_answers_its_running_execution() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "rolled"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    // It rolled: the first execution succeeded, its successor runs.
    w.executions.add("rolled", "SUCCEEDED");
    w.executions.add("rolled__1", "RUNNING");
    w.store.roll("rolled", 1, 1, "lease-1", None).await.unwrap();
    let again = w.start(body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        again.body["execution_arn"],
        w.executions.arn_of("rolled__1")
    );
}

/// Issue 24, 2: one DescribeExecution that fails (a throttle) must not make the older
/// generation's SUCCEEDED the answer, and a start repeated then must not close the row
/// of the generation still running.
#[tokio::test]
async fn a_repeated_start_that_cannot_see_the_newest_generation_closes_nothing() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "rolling"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("rolling", "SUCCEEDED");
    w.executions.add("rolling__1", "RUNNING");
    w.store
        .roll("rolling", 1, 1, "lease-1", None)
        .await
        .unwrap();
    w.executions.fail_status_of("rolling__1");
    let again = w.start(body).await;
    assert_eq!(again.status, 503, "unknown is not ended: {}", again.body);
    assert!(
        !w.store.snapshot("rolling").unwrap().closed,
        "the live generation's row stays open"
    );
    let status = w.call(Call::Status { task_id: "rolling" }).await;
    assert_eq!(
        status.body["execution_arn"],
        w.executions.arn_of("rolling__1"),
        "the generation it could not ask about, not the older one"
    );
    assert_eq!(status.body["execution_status"], Value::Null);
}

/// A foreign execution named like the next generation (anyone allowed StartExecution
/// may make one) is not taken for the newest: the row says which generation is live, so
/// a repeated start answers the running one and closes nothing.
#[tokio::test]
async fn a_squatted_successor_name_is_not_the_newest_generation() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "squatted"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("squatted__1", "FAILED");
    let again = w.start(body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["execution_arn"], w.executions.arn_of("squatted"));
    assert!(!w.store.snapshot("squatted").unwrap().closed);
}

#[tokio::test]
async fn a_repeated_start_closes_only_behind_a_terminal_newest_generation() {
    let w = World::new();
    let body = json!({"agent": "writer", "message": "m", "task_id": "redrive"});
    assert_eq!(w.start(body.clone()).await.status, 200);
    w.executions.add("redrive", "PENDING_REDRIVE");
    let again = w.start(body.clone()).await;
    assert_eq!(again.status, 503, "not terminal, not ended: {}", again.body);
    assert!(!w.store.snapshot("redrive").unwrap().closed);
    w.executions.add("redrive", "ABORTED");
    let ended = w.start(body).await;
    assert_eq!(ended.status, 409, "{}", ended.body);
    assert!(w.store.snapshot("redrive").unwrap().closed);
}

#[tokio::test]
async fn a_failure_on_our_side_is_a_503_to_retry() {
    let w = World::new();
    w.executions.fail_start(Some(ExecutionError::Backend(
        "Step Functions is down".into(),
    )));
    let answer = w
        .start(json!({"agent": "writer", "message": "m", "task_id": "down"}))
        .await;
    assert_eq!(
        (answer.status, error(&answer)),
        (503, "Step Functions did not answer; try again")
    );
}

#[tokio::test]
async fn a_status_without_any_execution_names_the_first_and_no_status() {
    let w = World::new();
    parked_row(&w, "fresh").await;
    let answer = w.call(Call::Status { task_id: "fresh" }).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["execution_arn"], w.executions.arn_of("fresh"));
    assert_eq!(answer.body["execution_status"], Value::Null);
}

async fn parked_row(w: &World, id: &str) -> PushToken {
    let token = PushToken::generate();
    let mut row = Row::new(id, "writer");
    row.remote_task_id = Some("remote-1".into());
    row.watch = Some(Watch {
        mode: WatchMode::Push,
        config_id: Some("c".into()),
        token_digest: Some(token.digest()),
    });
    row.last = Some(remote_out(
        "remote-1",
        TaskState::InputRequired,
        "Which colour?",
    ));
    w.store.create(&row).await.unwrap();
    w.store.park(id, 1, "park-token-1").await.unwrap();
    token
}

#[tokio::test]
async fn a_reply_is_recorded_rung_and_accepted() {
    let w = World::new();
    parked_row(&w, "r").await;
    let body = json!({"text": "blue", "reply_id": "parent-1"});
    let answer = w
        .call(Call::Reply {
            task_id: "r",
            body: &body,
        })
        .await;
    assert_eq!(answer.status, 202);
    assert_eq!(answer.body, json!({"task_id": "r", "accepted": true}));
    assert_eq!(w.bell.rings(), ["park-token-1"]);
    let row = w.store.snapshot("r").unwrap();
    assert_eq!(row.pending.replies.len(), 1);
    assert_eq!(row.reply_ids, ["parent-1"]);
}

#[tokio::test]
async fn an_unnamed_reply_gets_a_name_so_the_stores_retries_are_harmless() {
    let w = World::new();
    parked_row(&w, "r").await;
    let body = json!({"text": "blue"});
    w.call(Call::Reply {
        task_id: "r",
        body: &body,
    })
    .await;
    let row = w.store.snapshot("r").unwrap();
    assert!(row.reply_ids[0].starts_with("r-"), "{:?}", row.reply_ids);
}

#[tokio::test]
async fn every_bad_reply_or_cancel_is_refused_with_its_status() {
    let w = World::new();
    parked_row(&w, "r").await;
    let long = "x".repeat(32 * 1024 + 1);
    let reply_cases = [
        (json!({}), 400, "body.text is required".to_owned()),
        (json!({"text": ""}), 400, "body.text is required".to_owned()),
        (
            json!({"text": long}),
            400,
            "body.text is 32769 bytes; the limit is 32768".to_owned(),
        ),
        (
            json!({"text": "t", "reply_id": "has space"}),
            400,
            "body.reply_id must be 1 to 128 printable ASCII characters without spaces".to_owned(),
        ),
        (
            json!({"text": "t", "reply_id": 5}),
            400,
            "body.reply_id must be 1 to 128 printable ASCII characters without spaces".to_owned(),
        ),
    ];
    for (body, status, expected) in reply_cases {
        let answer = w
            .call(Call::Reply {
                task_id: "r",
                body: &body,
            })
            .await;
        assert_eq!(
            (answer.status, error(&answer)),
            (status, expected.as_str()),
            "{body}"
        );
    }
    let body = json!({"reason": "x".repeat(4097)});
    let answer = w
        .call(Call::Cancel {
            task_id: "r",
            body: &body,
        })
        .await;
    assert_eq!(
        (answer.status, error(&answer)),
        (400, "body.reason is 4097 bytes; the limit is 4096")
    );
    let body = json!({"reason": ["not", "text"]});
    let answer = w
        .call(Call::Cancel {
            task_id: "r",
            body: &body,
        })
        .await;
    assert_eq!(
        (answer.status, error(&answer)),
        (400, "body.reason must be a string")
    );
    let body = json!({"text": "t"});
    let answer = w
        .call(Call::Reply {
            task_id: "nobody",
            body: &body,
        })
        .await;
    assert_eq!((answer.status, error(&answer)), (404, "no stand-in nobody"));
    assert!(w.bell.rings().is_empty(), "nothing refused was rung");
}

#[tokio::test]
async fn replies_past_the_queue_are_a_429_and_an_ended_stand_in_a_409() {
    let w = World::new();
    parked_row(&w, "r").await;
    let mut statuses = vec![];
    for i in 0..=standin::row::MAX_QUEUED_REPLIES {
        let body = json!({"text": format!("reply {i}")});
        statuses.push(
            w.call(Call::Reply {
                task_id: "r",
                body: &body,
            })
            .await
            .status,
        );
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 202).count(),
        standin::row::MAX_QUEUED_REPLIES
    );
    assert_eq!(statuses.last(), Some(&429));
    w.store.close("r", None).await.unwrap();
    let body = json!({});
    let answer = w
        .call(Call::Cancel {
            task_id: "r",
            body: &body,
        })
        .await;
    assert_eq!(
        (answer.status, error(&answer)),
        (409, "stand-in r has ended")
    );
}

#[tokio::test]
async fn a_cancel_without_a_reason_says_the_parent_cancelled() {
    let w = World::new();
    parked_row(&w, "c").await;
    let body = json!({});
    let answer = w
        .call(Call::Cancel {
            task_id: "c",
            body: &body,
        })
        .await;
    assert_eq!(answer.status, 202);
    let row = w.store.snapshot("c").unwrap();
    assert_eq!(
        row.pending.cancel.as_deref(),
        Some("cancelled by the parent")
    );
}

#[tokio::test]
async fn status_shows_the_newest_execution_and_no_secret() {
    let w = World::new();
    let token = parked_row(&w, "s").await;
    w.executions.add("s", "SUCCEEDED");
    w.executions.add("s__1", "SUCCEEDED");
    w.executions.add("s__2", "RUNNING");
    // Two rolls, as the row records them (parked_row's park is number 1).
    w.store.roll("s", 2, 1, "lease-1", None).await.unwrap();
    w.store
        .roll("s", 3, 2, "lease-2", Some("lease-1"))
        .await
        .unwrap();
    w.store.park("s", 4, "park-token-1").await.unwrap();
    // A name that looks like a later generation is nobody's: the row says which is live.
    w.executions.add("s__3", "FAILED");
    let answer = w.call(Call::Status { task_id: "s" }).await;
    assert_eq!(answer.status, 200);
    let b = &answer.body;
    assert_eq!(b["execution_arn"], w.executions.arn_of("s__2"));
    assert_eq!(b["execution_status"], "RUNNING");
    assert_eq!(b["parked"], true);
    assert_eq!(b["watch"], "push");
    assert_eq!(b["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        b["pending"],
        json!({"cancel": false, "replies": 0, "push": false})
    );
    let text = b.to_string();
    for secret in [token.expose(), token.digest().as_str(), "park-token-1"] {
        assert!(!text.contains(secret), "{text}");
    }
    let missing = w.call(Call::Status { task_id: "nobody" }).await;
    assert_eq!(
        (missing.status, error(&missing)),
        (404, "no stand-in nobody")
    );
}

#[tokio::test]
async fn status_keeps_the_arn_when_step_functions_cannot_be_asked() {
    let w = World::new();
    parked_row(&w, "s").await;
    w.executions
        .fail_status(Some(ExecutionError::Backend("down".into())));
    let answer = w.call(Call::Status { task_id: "s" }).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["execution_arn"], w.executions.arn_of("s"));
    assert_eq!(answer.body["execution_status"], Value::Null);
}

#[tokio::test]
async fn the_note_log_pages_in_order_and_refuses_a_bad_after() {
    let w = World::new();
    parked_row(&w, "n").await;
    for k in 0..(NOTES_PAGE + 5) {
        let out = remote_out("remote-1", TaskState::Working, &format!("step {k}"));
        w.store
            .apply("n", &out, &standin::row::Guard::Open)
            .await
            .unwrap();
    }
    let first = w
        .call(Call::Notes {
            task_id: "n",
            after: None,
        })
        .await;
    assert_eq!(first.status, 200);
    let notes = first.body["notes"].as_array().unwrap();
    assert_eq!(notes.len(), NOTES_PAGE as usize);
    assert_eq!(first.body["next"], json!(NOTES_PAGE));
    let after = NOTES_PAGE.to_string();
    let second = w
        .call(Call::Notes {
            task_id: "n",
            after: Some(&after),
        })
        .await;
    let seqs: Vec<u64> = second.body["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (u64::from(NOTES_PAGE) + 1..=u64::from(NOTES_PAGE) + 5).collect::<Vec<_>>()
    );
    assert_eq!(second.body["next"], Value::Null);
    let bad = w
        .call(Call::Notes {
            task_id: "n",
            after: Some("-1"),
        })
        .await;
    assert_eq!(bad.status, 400);
    let missing = w
        .call(Call::Notes {
            task_id: "nobody",
            after: None,
        })
        .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn the_list_pages_through_the_stand_ins() {
    let w = World::new();
    for i in 0..55 {
        w.store
            .create(&Row::new(format!("l-{i:02}"), "writer"))
            .await
            .unwrap();
    }
    let first = w.call(Call::List { after: None }).await;
    assert_eq!(first.body["standins"].as_array().unwrap().len(), 50);
    let next = first.body["next"].as_str().unwrap().to_owned();
    let second = w.call(Call::List { after: Some(&next) }).await;
    assert_eq!(second.body["standins"].as_array().unwrap().len(), 5);
    assert_eq!(second.body["next"], Value::Null);
}

/// The registry through the API: an agent put is listed, shown and takes a stand-in, its
/// entry snapshotted on the row; the stack's agents are not the API's to change.
#[tokio::test]
async fn an_agent_put_through_the_api_takes_a_stand_in_and_keeps_its_entry() {
    let w = World::new();
    let body = json!({"url": "https://added.example", "updates": "follow"});
    let put = w
        .call(Call::AgentPut {
            id: "added",
            body: &body,
        })
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["source"], "registry");
    assert_eq!(put.body["agent"]["url"], "https://added.example");
    let shown = w.call(Call::AgentShow { id: "added" }).await;
    assert_eq!(
        (shown.status, &shown.body["agent"]),
        (200, &put.body["agent"])
    );
    let listed = w.call(Call::AgentList { after: None }).await;
    let ids: Vec<(&str, &str)> = listed.body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"]["id"].as_str().unwrap(),
                a["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("writer", "stack"),
            ("critic", "stack"),
            ("added", "registry")
        ]
    );
    let started = w
        .start(json!({"agent": "added", "message": "hi", "task_id": "si-added"}))
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let row = w.store.get("si-added").await.unwrap().expect("a row");
    let kept = row.agent_entry.expect("the row keeps the entry");
    assert!(kept.contains("https://added.example"), "{kept}");
    // An edit changes new stand-ins only: the row's snapshot stays.
    let edit = json!({"url": "https://moved.example"});
    assert_eq!(
        w.call(Call::AgentPut {
            id: "added",
            body: &edit
        })
        .await
        .status,
        200
    );
    let row = w.store.get("si-added").await.unwrap().expect("a row");
    assert!(row.agent_entry.unwrap().contains("https://added.example"));
    let removed = w.call(Call::AgentRemove { id: "added" }).await;
    assert_eq!(
        (removed.status, removed.body["removed"].as_bool()),
        (200, Some(true))
    );
    assert_eq!(w.registry.entry("added"), None);
    assert_eq!(w.call(Call::AgentShow { id: "added" }).await.status, 404);
    assert_eq!(w.call(Call::AgentRemove { id: "added" }).await.status, 404);
    let unknown = w
        .start(json!({"agent": "added", "message": "hi", "task_id": "si-gone"}))
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
}

#[tokio::test]
async fn a_bad_agent_entry_is_refused_naming_its_field_and_the_stacks_are_kept() {
    let w = World::new();
    let bad = json!({"url": "ftp://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "x",
            body: &bad,
        })
        .await;
    assert_eq!(
        (refused.status, refused.body["field"].as_str()),
        (400, Some("url"))
    );
    assert!(error(&refused).starts_with("url: "), "{}", refused.body);
    let wrong_id = json!({"id": "y", "url": "http://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "x",
            body: &wrong_id,
        })
        .await;
    assert_eq!(
        refused.body["field"].as_str(),
        Some("id"),
        "{}",
        refused.body
    );
    let bad_path = json!({"url": "http://h"});
    let refused = w
        .call(Call::AgentPut {
            id: "a b",
            body: &bad_path,
        })
        .await;
    assert_eq!(
        refused.body["field"].as_str(),
        Some("id"),
        "{}",
        refused.body
    );
    assert_eq!(w.registry.entry("x"), None);
    let taken = w
        .call(Call::AgentPut {
            id: "writer",
            body: &bad_path,
        })
        .await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(error(&taken).contains("Agents parameter"), "{}", taken.body);
    assert_eq!(w.call(Call::AgentRemove { id: "writer" }).await.status, 409);
    let shown = w.call(Call::AgentShow { id: "writer" }).await;
    assert_eq!(shown.body["source"], "stack");
}

/// The confused deputy through `PUT /agents`: entries that would have the functions
/// sign a call to SQS or S3, or read a card off SQS, are refused naming the field, and
/// nothing is stored.
#[tokio::test]
async fn an_agent_entry_on_an_aws_api_is_refused_by_put_agents() {
    let mut w = World::new();
    w.agents = Catalog::new(
        AgentsConfig::parse(r#"{"agents":[]}"#).unwrap(),
        Some(Box::new(w.registry.clone())),
    )
    .with_rules(standin::agent_rules::EntryRules {
        region: Some("us-east-1".into()),
        role_pattern: Some("arn:aws:iam::123456789012:role/standin-agent-*".into()),
        ..Default::default()
    });
    let role = "arn:aws:iam::123456789012:role/standin-agent-a";
    let queue = "https://sqs.us-east-1.amazonaws.com/123456789012/standin-parent.fifo";
    for (entry, field) in [
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=SendMessage&MessageBody=forged"),
                   "auth": {"type": "sigv4", "service": "sqs", "role_arn": role}}),
            "auth.service",
        ),
        (
            json!({"url": "https://sqs.us-east-1.amazonaws.com",
                   "card_url": format!("{queue}?Action=ReceiveMessage&VisibilityTimeout=43200"),
                   "auth": {"type": "sigv4", "role_arn": role}}),
            "url",
        ),
        (
            json!({"url": "https://s3.us-east-1.amazonaws.com",
                   "auth": {"type": "sigv4", "service": "s3", "role_arn": role}}),
            "auth.service",
        ),
        (
            json!({"url": "https://agent.example",
                   "card_url": format!("{queue}?Action=SendMessage"),
                   "allowed_origins": ["https://sqs.us-east-1.amazonaws.com"]}),
            "card_url",
        ),
        (
            json!({"url": "https://bedrock-agentcore.us-east-1.amazonaws.com",
                   "auth": {"type": "sigv4", "service": "bedrock-agentcore"}}),
            "auth.role_arn",
        ),
    ] {
        let refused = w
            .call(Call::AgentPut {
                id: "deputy",
                body: &entry,
            })
            .await;
        assert_eq!(
            (refused.status, refused.body["field"].as_str()),
            (400, Some(field)),
            "{entry}: {}",
            refused.body
        );
        assert_eq!(w.registry.entry("deputy"), None, "{entry}");
    }
    let agentcore = json!({"url": "https://bedrock-agentcore.us-east-1.amazonaws.com/runtimes/r/invocations",
                           "auth": {"type": "sigv4", "role_arn": role}});
    let taken = w
        .call(Call::AgentPut {
            id: "runtime",
            body: &agentcore,
        })
        .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
}

#[tokio::test]
async fn the_agent_routes_are_the_documents() {
    let (_w, router) = router();
    let (status, body) = request(&router, "PUT", "/agents/r1", json!({"url": "http://h"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = request(&router, "GET", "/agents/r1", Value::Null).await;
    assert_eq!((status, body["agent"]["id"].as_str()), (200, Some("r1")));
    let (status, body) = request(&router, "GET", "/agents", Value::Null).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = request(&router, "DELETE", "/agents/r1", Value::Null).await;
    assert_eq!(status, 200);
    let (status, body) = request(&router, "POST", "/agents/r1", Value::Null).await;
    assert_eq!(status, 404, "{body}");
}

/// A manifest whose artifacts together pass a page is answered a page at a time, each
/// under Lambda's 6 MB, every artifact once and in order; an `after` that names no
/// artifact is refused, naming it.
#[tokio::test]
async fn the_artifacts_come_a_page_at_a_time_each_under_6_mb() {
    use standin::artifacts::Blobs;
    let w = World::new();
    w.start(json!({"task_id": "si-pages", "agent": "writer", "message": "go"}))
        .await;
    let text = "t".repeat(7000);
    let artifacts: Vec<Value> = (0..3)
        .map(|a| {
            let parts: Vec<Value> = (0..150)
                .map(|n| {
                    json!({"view": {"kind": "text", "size": 7000, "sha256": format!("{a}-{n}"),
                                         "text": text, "stored": true},
                                "key": format!("si-pages/parts/{a}-{n}")})
                })
                .collect();
            json!({"artifact_id": format!("a{a}"), "complete": true, "version": 1, "noted": 1,
                   "parts": parts})
        })
        .collect();
    let manifest = json!({"stored_bytes": 0, "artifacts": artifacts});
    w.blobs
        .put("si-pages/manifest.json", manifest.to_string().into_bytes())
        .await
        .unwrap();
    let (mut after, mut seen) = (None, Vec::new());
    loop {
        let page = w
            .call(Call::Artifacts {
                task_id: "si-pages",
                after: after.as_deref(),
            })
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.to_string().len() < 6_000_000);
        for artifact in page.body["artifacts"].as_array().unwrap() {
            seen.push(artifact["artifact_id"].as_str().unwrap().to_owned());
        }
        match page.body["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => break,
        }
        assert!(seen.len() < 10, "pages end");
    }
    assert_eq!(seen, ["a0", "a1", "a2"]);
    assert!(after.is_some(), "more than one page");
    let refused = w
        .call(Call::Artifacts {
            task_id: "si-pages",
            after: Some("nope"),
        })
        .await;
    assert_eq!(refused.status, 400);
    assert!(error(&refused).contains("\"nope\""), "{}", refused.body);
}

#[tokio::test]
async fn a_parent_reads_the_artifacts_and_a_link_per_stored_part() {
    use standin::artifacts::Blobs;
    let w = World::new();
    w.start(json!({"task_id": "si-art", "agent": "writer", "message": "go"}))
        .await;
    let manifest = json!({"stored_bytes": 9, "artifacts": [{
        "artifact_id": "report", "name": "report.md", "complete": true, "version": 1, "noted": 1,
        "parts": [
            {"view": {"kind": "text", "size": 9, "sha256": "ab", "text": "# Report\n", "stored": true},
             "key": "si-art/parts/p1"},
            {"view": {"kind": "url", "url": "https://files.example/x.pdf"}}]}]});
    w.blobs
        .put("si-art/manifest.json", manifest.to_string().into_bytes())
        .await
        .unwrap();
    let page = w
        .call(Call::Artifacts {
            task_id: "si-art",
            after: None,
        })
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["artifacts"][0]["artifact_id"], "report");
    assert_eq!(page.body["artifacts"][0]["parts"][0]["text"], "# Report\n");
    assert!(
        page.body["artifacts"][0].get("version").is_none(),
        "no bookkeeping shown"
    );
    assert!(
        page.body["artifacts"][0]["parts"][0].get("key").is_none(),
        "no bucket key shown"
    );
    let one = w
        .call(Call::Artifact {
            task_id: "si-art",
            artifact_id: "report",
        })
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert!(
        one.body["links"][0]
            .as_str()
            .is_some_and(|l| l.contains("si-art/parts/p1"))
    );
    assert_eq!(
        one.body["links"][1],
        Value::Null,
        "a URL part has nothing stored"
    );
    let missing = w
        .call(Call::Artifact {
            task_id: "si-art",
            artifact_id: "nope",
        })
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        w.call(Call::Artifacts {
            task_id: "si-none",
            after: None
        })
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn the_artifact_routes_are_served_with_their_ids_in_the_path() {
    let (w, router) = router();
    w.start(json!({"task_id": "si-r", "agent": "writer", "message": "go"}))
        .await;
    for (uri, status) in [
        ("/standins/si-r/artifacts", 200),
        ("/standins/si-r/artifacts/a%20b", 404),
    ] {
        let request = axum::http::Request::builder()
            .uri(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = tower::ServiceExt::oneshot(router.clone(), request)
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{uri}");
    }
}
