//! The parent's turns: a start's message and each reply, kept once taken with the note
//! each came after, and given back in the order the agent had them.

use super::*;

async fn turns(w: &World, task_id: &str) -> ApiAnswer {
    w.call(Call::Turns { task_id }).await
}

#[tokio::test]
async fn a_start_and_its_replies_are_kept_once_each_after_the_note_they_answer() {
    let w = World::new();
    let started = w
        .start(
            json!({"agent": "writer", "message": "Draft the intro", "task_id": "t",
                      "parts": [{"kind": "data", "data": {"words": 200}}]}),
        )
        .await;
    assert_eq!(started.status, 200, "{}", started.body);
    // The agent asks (note 1); the parent answers, and sends the answer again.
    let asking = remote_out("remote-1", TaskState::InputRequired, "Which tone?");
    w.store
        .apply("t", None, &asking, &standin::row::Guard::Open)
        .await
        .unwrap();
    let reply = json!({"text": "warm", "reply_id": "m-2"});
    for _ in 0..2 {
        let answer = w
            .call(Call::Reply {
                task_id: "t",
                body: &reply,
            })
            .await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    }
    // A start sent again is the same start, and keeps one turn.
    w.start(json!({"agent": "writer", "message": "Draft the intro", "task_id": "t"}))
        .await;

    let kept = turns(&w, "t").await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    let listed: Vec<(Value, Value, Value, Value)> = kept.body["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["kind"].clone(),
                t["turn_id"].clone(),
                t["after_seq"].clone(),
                t["text"].clone(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (
                json!("start"),
                json!("start"),
                json!(0),
                json!("Draft the intro")
            ),
            (json!("reply"), json!("m-2"), json!(1), json!("warm")),
        ]
    );
    assert_eq!(kept.body["turns"][0]["parts"][0]["data"]["words"], 200);
}

#[tokio::test]
async fn a_refused_reply_is_no_turn_and_an_unknown_stand_in_has_none() {
    let w = World::new();
    let mut row = Row::new("ended", "writer");
    row.closed = true;
    w.store.create(&row).await.unwrap();
    let refused = w
        .call(Call::Reply {
            task_id: "ended",
            body: &json!({"text": "too late"}),
        })
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(turns(&w, "ended").await.body["turns"], json!([]));
    assert_eq!(turns(&w, "nobody").await.status, 404);
}

/// A reply named `start` is a reply of its own, not taken for the start's turn.
#[tokio::test]
async fn a_reply_named_start_is_a_turn_of_its_own() {
    let w = World::new();
    w.start(json!({"agent": "writer", "message": "Begin", "task_id": "s"}))
        .await;
    let reply = json!({"text": "named so", "reply_id": "start"});
    let answer = w
        .call(Call::Reply {
            task_id: "s",
            body: &reply,
        })
        .await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    let kept = turns(&w, "s").await;
    let texts: Vec<&str> = kept.body["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Begin", "named so"], "{}", kept.body);
}

#[tokio::test]
async fn a_list_of_an_agent_whose_id_cannot_be_one_is_refused() {
    let w = World::new();
    let long = "x".repeat(65);
    for agent in ["", "a/b", long.as_str()] {
        let answer = w
            .call(Call::List {
                after: None,
                agent: Some(agent),
            })
            .await;
        assert_eq!(answer.status, 400, "{agent:?}: {}", answer.body);
        assert!(error(&answer).starts_with("agent: "), "{}", answer.body);
    }
}
