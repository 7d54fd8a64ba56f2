//! The tools against a control API double that answers from a script and keeps every call.

use std::sync::Mutex;

use serde_json::{Value, json};

use super::*;
use crate::api::{ControlAnswer, ControlApi};

#[derive(Default)]
struct Scripted {
    answers: Mutex<Vec<ControlAnswer>>,
    calls: Mutex<Vec<(String, String, Option<Value>)>>,
}

impl Scripted {
    fn answering(answers: Vec<(u16, Value)>) -> Self {
        Self {
            answers: Mutex::new(
                answers
                    .into_iter()
                    .map(|(status, body)| ControlAnswer { status, body })
                    .collect(),
            ),
            calls: Mutex::default(),
        }
    }
}

impl ControlApi for Scripted {
    async fn call(
        &self,
        method: &'static str,
        path: String,
        body: Option<Value>,
    ) -> Result<ControlAnswer, String> {
        self.calls.lock().unwrap().push((method.into(), path, body));
        let mut answers = self.answers.lock().unwrap();
        if answers.is_empty() {
            return Err("no answer scripted".into());
        }
        Ok(answers.remove(0))
    }
}

fn tools(answers: Vec<(u16, Value)>) -> StandInTools<Scripted> {
    StandInTools::new(Scripted::answering(answers))
}

fn calls(tools: &StandInTools<Scripted>) -> Vec<(String, String, Option<Value>)> {
    tools.api.calls.lock().unwrap().clone()
}

#[test]
fn every_tool_is_listed_with_schemas_for_its_input_and_output() {
    let listed = StandInTools::<Scripted>::tool_router().list_all();
    let mut names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "artifacts",
            "cancel",
            "delegate",
            "list_agents",
            "reply",
            "status",
            "wait"
        ]
    );
    for tool in &listed {
        assert!(tool.output_schema.is_some(), "{}", tool.name);
        assert!(tool.description.is_some(), "{}", tool.name);
    }
    let delegate = listed.iter().find(|tool| tool.name == "delegate").unwrap();
    let required = &delegate.input_schema["required"];
    assert_eq!(required, &json!(["agent", "message"]));
}

