//! Turns: an agent that cannot be reached, a follow-up refused, a turn run again, a final state that wins.

use super::*;

/// A first turn ("go") of `w`'s stand-in, reaching the agent through `connect`.
async fn first_turn_of<A: standin_remote::Agent>(
    w: &World,
    connect: impl std::future::Future<Output = Result<A, RemoteError>> + Send,
    spec: &AgentSpec,
    window: Duration,
) -> Result<Step, StepError> {
    let invocation = Invocation::new(Teller::new(&w.store), connect).with_spec(Some(spec.clone()));
    steps::turn(
        &invocation,
        Step::start(ID, "widgets", "go"),
        window,
        PACING,
    )
    .await
}

#[tokio::test]
async fn a_turn_that_cannot_reach_the_agent_ends_as_failed() {
    let w = World::new(true).await;
    w.agent
        .script_stream(Err(RemoteError::Transport("connection failed".into())));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Failed { .. }))),
        "{:?}",
        step.next
    );
    assert_eq!(
        w.agent.count("GetTask"),
        0,
        "a first turn has no remote task to ask about"
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(1));
    assert_eq!(w.notes(), [(1, "TASK_STATE_FAILED".into(), true)]);
}

#[tokio::test]
async fn an_agent_that_cannot_be_reached_is_named_with_where_it_was_tried() {
    let w = World::new(true).await;
    let spec = AgentSpec {
        url: "http://127.0.0.1:1/a2a/v1?key=never-shown".into(),
        ..spec(Updates::Auto)
    };
    let down = std::future::ready(Err::<FakeAgent, _>(RemoteError::Transport(
        "connection failed".into(),
    )));
    let step = first_turn_of(&w, down, &spec, Duration::from_secs(5))
        .await
        .unwrap();
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("{:?}", step.next)
    };
    assert_eq!(
        reason,
        "agent unavailable: agent \"widgets\" at http://127.0.0.1:1: transport error: connection failed"
    );
}

#[tokio::test]
async fn progress_within_a_first_turn_reaches_the_parent_before_its_end() {
    let w = World::new(true).await;
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::Working, "Shouting...")),
        // Read within the coalescing bound of the one before: told as one, the newest.
        Ok(update(TaskState::Working, "Still shouting...")),
        Ok(update(TaskState::Completed, "SHOUTED")),
    ]));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    w.end(&step).await;
    let texts: Vec<(u64, String, String)> = w
        .store
        .outbox()
        .into_iter()
        .map(|n| (n.seq, n.state.as_str().to_owned(), n.text))
        .collect();
    assert_eq!(
        texts,
        [
            (1, "TASK_STATE_WORKING".into(), "Shouting...".into()),
            (2, "TASK_STATE_COMPLETED".into(), "SHOUTED".into()),
        ]
    );
    let row = w.store.get(ID).await.unwrap().unwrap();
    assert_eq!(
        row.remote_task_id.as_deref(),
        Some(REMOTE),
        "the progress set the task"
    );
}

/// `w`'s agent streams the turn's first event, then WORKING with each of `texts`, and
/// keeps the stream open after them.
fn working_on_an_open_stream(w: &World, texts: &[&str]) {
    w.agent.keep_streams_open();
    let mut script = vec![Ok(first_event())];
    script.extend(
        texts
            .iter()
            .map(|text| Ok(update(TaskState::Working, text))),
    );
    w.agent.script_stream(Ok(script));
}

/// The invocation of `w`'s stand-in as the Turn function builds it: the row read on its
/// way in, for the agent's entry; and a first step its execution runs.
fn turn_as_wired(w: &World) -> (Invocation<'_, MemoryStore, &FakeAgent>, Step) {
    let mut step = Step::start(ID, "widgets", "go");
    step.execution = Some(ExecutionName { name: ID.into() });
    let invocation = w
        .invocation()
        .with_spec(Some(spec(Updates::Auto)))
        .with_row(w.store.snapshot(ID));
    (invocation, step)
}

