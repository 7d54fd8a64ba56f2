#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Mutex;

use serde_json::{Value, json};

use super::*;

/// The control API as a script: each call takes the next answer, and is recorded.
#[derive(Default)]
struct Scripted {
    answers: Mutex<Vec<(u16, Value)>>,
    calls: Mutex<Vec<(String, String, Option<Value>)>>,
}

impl Scripted {
    fn new(answers: Vec<(u16, Value)>) -> Self {
        let mut answers = answers;
        answers.reverse();
        Self {
            answers: Mutex::new(answers),
            calls: Mutex::default(),
        }
    }
    fn calls(&self) -> Vec<(String, String, Option<Value>)> {
        self.calls.lock().unwrap().clone()
    }
}

impl ControlCalls for Scripted {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<Answered, String> {
        self.calls
            .lock()
            .unwrap()
            .push((method.to_owned(), path.clone(), body));
        let (status, body) = self
            .answers
            .lock()
            .unwrap()
            .pop()
            .unwrap_or_else(|| panic!("no answer scripted for {method} {path}"));
        Ok(Answered { status, body })
    }
}

fn request(method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params})
        .to_string()
        .into_bytes()
}

fn row(state: Option<&str>, seq: u64) -> (u16, Value) {
    (
        200,
        json!({"task_id": "si-1", "agent": "billing", "state": state, "seq": seq, "closed": false}),
    )
}

fn notes(notes: Value) -> (u16, Value) {
    (
        200,
        json!({"task_id": "si-1", "notes": notes, "next": null}),
    )
}

fn note(seq: u64, state: &str, text: &str, last: bool) -> Value {
    json!({"task_id": "si-1", "agent": "billing", "state": state, "text": text,
           "final": last, "seq": seq, "at": format!("2026-12-05T10:00:0{seq}Z")})
}

fn no_turns() -> (u16, Value) {
    (200, json!({"turns": []}))
}

fn no_artifacts() -> (u16, Value) {
    (
        200,
        json!({"task_id": "si-1", "artifacts": [], "next": null}),
    )
}

#[tokio::test]
async fn what_is_not_a2a_1_0_is_refused_with_its_code() {
    let api = Scripted::default();
    let front = Front::new(&api, "billing");
    let code = |answer: Value| answer["error"]["code"].as_i64().unwrap();
    assert_eq!(code(front.answer(b"{not json", None).await), -32700);
    assert_eq!(
        code(
            front
                .answer(&request("message/send", json!({})), None)
                .await
        ),
        -32601
    );
    let answer = front
        .answer(&request("GetTask", json!({"id": "si-1"})), Some("0.3"))
        .await;
    assert_eq!(code(answer.clone()), -32009);
    assert_eq!(answer["id"], "r1");
    assert_eq!(
        answer["error"]["data"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    let answer = front
        .answer(
            &request("CreateTaskPushNotificationConfig", json!({})),
            None,
        )
        .await;
    assert_eq!(code(answer), -32602, "no taskId");
    let answer = front
        .answer(
            &request(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "si-1"}),
            ),
            None,
        )
        .await;
    assert_eq!(code(answer), -32602, "no url");
    let answer = front
        .answer(
            &request("ListTasks", json!({"status": "TASK_STATE_SLEEPING"})),
            None,
        )
        .await;
    assert_eq!(code(answer.clone()), -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("status:")
    );
    let answer = front
        .answer(
            &request("SendMessage", json!({"message": {"parts": [{"data": {}}]}})),
            None,
        )
        .await;
    assert_eq!(code(answer.clone()), -32602, "{answer}");
    assert!(api.calls().is_empty(), "nothing refused reached the API");
}