#[tokio::test]
async fn delegate_sends_the_data_and_files_as_the_api_s_parts() {
    let tools = tools(vec![(
        200,
        json!({"task_id": "si-1", "execution_arn": "arn",
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}),
    )]);
    let asked: Delegate = serde_json::from_value(json!({
        "agent": "reviewer", "message": "Review it", "deadline_secs": 600,
        "data": {"pages": "12"},
        "files": [{"name": "c.pdf", "media_type": "application/pdf", "url": "https://x.test/c.pdf"},
                  {"bytes": "bm90ZXM="}]
    }))
    .unwrap();
    let Json(delegated) = tools.delegate(Parameters(asked)).await.unwrap();
    assert_eq!(delegated.task_id, "si-1");
    assert_eq!(
        delegated.trace_id.as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(
        calls(&tools),
        [(
            "POST".to_owned(),
            "/standins".to_owned(),
            Some(
                json!({"agent": "reviewer", "message": "Review it", "deadline_secs": 600,
                "parts": [
                    {"kind": "file", "name": "c.pdf", "media_type": "application/pdf", "url": "https://x.test/c.pdf"},
                    {"kind": "file", "bytes": "bm90ZXM="},
                    {"kind": "data", "data": {"pages": "12"}}]})
            )
        )]
    );
}

#[tokio::test]
async fn a_refusal_is_a_tool_error_in_the_api_s_words_with_what_to_do() {
    let tools = tools(vec![(404, json!({"error": "no stand-in si-x"}))]);
    let reply: Reply = serde_json::from_value(json!({"task_id": "si-x", "text": "blue"})).unwrap();
    let Err(refused) = tools.reply(Parameters(reply)).await else {
        panic!("accepted")
    };
    assert_eq!(
        refused,
        "the reply was refused (404): no stand-in si-x: check the ids (a task_id as delegate returned it, an artifact_id as artifacts lists it)"
    );
    let unreachable = tools
        .status(Parameters(TaskRef {
            task_id: "a/b".into(),
        }))
        .await;
    assert!(matches!(unreachable, Err(said) if said == "no answer scripted"));
    // An id is one path segment, whatever it holds.
    assert_eq!(calls(&tools)[1].1, "/standins/a%2Fb");
}

#[tokio::test]
async fn wait_returns_the_notes_after_its_seq_and_nothing_when_its_time_is_up() {
    let note = |seq: u64, state: &str, is_final: bool| {
        json!({"task_id": "si-1", "agent": "a", "state": state, "text": format!("n{seq}"),
            "final": is_final, "seq": seq, "at": "t"})
    };
    let tools = tools(vec![
        (200, json!({"task_id": "si-1", "notes": [], "next": null})),
        (
            200,
            json!({"task_id": "si-1", "notes": [note(3, "TASK_STATE_WORKING", false),
            note(4, "TASK_STATE_COMPLETED", true)], "next": null}),
        ),
        (200, json!({"task_id": "si-1", "notes": [], "next": null})),
        (
            200,
            json!({"task_id": "si-1", "agent": "a", "closed": true, "seq": 4}),
        ),
    ]);
    let wait = |after: u64, secs: u64| {
        serde_json::from_value::<Wait>(
            json!({"task_id": "si-1", "after_seq": after, "timeout_secs": secs}),
        )
        .unwrap()
    };
    let Json(waited) = tools.wait(Parameters(wait(2, 5))).await.unwrap();
    assert_eq!(
        waited.notes.iter().map(|n| n.seq).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!((waited.after_seq, waited.ended), (4, true));
    // Nothing after the final note: the wait says the sub-task has ended all the same.
    let Json(none) = tools.wait(Parameters(wait(4, 0))).await.unwrap();
    assert!(none.notes.is_empty());
    assert_eq!((none.after_seq, none.ended), (4, true));
    let paths: Vec<String> = calls(&tools).into_iter().map(|c| c.1).collect();
    assert_eq!(
        paths,
        [
            "/standins/si-1/notes?after=2",
            "/standins/si-1/notes?after=2",
            "/standins/si-1/notes?after=4",
            "/standins/si-1"
        ]
    );
}

/// The final note written between the log's read and the status's: read again, not lost.
#[tokio::test]
async fn a_final_note_written_while_the_wait_asks_the_status_is_returned() {
    let empty = json!({"task_id": "si-1", "notes": [], "next": null});
    let last = json!({"task_id": "si-1", "next": null, "notes": [{"task_id": "si-1",
        "agent": "a", "state": "TASK_STATE_COMPLETED", "text": "done", "final": true,
        "seq": 5, "at": "t"}]});
    let tools = tools(vec![
        (200, empty),
        (
            200,
            json!({"task_id": "si-1", "agent": "a", "closed": true, "seq": 5}),
        ),
        (200, last),
    ]);
    let wait: Wait =
        serde_json::from_value(json!({"task_id": "si-1", "after_seq": 4, "timeout_secs": 0}))
            .unwrap();
    let Json(waited) = tools.wait(Parameters(wait)).await.unwrap();
    assert_eq!(waited.notes.len(), 1);
    assert_eq!((waited.after_seq, waited.ended), (5, true));
    assert_eq!(waited.notes[0].text, "done");
}

#[tokio::test]
async fn list_agents_gives_what_each_card_says() {
    let card = json!({"name": "Billing", "description": "Answers billing questions",
                      "skills": [{"id": "refund", "name": "Refunds",
                                  "description": "Refunds an order", "tags": ["money"]},
                                 {"id": 7}]});
    let tools = tools(vec![(
        200,
        json!({"agents": [{"source": "stack", "agent": {"id": "billing", "url": "https://b.test"},
                           "card": card}], "next": null}),
    )]);
    let Json(listed) = tools
        .list_agents(Parameters(ListAgents::default()))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&listed.agents[0]).unwrap(),
        json!({"id": "billing", "source": "stack", "url": "https://b.test", "name": "Billing",
               "description": "Answers billing questions",
               "skills": [{"id": "refund", "name": "Refunds", "description": "Refunds an order",
                           "tags": ["money"]}]})
    );
}

#[tokio::test]
async fn list_agents_gives_a_page_and_where_the_next_starts() {
    let tools = tools(vec![
        (
            200,
            json!({"agents": [{"source": "stack", "agent": {"id": "a", "url": "https://a.test"}}], "next": "a"}),
        ),
        (
            200,
            json!({"agents": [{"source": "registry", "agent": {"id": "b", "url": "https://b.test"},
                               "card": {"name": "", "description": "", "skills": [],
                                        "error": "https://b.test answered HTTP 503"}}],
                   "next": "b"}),
        ),
    ]);
    let Json(first) = tools
        .list_agents(Parameters(ListAgents::default()))
        .await
        .unwrap();
    assert_eq!(
        (first.agents[0].id.as_str(), first.next.as_deref()),
        ("a", Some("a"))
    );
    let after = ListAgents {
        after: first.next.clone(),
    };
    let Json(second) = tools.list_agents(Parameters(after)).await.unwrap();
    assert_eq!(calls(&tools)[1].1, "/agents?after=a");
    assert_eq!(
        serde_json::to_value(&second.agents[0]).unwrap(),
        json!({"id": "b", "source": "registry", "url": "https://b.test", "skills": [],
               "card_error": "https://b.test answered HTTP 503"})
    );
    // A page that names itself as the next is the last one, not a loop.
    let again = ListAgents {
        after: Some("b".into()),
    };
    let tools = self::tools(vec![(200, json!({"agents": [], "next": "b"}))]);
    let Json(last) = tools.list_agents(Parameters(again)).await.unwrap();
    assert_eq!(last.next, None);
}

#[tokio::test]
async fn an_id_cannot_name_another_path() {
    let tools = tools(vec![]);
    for id in ["..", ".", ""] {
        let of: ArtifactsOf =
            serde_json::from_value(json!({"task_id": "si-1", "artifact_id": id})).unwrap();
        let Err(refused) = tools.artifacts(Parameters(of)).await else {
            panic!("{id:?} accepted")
        };
        assert!(refused.contains("is not an id"), "{refused}");
    }
    assert!(calls(&tools).is_empty(), "nothing was called");
}