/// A turn given its row as the invocation read it reads it no more: not to check the
/// execution is the stand-in's, not before it sends, not before a change it tells (the
/// write of each serves the next as its row seen).
#[tokio::test]
async fn a_turn_given_its_row_reads_it_no_more_however_often_it_tells() {
    let w = World::new(true).await;
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::Working, "one")),
        Ok(update(TaskState::InputRequired, "colour?")),
    ]));
    let (invocation, step) = turn_as_wired(&w);
    let reads = w.store.reads();
    let step = steps::turn(&invocation, step, Duration::from_secs(5), PACING)
        .await
        .unwrap();
    assert!(!matches!(step.next, Some(Next::End(_))), "{:?}", step.next);
    let texts: Vec<String> = w.store.outbox().into_iter().map(|n| n.text).collect();
    assert_eq!(texts, ["one", "colour?"]);
    assert_eq!(
        w.store.reads(),
        reads,
        "no read of the row after the invocation's"
    );
}

/// Each progress note starts from the row the one before wrote; a turn whose window ends
/// on a state its progress told already reads once, to confirm the table has it.
#[tokio::test(start_paused = true)]
async fn a_turn_s_progress_notes_each_start_from_the_row_the_last_one_wrote() {
    let w = World::new(true).await;
    working_on_an_open_stream(&w, &["one", "two"]);
    let (invocation, step) = turn_as_wired(&w);
    let reads = w.store.reads();
    let turn = steps::turn(&invocation, step, Duration::from_secs(5), PACING);
    tokio::pin!(turn);
    tokio::select! {
        _ = &mut turn => panic!("the turn ended while the agent's stream was open"),
        () = tokio::time::sleep(steps::COALESCE * 4) => {}
    }
    let texts: Vec<String> = w.store.outbox().into_iter().map(|n| n.text).collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(w.store.reads(), reads, "two changes told, no read");
    let step = turn.await.unwrap();
    assert!(!matches!(step.next, Some(Next::End(_))), "{:?}", step.next);
    assert_eq!(w.store.outbox().len(), 2, "nothing told twice");
    assert_eq!(w.store.reads(), reads + 1, "one read, at the window's end");
}

#[tokio::test(start_paused = true)]
async fn progress_held_to_coalesce_is_told_by_the_turns_end_when_the_agent_still_works() {
    let w = World::new(true).await;
    // Two changes at once, then the stream ends with the agent still working.
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::Working, "one")),
        Ok(update(TaskState::Working, "two")),
    ]));
    w.agent.set_task(task(TaskState::Working, "two"));
    let spec = spec(Updates::Auto);
    let step = first_turn_of(
        &w,
        std::future::ready(Ok(&w.agent)),
        &spec,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert!(!matches!(step.next, Some(Next::End(_))), "{:?}", step.next);
    let texts: Vec<String> = w.store.outbox().into_iter().map(|n| n.text).collect();
    assert_eq!(texts, ["one", "two"]);
}

#[tokio::test(start_paused = true)]
async fn a_change_held_to_coalesce_is_told_when_due_while_the_stream_stays_open() {
    let w = World::new(true).await;
    working_on_an_open_stream(&w, &["one", "two", "three"]);
    let spec = spec(Updates::Auto);
    let turn = first_turn_of(
        &w,
        std::future::ready(Ok(&w.agent)),
        &spec,
        Duration::from_secs(3600),
    );
    tokio::pin!(turn);
    let texts =
        |w: &World| -> Vec<String> { w.store.outbox().into_iter().map(|n| n.text).collect() };
    tokio::select! {
        _ = &mut turn => panic!("the turn ended while the agent's stream was open"),
        () = tokio::time::sleep(steps::COALESCE / 2) => {}
    }
    assert_eq!(
        texts(&w),
        ["one"],
        "\"two\" came within the bound and waits; \"three\" replaced it"
    );
    tokio::select! {
        _ = &mut turn => panic!("the turn ended while the agent's stream was open"),
        () = tokio::time::sleep(steps::COALESCE) => {}
    }
    assert_eq!(
        texts(&w),
        ["one", "three"],
        "told when due, with the stream still open"
    );
}

#[tokio::test]
async fn a_first_turn_without_a_task_state_ends_as_failed() {
    let w = World::new(true).await;
    w.agent.script_stream(Ok(vec![]));
    let step = w
        .run(Step::start(ID, "widgets", "go"), &spec(Updates::Auto))
        .await;
    assert!(
        matches!(step.next, Some(Next::End(EndCause::Failed { .. }))),
        "{:?}",
        step.next
    );
    assert_eq!(w.agent.count("GetTask"), 0);
}

// The truth at the end: a refused follow-up asks GetTask before anything ends.

