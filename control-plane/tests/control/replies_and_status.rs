//! Replies, cancels, status, the note log and the list.

use super::*;

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
        (json!({}), 400, "text: is required".to_owned()),
        (
            json!({"text": ""}),
            400,
            "text: must not be empty".to_owned(),
        ),
        (
            json!({"text": long}),
            400,
            "text: must be at most 32768 bytes, got 32769".to_owned(),
        ),
        (
            json!({"text": "t", "reply_id": "has space"}),
            400,
            "reply_id: must be 1 to 128 printable ASCII characters without spaces".to_owned(),
        ),
        (
            json!({"text": "t", "reply_id": 5}),
            400,
            "reply_id: must be 1 to 128 printable ASCII characters without spaces".to_owned(),
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
        (400, "reason: must be at most 4096 bytes, got 4097")
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
        (400, "reason: must be a string, got [\"not\",\"text\"]")
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
            .apply("n", None, &out, &standin::row::Guard::Open)
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
    let first = w
        .call(Call::List {
            after: None,
            agent: None,
        })
        .await;
    assert_eq!(first.body["standins"].as_array().unwrap().len(), 50);
    let next = first.body["next"].as_str().unwrap().to_owned();
    let second = w
        .call(Call::List {
            after: Some(&next),
            agent: None,
        })
        .await;
    assert_eq!(second.body["standins"].as_array().unwrap().len(), 5);
    assert_eq!(second.body["next"], Value::Null);
}

/// One agent's stand-ins, newest first, through the route as the A2A front asks for them.
#[tokio::test]
async fn the_list_of_one_agent_holds_its_stand_ins_only_newest_first() {
    let (w, router) = router();
    for (id, agent, at) in [
        ("w-old", "writer", "2026-12-01T10:00:00.000Z"),
        ("c-mid", "critic", "2026-12-01T10:00:01.000Z"),
        ("w-new", "writer", "2026-12-01T10:00:02.000Z"),
    ] {
        let mut row = Row::new(id, agent);
        row.created_at = Some(at.into());
        w.store.create(&row).await.unwrap();
    }
    let (status, listed) = request(&router, "GET", "/standins?agent=writer", Value::Null).await;
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<&str> = listed["standins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["w-new", "w-old"]);
    let (_, after) = request(
        &router,
        "GET",
        "/standins?agent=writer&after=w-new",
        Value::Null,
    )
    .await;
    assert_eq!(after["standins"][0]["task_id"], "w-old", "{after}");
    let (_, other) = request(
        &router,
        "GET",
        "/standins?agent=writer&after=c-mid",
        Value::Null,
    )
    .await;
    assert_eq!(
        other["standins"],
        json!([]),
        "another agent's id starts nowhere"
    );
}