#[tokio::test]
async fn a_new_message_starts_a_stand_in_and_returns_at_once_when_asked() {
    let api = Scripted::new(vec![
        (
            202,
            json!({"task_id": "si-1", "execution_arn": "arn", "trace_id": "t"}),
        ),
        row(None, 0),
        no_turns(),
        no_artifacts(),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [
            {"text": "Refund order 7"},
            {"data": {"order": 7}},
            {"url": "https://files.example/receipt.pdf", "mediaType": "application/pdf",
             "filename": "receipt.pdf"}
        ]},
        "configuration": {"returnImmediately": true}
    });
    let answer = front
        .answer(&request("SendMessage", params), Some("1.0"))
        .await;
    assert_eq!(
        answer["result"]["task"],
        json!({"id": "si-1", "contextId": "si-1", "status": {"state": "TASK_STATE_SUBMITTED"}})
    );
    let calls = api.calls();
    assert_eq!(
        calls[0],
        (
            "POST".into(),
            "/standins".into(),
            Some(
                json!({"agent": "billing", "message": "Refund order 7", "parts": [
                    {"kind": "data", "data": {"order": 7}},
                    {"kind": "file", "url": "https://files.example/receipt.pdf",
                     "media_type": "application/pdf", "name": "receipt.pdf"}
                ], "task_id": task::id_for("billing", "m1")})
            )
        )
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_waits_for_the_task_to_ask_or_end_and_answers_the_task() {
    let api = Scripted::new(vec![
        row(Some("TASK_STATE_INPUT_REQUIRED"), 1),
        (202, json!({"task_id": "si-1", "accepted": true})),
        notes(json!([])),
        notes(json!([note(2, "TASK_STATE_WORKING", "Refunding", false)])),
        notes(json!([note(3, "TASK_STATE_COMPLETED", "Refunded", true)])),
        row(Some("TASK_STATE_COMPLETED"), 3),
        notes(json!([
            note(2, "TASK_STATE_WORKING", "Refunding", false),
            note(3, "TASK_STATE_COMPLETED", "Refunded", true)
        ])),
        no_turns(),
        (
            200,
            json!({"task_id": "si-1", "next": null, "artifacts": [
                {"artifact_id": "a1", "name": "receipt", "complete": true, "parts": [
                    {"kind": "text", "text": "refund #7"},
                    {"kind": "file", "media_type": "application/pdf", "filename": "r.pdf",
                     "stored": true}
                ]}
            ]}),
        ),
        (
            200,
            json!({"links": [null, "https://bucket.example/r.pdf?sig"]}),
        ),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({
        "message": {"messageId": "m2", "taskId": "si-1", "contextId": "si-1",
                    "role": "ROLE_USER", "parts": [{"text": "order 7"}]},
        "configuration": {"historyLength": 1}
    });
    let answer = front.answer(&request("SendMessage", params), None).await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(
        task["status"]["message"]["parts"],
        json!([{"text": "Refunded"}])
    );
    assert_eq!(
        task["history"].as_array().unwrap().len(),
        1,
        "historyLength kept"
    );
    assert_eq!(task["history"][0]["parts"][0]["text"], "Refunding");
    assert_eq!(
        task["artifacts"],
        json!([{"artifactId": "a1", "name": "receipt", "parts": [
            {"text": "refund #7"},
            {"url": "https://bucket.example/r.pdf?sig", "mediaType": "application/pdf",
             "filename": "r.pdf"}
        ]}])
    );
    let calls = api.calls();
    assert_eq!(
        calls[1].2,
        Some(json!({"text": "order 7", "reply_id": "m2"})),
        "the message id names the reply"
    );
    assert_eq!(
        calls[2].1, "/standins/si-1/notes?after=1",
        "only notes after the reply"
    );
    assert_eq!(calls[3].1, "/standins/si-1/notes?after=1");
    assert_eq!(calls[4].1, "/standins/si-1/notes?after=2");
    assert_eq!(
        calls[6].1, "/standins/si-1/notes?after=1",
        "only the notes the answer shows: the latest and one of history"
    );
}

#[tokio::test]
async fn a_task_that_is_not_there_or_has_ended_is_said_in_a2a_terms() {
    let api = Scripted::new(vec![
        (404, json!({"error": "no stand-in si-9"})),
        row(Some("TASK_STATE_COMPLETED"), 3),
        row(Some("TASK_STATE_WORKING"), 2),
        (
            200,
            json!({"task_id": "si-2", "agent": "someone-else", "seq": 0}),
        ),
        row(Some("TASK_STATE_COMPLETED"), 3),
        (409, json!({"error": "stand-in si-1 has ended"})),
        (
            503,
            json!({"error": "the stand-ins' table did not answer; try again"}),
        ),
    ]);
    let front = Front::new(&api, "billing");
    let reply = |task_id: &str| {
        request(
            "SendMessage",
            json!({"message": {"taskId": task_id, "parts": [{"text": "more"}]}}),
        )
    };
    let error = |answer: Value| answer["error"].clone();
    assert_eq!(
        error(front.answer(&reply("si-9"), None).await)["code"],
        -32001
    );
    assert_eq!(
        error(front.answer(&reply("si-1"), None).await)["code"],
        -32004
    );
    let working = error(front.answer(&reply("si-1"), None).await);
    assert_eq!(
        working["code"], -32004,
        "a task that is not asking takes no message"
    );
    assert!(
        working["message"].as_str().unwrap().contains("not asking"),
        "{working}"
    );
    let other = front
        .answer(&request("GetTask", json!({"id": "si-2"})), None)
        .await;
    assert_eq!(
        error(other)["code"],
        -32001,
        "another agent's stand-in is not this one's"
    );
    let cancel = front
        .answer(&request("CancelTask", json!({"id": "si-1"})), None)
        .await;
    assert_eq!(error(cancel)["data"][0]["reason"], "TASK_NOT_CANCELABLE");
    // Our failure is not the parent's unknown task.
    let down = front
        .answer(&request("GetTask", json!({"id": "si-1"})), None)
        .await;
    assert_eq!(error(down)["code"], -32603);
    let odd = front
        .answer(&request("GetTask", json!({"id": ".."})), None)
        .await;
    assert_eq!(error(odd)["code"], -32001);
    assert_eq!(
        rpc::segment("../agents").unwrap(),
        "%2E%2E%2Fagents",
        "one segment"
    );
    assert_eq!(api.calls().len(), 7, "nothing unscripted was asked");
}

/// A start sent again (a client's retry after a timeout) is the same stand-in, even
/// once it has ended; the snake_case names the SDK's server takes are taken too.
#[tokio::test]
async fn a_start_sent_again_is_the_same_task() {
    let id = task::id_for("billing", "m1");
    assert_eq!(id, task::id_for("billing", "m1"));
    assert_ne!(id, task::id_for("writer", "m1"), "the agent is part of it");
    let api = Scripted::new(vec![
        (409, json!({"error": "stand-in has ended"})),
        (
            200,
            json!({"task_id": id, "agent": "billing", "state": "TASK_STATE_COMPLETED",
                     "seq": 0, "closed": true}),
        ),
        no_turns(),
        no_artifacts(),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({"message": {"message_id": "m1", "parts": [{"text": "Refund"}]},
                        "configuration": {"return_immediately": true}});
    let answer = front.answer(&request("SendMessage", params), None).await;
    assert_eq!(answer["result"]["task"]["id"], id.as_str(), "{answer}");
    assert_eq!(
        answer["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn list_tasks_gives_this_agents_tasks_by_status() {
    let api = Scripted::new(vec![(
        200,
        json!({"standins": [
            {"task_id": "si-1", "agent": "billing", "state": "TASK_STATE_INPUT_REQUIRED",
             "text": "Which order?", "seq": 1, "closed": false},
            {"task_id": "si-2", "agent": "billing", "state": "TASK_STATE_COMPLETED",
             "text": "Done", "seq": 3, "closed": true},
            {"task_id": "si-3", "agent": "writer", "state": "TASK_STATE_INPUT_REQUIRED",
             "seq": 1, "closed": false}
        ], "next": "si-3"}),
    )]);
    let front = Front::new(&api, "billing");
    let params = json!({"status": "TASK_STATE_INPUT_REQUIRED", "pageToken": "si-0"});
    let answer = front.answer(&request("ListTasks", params), None).await;
    let result = &answer["result"];
    let ids: Vec<&str> = result["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["si-1"], "{answer}");
    assert_eq!(result["nextPageToken"], "si-3");
    assert_eq!(api.calls()[0].1, "/standins?agent=billing&after=si-0");
}

#[test]
fn the_card_is_the_agents_words_at_the_fronts_address() {
    let profile = crate::Profile {
        name: "Billing".into(),
        description: "Answers billing questions".into(),
        skills: vec![crate::Skill {
            id: "refund".into(),
            name: "Refunds".into(),
            description: "Refunds an order".into(),
            tags: vec!["money".into()],
        }],
    };
    let card = front_card(
        "billing",
        "https://api.example/Prod/a2a/billing",
        Some(&profile),
        true,
        Door::Signed,
    );
    assert_eq!(card["name"], "Billing");
    assert!(
        card.get("securitySchemes").is_none(),
        "SigV4 has no A2A scheme"
    );
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    assert_eq!(card["skills"][0]["id"], "refund");
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": "https://api.example/Prod/a2a/billing", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0"}])
    );
    let bare = front_card(
        "billing",
        "https://x/a2a/billing",
        None,
        false,
        Door::Signed,
    );
    assert_eq!(bare["name"], "billing");
    assert_eq!(
        bare["capabilities"]["pushNotifications"], false,
        "no webhook queue"
    );
    assert_eq!(bare["skills"], json!([]));
}

#[test]
fn the_keyed_doors_card_declares_its_bearer_scheme_and_requires_it() {
    let card = front_card(
        "billing",
        "https://x/keyed/a2a/billing",
        None,
        true,
        Door::Keyed,
    );
    assert_eq!(
        card["securitySchemes"][KEY_SCHEME]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {KEY_SCHEME: {"list": []}}}])
    );
    assert_eq!(Door::Keyed.path(), "/keyed/a2a");
}

/// A reply sent again (its message id among those the stand-in took) is answered with the
/// task and not taken twice; while a reply waits to reach the agent, the task works on
/// it and takes no other message.
#[tokio::test]
async fn a_reply_sent_again_is_taken_once_and_a_waiting_reply_reads_as_working() {
    let asking_with_one_queued = json!({"task_id": "si-1", "agent": "billing",
        "state": "TASK_STATE_INPUT_REQUIRED", "seq": 1, "closed": false,
        "pending": {"cancel": false, "replies": 1, "push": false},
        "replies_taken": ["m2"]});
    let api = Scripted::new(vec![
        (200, asking_with_one_queued.clone()),
        (200, asking_with_one_queued.clone()),
        notes(json!([note(
            1,
            "TASK_STATE_INPUT_REQUIRED",
            "Which order?",
            false
        )])),
        no_turns(),
        no_artifacts(),
        (200, asking_with_one_queued),
    ]);
    let front = Front::new(&api, "billing");
    let message = |id: &str| {
        request(
            "SendMessage",
            json!({"message": {"messageId": id, "taskId": "si-1", "parts": [{"text": "order 7"}]},
                   "configuration": {"returnImmediately": true}}),
        )
    };
    let again = front.answer(&message("m2"), None).await;
    assert_eq!(
        again["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{again}"
    );
    let another = front.answer(&message("m3"), None).await;
    assert_eq!(another["error"]["code"], -32004, "{another}");
    let posts = api.calls().iter().filter(|c| c.0 == "POST").count();
    assert_eq!(
        posts, 0,
        "nothing was replied twice, nor queued behind a reply"
    );
}

#[tokio::test]
async fn a_push_config_is_a_webhook_set_listed_read_and_deleted_without_its_secrets() {
    let view = json!({"webhook_id": "cfg-1", "url": "https://parent.example/hook",
                      "through": 0, "has_token": true, "has_authorization": true});
    let api = Scripted::new(vec![
        row(Some("TASK_STATE_WORKING"), 2),
        (200, view.clone()),
        row(Some("TASK_STATE_WORKING"), 2),
        (200, json!({"webhooks": [view.clone()]})),
        row(Some("TASK_STATE_WORKING"), 2),
        (200, json!({"webhooks": [view.clone()]})),
        row(Some("TASK_STATE_WORKING"), 2),
        (
            200,
            json!({"task_id": "si-1", "webhook_id": "cfg-1", "deleted": true}),
        ),
    ]);
    let front = Front::new(&api, "billing");
    let config = json!({"taskId": "si-1", "id": "cfg-1", "url": "https://parent.example/hook",
        "token": "tok-1", "authentication": {"scheme": "Bearer", "credentials": "abc"}});
    let answer = front
        .answer(&request("CreateTaskPushNotificationConfig", config), None)
        .await;
    let expected = json!({"taskId": "si-1", "id": "cfg-1", "url": "https://parent.example/hook"});
    assert_eq!(answer["result"], expected, "{answer}");
    assert_eq!(
        api.calls()[1],
        (
            "PUT".into(),
            "/standins/si-1/webhooks/cfg-1".into(),
            Some(
                json!({"url": "https://parent.example/hook", "token": "tok-1",
                        "authorization": "Bearer abc"})
            )
        ),
        "from now on: no `after`"
    );
    let answer = front
        .answer(
            &request(
                "GetTaskPushNotificationConfig",
                json!({"taskId": "si-1", "id": "cfg-1"}),
            ),
            None,
        )
        .await;
    assert_eq!(answer["result"], expected);
    let answer = front
        .answer(
            &request("ListTaskPushNotificationConfigs", json!({"taskId": "si-1"})),
            None,
        )
        .await;
    assert_eq!(answer["result"]["configs"], json!([expected]));
    let answer = front
        .answer(
            &request(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": "si-1", "id": "cfg-1"}),
            ),
            None,
        )
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    assert_eq!(api.calls()[7].0, "DELETE");
}

#[tokio::test]
async fn a_push_config_sent_with_a_start_is_the_starts_own_webhook() {
    let api = Scripted::new(vec![
        (
            202,
            json!({"task_id": "si-1", "execution_arn": "arn", "trace_id": "t"}),
        ),
        row(None, 0),
        no_turns(),
        no_artifacts(),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({
        "message": {"messageId": "m1", "parts": [{"text": "Refund order 7"}]},
        "configuration": {"returnImmediately": true,
                          "taskPushNotificationConfig": {"url": "https://p.example/h",
                                                         "token": "tok", "id": "mine"}}
    });
    let answer = front.answer(&request("SendMessage", params), None).await;
    assert!(answer["result"]["task"].is_object(), "{answer}");
    let start = &api.calls()[0];
    assert_eq!(start.1, "/standins");
    assert_eq!(
        start.2.as_ref().unwrap()["webhook"],
        json!({"url": "https://p.example/h", "token": "tok", "webhook_id": "mine"}),
        "checked and set with the start, so every note is told"
    );
}

#[tokio::test]
async fn a_push_config_sent_with_a_reply_is_set_for_the_notes_after_it_before_it_is_taken() {
    let api = Scripted::new(vec![
        row(Some("TASK_STATE_INPUT_REQUIRED"), 4),
        row(Some("TASK_STATE_INPUT_REQUIRED"), 4),
        (
            200,
            json!({"webhook_id": "si-1", "url": "https://p.example/h", "through": 4,
                     "has_token": false, "has_authorization": false}),
        ),
        (202, json!({"task_id": "si-1", "accepted": true})),
        row(Some("TASK_STATE_INPUT_REQUIRED"), 4),
        notes(json!([])),
        no_turns(),
        no_artifacts(),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({
        "message": {"messageId": "m2", "taskId": "si-1", "parts": [{"text": "blue"}]},
        "configuration": {"returnImmediately": true,
                          "taskPushNotificationConfig": {"url": "https://p.example/h"}}
    });
    let answer = front.answer(&request("SendMessage", params), None).await;
    assert!(answer["result"]["task"].is_object(), "{answer}");
    let calls = api.calls();
    assert_eq!(calls[2].1, "/standins/si-1/webhooks/si-1");
    assert_eq!(
        calls[2].2,
        Some(json!({"url": "https://p.example/h", "after": 4}))
    );
    assert_eq!(calls[3].1, "/standins/si-1/reply", "then the reply");
}

#[test]
fn a_note_is_pushed_as_its_artifacts_then_its_status() {
    let mut told = note(3, "TASK_STATE_INPUT_REQUIRED", "Which colour?", false);
    told["artifacts"] = json!([{"artifact_id": "a1", "name": "draft",
                                "parts": [{"kind": "text", "text": "v1"}]}]);
    let events = webhook::events(&told, Some("ctx-9"));
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["artifactUpdate"]["artifact"]["artifactId"], "a1");
    assert_eq!(
        events[0]["artifactUpdate"]["artifact"]["parts"],
        json!([{"text": "v1"}])
    );
    let status = &events[1]["statusUpdate"];
    assert_eq!(status["taskId"], "si-1");
    assert_eq!(status["contextId"], "ctx-9", "the parent's context");
    assert_eq!(status["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        status["status"]["message"]["parts"],
        json!([{"text": "Which colour?"}])
    );
    assert_eq!(status["metadata"]["seq"], 3);
}

#[tokio::test]
async fn the_parents_context_is_kept_with_the_start_shown_on_the_task_and_filters_the_list() {
    let api = Scripted::new(vec![
        (
            202,
            json!({"task_id": "si-1", "execution_arn": "arn", "trace_id": "t"}),
        ),
        (
            200,
            json!({"task_id": "si-1", "agent": "billing", "seq": 0, "closed": false,
                     "context_id": "chat-7"}),
        ),
        no_turns(),
        no_artifacts(),
        (
            200,
            json!({"standins": [
            {"task_id": "si-1", "agent": "billing", "state": "TASK_STATE_WORKING", "seq": 1,
             "closed": false, "context_id": "chat-7"},
            {"task_id": "si-2", "agent": "billing", "state": "TASK_STATE_WORKING", "seq": 1,
             "closed": false},
        ], "next": null}),
        ),
    ]);
    let front = Front::new(&api, "billing");
    let params = json!({
        "message": {"messageId": "m1", "contextId": "chat-7", "parts": [{"text": "Refund"}]},
        "configuration": {"returnImmediately": true}
    });
    let answer = front.answer(&request("SendMessage", params), None).await;
    assert_eq!(answer["result"]["task"]["contextId"], "chat-7", "{answer}");
    assert_eq!(api.calls()[0].2.as_ref().unwrap()["context_id"], "chat-7");
    let answer = front
        .answer(&request("ListTasks", json!({"contextId": "chat-7"})), None)
        .await;
    let tasks = answer["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{answer}");
    assert_eq!(tasks[0]["id"], "si-1");
}

/// The history is both sides in the order the agent had them: the parent's start before
/// the first note, its reply after the question it answers; the latest note is the
/// status, and a parent's file and data parts keep their content.
#[test]
fn the_history_is_both_sides_in_the_order_the_agent_had_them() {
    let row = json!({"task_id": "si-1", "seq": 3, "state": "TASK_STATE_COMPLETED"});
    let notes = [
        note(1, "TASK_STATE_WORKING", "Reading", false),
        note(2, "TASK_STATE_INPUT_REQUIRED", "Which order?", false),
        note(3, "TASK_STATE_COMPLETED", "Refunded", true),
    ];
    // As the control API gives them: oldest first, each after the note it came after.
    let turns = [
        json!({"kind": "start", "turn_id": "start", "after_seq": 0, "at": "t0", "text": "Refund it",
               "parts": [{"kind": "data", "data": {"order": 7}}]}),
        json!({"kind": "reply", "turn_id": "m-2", "after_seq": 2, "at": "t2", "text": "Order 7",
               "parts": [{"kind": "file", "name": "r.pdf", "media_type": "application/pdf",
                          "url": "https://files.example/r.pdf"},
                         {"kind": "file", "upload_id": "up-1"}]}),
    ];
    let task = task::of("si-1", &row, &notes, &turns, Vec::new(), 20);
    let said: Vec<(String, String)> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["parts"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let expected = [
        ("ROLE_USER", "Refund it"),
        ("ROLE_AGENT", "Reading"),
        ("ROLE_AGENT", "Which order?"),
        ("ROLE_USER", "Order 7"),
    ];
    assert_eq!(
        said,
        expected.map(|(r, t)| (r.to_owned(), t.to_owned())),
        "{task}"
    );
    let history = &task["history"];
    assert_eq!(history[0]["messageId"], "si-1-start");
    assert_eq!(history[0]["parts"][1], json!({"data": {"order": 7}}));
    assert_eq!(
        history[3]["messageId"], "m-2",
        "a reply's id is its message's"
    );
    assert_eq!(
        history[3]["parts"][1],
        json!({"url": "https://files.example/r.pdf", "mediaType": "application/pdf",
               "filename": "r.pdf"})
    );
    assert_eq!(
        history[3]["parts"].as_array().unwrap().len(),
        2,
        "an upload shows no content"
    );
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    // The newest `history` of both sides.
    let short = task::of("si-1", &row, &notes, &turns, Vec::new(), 2);
    assert_eq!(short["history"][1]["messageId"], "m-2", "{short}");
    assert_eq!(short["history"].as_array().unwrap().len(), 2);
    // Notes read from the third on (a short history): the turns said before the notes
    // read are left out with those notes, not shown beside later ones.
    let late = task::of("si-1", &row, &notes[2..], &turns, Vec::new(), 20);
    let late_ids: Vec<&Value> = late["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["messageId"])
        .collect();
    assert_eq!(late_ids, [&json!("m-2")], "{late}");
    // A reply named `start` is a reply, under its own id.
    let named_start = [json!({"kind": "reply", "turn_id": "start", "after_seq": 0,
                              "at": "t0", "text": "Hi"})];
    let task = task::of("si-1", &row, &notes, &named_start, Vec::new(), 20);
    assert_eq!(task["history"][0]["messageId"], "start", "{task}");
}