#[tokio::test]
async fn a_follow_up_refused_as_finished_ends_with_what_get_task_shows() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("blue")).await;
    // The task completed before the reply reached it: the agent refuses the message as
    // sent to a terminal task (-32004), and GetTask shows how it ended.
    w.agent.script_stream(Err(RemoteError::UnsupportedOperation(
        "task is in a terminal state".into(),
    )));
    w.agent
        .set_task(task(TaskState::Completed, "Finished before your reply"));
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(step.next, Some(Next::End(EndCause::Final)));
    assert!(
        w.agent
            .calls()
            .iter()
            .any(|c| c == "SendStreamingMessage:blue")
    );
    assert_eq!(
        w.agent.calls().last().map(String::as_str),
        Some("GetTask:r-1")
    );
    let closed = w.end(&step).await;
    assert_eq!(
        closed.seq(),
        None,
        "the final state already told the parent"
    );
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ],
        "COMPLETED, not FAILED"
    );
    assert_eq!(
        w.store.outbox()[1].text,
        "Finished before your reply",
        "the agent's own words"
    );
    assert_eq!(w.agent.count("CancelTask"), 0);
}

#[tokio::test]
async fn a_follow_up_that_breaks_before_its_first_event_parks_on_what_get_task_shows() {
    let refusals: Vec<(&str, StreamScript)> = vec![
        (
            "a stream that errors before its first event",
            Ok(vec![Err(RemoteError::Transport("stream broke".into()))]),
        ),
        ("a stream with no task state", Ok(vec![])),
        (
            "task not found",
            Err(RemoteError::TaskNotFound("unknown".into())),
        ),
    ];
    for (why, script) in refusals {
        let w = World::new(true).await;
        let spec = spec(Updates::Off);
        let step = first_turn(&w, &spec).await;
        assert!(w.park(&step, "p1").await);
        w.ring(reply("blue")).await;
        w.agent.script_stream(script);
        w.agent.set_task(task(TaskState::Working, "on it"));
        let step = w.wake(step, Woke::Rung, &spec).await;
        assert_eq!(park_shape(&step), PLAIN, "{why}");
        assert_eq!(park_no(&step), 2, "{why}");
        assert_eq!(
            w.notes(),
            [
                (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
                (2, "TASK_STATE_WORKING".into(), false),
            ],
            "{why}: GetTask's state applied"
        );
        assert!(!w.store.snapshot(ID).unwrap().closed, "{why}");
        // The agent may have the reply: it is not sent a second time.
        assert_eq!(
            w.agent.count("SendStreamingMessage"),
            2,
            "{why}: the first turn and the reply, once"
        );
    }
}

/// The first turn reached the agent (the row has its task), then the Lambda failed with
/// a service error and Step Functions ran the step again with the same input: sent again,
/// the prompt would arrive as a follow-up, taken for the answer to the agent's question.
#[tokio::test]
async fn a_first_turn_run_again_after_it_reached_the_agent_sends_nothing_and_asks() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    first_turn(&w, &spec).await;
    assert_eq!(w.agent.count("SendStreamingMessage"), 1);
    let gets = w.agent.count("GetTask");
    let again = first_turn_of(
        &w,
        std::future::ready(Ok(&w.agent)),
        &spec,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(w.agent.count("SendStreamingMessage"), 1, "not sent twice");
    assert_eq!(w.agent.count("GetTask"), gets + 1, "asked instead");
    assert!(
        matches!(again.next, Some(Next::Park { .. })),
        "parks on the question: {:?}",
        again.next
    );
    assert_eq!(w.notes().len(), 1, "nothing new to tell");
}

#[tokio::test]
async fn a_turn_that_step_functions_runs_again_sends_the_same_message_id() {
    let w = World::new(false).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    w.ring(reply("blue")).await;
    let mut woke = step.clone();
    woke.park = Some(ParkOutcome::woke(Woke::Rung));
    let turn = steps::wake(&w.invocation(), woke, None, 100, PACING)
        .await
        .unwrap();
    assert!(
        matches!(turn.next, Some(Next::Turn { .. })),
        "{:?}",
        turn.next
    );
    // The Turn state's Lambda fails after sending (a service error), and Step Functions
    // retries it with the same input.
    for _ in 0..2 {
        w.agent
            .script_stream(Ok(vec![Ok(update(TaskState::Working, "on it"))]));
        steps::turn(
            &w.invocation().with_spec(Some(&spec).cloned()),
            turn.clone(),
            Duration::from_secs(5),
            PACING,
        )
        .await
        .unwrap();
    }
    let ids = w.agent.message_ids();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[1], ids[2], "the retried reply keeps its message id");
    assert_ne!(
        ids[0], ids[1],
        "the first turn and the reply are two messages"
    );
}

#[tokio::test]
async fn a_follow_up_refused_while_get_task_fails_too_ends_as_failed() {
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(reply("blue")).await;
    w.agent
        .script_stream(Err(RemoteError::UnsupportedOperation("terminal".into())));
    w.agent
        .fail_gets(vec![RemoteError::Transport("connection failed".into())]);
    let step = w.wake(step, Woke::Rung, &spec).await;
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("expected a failed end, got {:?}", step.next);
    };
    assert!(reason.contains("GetTask failed too"), "{reason}");
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), Some(2));
    assert_eq!(
        w.notes().last().cloned(),
        Some((2, "TASK_STATE_FAILED".into(), true))
    );
    assert_eq!(w.agent.count("CancelTask"), 0, "a failure cancels nothing");
}

// A final state a follow applied wins over anything recorded or decided after it.

#[tokio::test]
async fn a_final_state_applied_by_a_follow_wins_over_a_pending_reply() {
    let w = World::new(false).await;
    let spec = spec(Updates::Follow);
    let step = first_turn(&w, &spec).await;
    let parked = doorbell::store_park(&w.store, &w.bell, ID, park_no(&step), "f1")
        .await
        .unwrap()
        .unwrap();
    // The parent's reply lands, and before the wake runs the follow applies COMPLETED.
    w.ring(reply("blue")).await;
    let done = standin::state::remote_out(REMOTE, TaskState::Completed, "done");
    doorbell::follow_report(
        &w.teller(),
        &w.bell,
        &parked,
        parked.epoch,
        Some(&done),
        FollowOutcome::WindowOver,
    )
    .await
    .unwrap();
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert_eq!(
        step.next,
        Some(Next::End(EndCause::Final)),
        "the closed row ends the stand-in; the reply is not sent"
    );
    assert_eq!(
        w.agent.count("SendStreamingMessage"),
        1,
        "only the first turn"
    );
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ]
    );
}

#[tokio::test]
async fn a_cancel_decided_before_a_final_state_writes_no_second_note() {
    // The wake took the parent's cancel, and a final state reached the row before the
    // end's close (applied here directly: the rule is the store's, whoever applies it).
    // The final applied first wins: the end writes no CANCELED note and does not cancel
    // the remote task.
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let step = first_turn(&w, &spec).await;
    assert!(w.park(&step, "p1").await);
    w.ring(WakeEvent::Cancel {
        reason: "stop".into(),
    })
    .await;
    let step = w.wake(step, Woke::Rung, &spec).await;
    assert!(matches!(
        step.next,
        Some(Next::End(EndCause::Cancelled { .. }))
    ));
    let done = standin::state::remote_out(REMOTE, TaskState::Completed, "done");
    doorbell::apply(&w.teller(), ID, &done, &Guard::Open)
        .await
        .unwrap();
    let closed = w.end(&step).await;
    assert_eq!(closed.seq(), None);
    assert_eq!(w.agent.count("CancelTask"), 0);
    assert_eq!(
        w.notes(),
        [
            (1, "TASK_STATE_INPUT_REQUIRED".into(), false),
            (2, "TASK_STATE_COMPLETED".into(), true),
        ]
    );
}

#[tokio::test]
async fn the_parents_parts_reach_the_agent_on_the_first_turn_and_on_a_reply() {
    use standin_wire::{FileContent, InputFile, InputPart};
    let w = World::new(true).await;
    let spec = spec(Updates::Off);
    let data = |json: serde_json::Value| InputPart::Data {
        data: json.as_object().cloned().unwrap(),
    };
    let given = vec![
        data(serde_json::json!({"rows": [1, 2, 3]})),
        InputPart::File(InputFile {
            name: Some("contract.txt".into()),
            media_type: Some("text/plain".into()),
            content: FileContent::Bytes("c2lnbmVk".into()),
        }),
    ];
    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let first = Step::start(ID, "widgets", "go").with_parts(given.clone());
    // As Step Functions carries it: the parts survive the execution's JSON.
    let first: Step = serde_json::from_value(serde_json::to_value(&first).unwrap()).unwrap();
    let mut step = w.run(first, &spec).await;
    assert_eq!(w.agent.turns()[0].text, "go");
    assert_eq!(w.agent.turns()[0].parts, given);
    assert!(
        step.parts.is_null(),
        "sent once, then dropped from the state"
    );

    assert!(w.park(&step, "p1").await);
    let answer = vec![data(serde_json::json!({"colour": "blue"}))];
    w.ring(WakeEvent::Reply {
        text: "blue".into(),
        parts: answer.clone(),
        id: Some("r1".into()),
    })
    .await;
    w.agent
        .script_stream(Ok(vec![Ok(update(TaskState::Completed, "done"))]));
    w.agent.set_task(task(TaskState::Completed, "done"));
    step.park = Some(ParkOutcome::woke(Woke::Rung));
    w.wake(step, Woke::Rung, &spec).await;
    let turns = w.agent.turns();
    assert_eq!((turns[1].text.as_str(), &turns[1].parts), ("blue", &answer));
}

/// A parent that starts the execution itself writes the parts as it likes: a bad one ends
/// the stand-in before the agent is reached, and the parent hears which part and why.
#[tokio::test]
async fn a_step_functions_parent_s_bad_part_ends_the_stand_in_naming_it() {
    let w = World::new(true).await;
    let mut first = Step::start(ID, "widgets", "go");
    first.parts = serde_json::json!([
        {"kind": "data", "data": {"ok": true}},
        {"kind": "file", "url": "https://x.test/a", "bytes": "YQ=="},
    ]);
    let step = w.run(first, &spec(Updates::Auto)).await;
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("{:?}", step.next)
    };
    assert!(
        reason.starts_with("parts[1]: a file needs exactly one"),
        "{reason}"
    );
    assert!(w.agent.turns().is_empty(), "the agent was not sent a thing");
    // Not a list at all: read from the execution's input, and refused the same way.
    let w = World::new(true).await;
    let input = serde_json::json!({"task_id": ID, "agent": "widgets", "message": "go",
        "parts": {"kind": "data"}});
    let first: Step = serde_json::from_value(input).unwrap();
    let step = w.run(first, &spec(Updates::Auto)).await;
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("{:?}", step.next)
    };
    assert!(reason.starts_with("parts: must be a list"), "{reason}");
}

#[tokio::test]
async fn a_step_functions_parent_s_first_turn_begins_a_trace_the_row_and_notes_keep() {
    let w = World::new(true).await;
    let task_id = "sfn-traced";
    let first = Step::start(task_id, "widgets", "go").traced([9; 24]);
    let traceparent = first
        .traceparent
        .clone()
        .expect("a first turn begins a trace");
    let trace_id = standin_wire::TraceContext::parse("t", &traceparent)
        .unwrap()
        .trace_id()
        .to_owned();
    // Only a first turn with none begins one.
    assert_eq!(first.clone().traced([1; 24]), first);
    let mut later = Step::start(task_id, "widgets", "go");
    later.message = None;
    assert_eq!(later.clone().traced([1; 24]).traceparent, None);

    w.agent.script_stream(Ok(vec![
        Ok(first_event()),
        Ok(update(TaskState::InputRequired, "q")),
    ]));
    w.agent.set_task(task(TaskState::InputRequired, "q"));
    let step = w.run(first, &spec(Updates::Off)).await;
    assert_eq!(step.traceparent.as_deref(), Some(traceparent.as_str()));
    let row = w.store.snapshot(task_id).unwrap();
    assert_eq!(row.traceparent.as_deref(), Some(traceparent.as_str()));
    let notes: Vec<_> = w
        .store
        .outbox()
        .into_iter()
        .filter(|n| n.task_id == task_id)
        .collect();
    assert!(!notes.is_empty());
    for note in notes {
        assert_eq!(
            note.trace_id.as_deref(),
            Some(trace_id.as_str()),
            "{note:?}"
        );
    }
}

#[tokio::test]
async fn a_step_functions_parent_s_bad_traceparent_ends_the_stand_in_naming_it() {
    let w = World::new(true).await;
    let mut first = Step::start("sfn-badtrace", "widgets", "go");
    first.traceparent = Some("00-not-a-trace-01".into());
    let step = w.run(first, &spec(Updates::Auto)).await;
    let Some(Next::End(EndCause::Failed { reason })) = &step.next else {
        panic!("{:?}", step.next)
    };
    assert!(
        reason.starts_with("traceparent: must be a W3C traceparent"),
        "{reason}"
    );
    assert!(w.agent.turns().is_empty(), "the agent was not sent a thing");
    let row = w.store.snapshot("sfn-badtrace").unwrap();
    assert_eq!(
        row.traceparent, None,
        "a trace that does not read is not kept"
    );
}
