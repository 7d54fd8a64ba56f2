//! The stand-ins' pages, and the replies' queue and ids.

use super::*;

/// An agent's stand-ins, newest first, a page at a time, each once; another agent's
/// never, not even as where a page starts.
pub async fn an_agents_stand_ins_are_listed_newest_first_a_page_at_a_time<S: RowStore>(store: &S) {
    for i in 0..5 {
        let mut row = Row::new(format!("mine-{i}"), "agent-listed");
        row.created_at = Some(format!("2026-11-30T10:00:0{i}.000Z"));
        store.create(&row).await.expect("created");
        let mut other = Row::new(format!("other-{i}"), "agent-other");
        other.created_at = Some(format!("2026-11-30T10:00:0{i}.500Z"));
        store.create(&other).await.expect("created");
    }
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    for _ in 0..10 {
        let (rows, next) = store
            .list_of_agent("agent-listed", after.as_deref(), 2)
            .await
            .expect("listed");
        assert!(rows.len() <= 2, "a page holds at most the limit");
        seen.extend(rows.into_iter().map(|r| r.task_id));
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, ["mine-4", "mine-3", "mine-2", "mine-1", "mine-0"]);
    let (rows, next) = store
        .list_of_agent("agent-listed", Some("other-3"), 2)
        .await
        .expect("listed");
    assert!(
        rows.is_empty() && next.is_none(),
        "another agent's id starts nowhere"
    );
    let (rows, _) = store
        .list_of_agent("agent-nobody", None, 2)
        .await
        .expect("listed");
    assert!(rows.is_empty());
}

pub async fn list_pages_through_every_row_once<S: RowStore>(store: &S) {
    let ids: Vec<String> = (0..7).map(|i| format!("list-{i}")).collect();
    for id in &ids {
        let mut row = Row::new(id, "agent-a");
        row.created_at = Some(format!("2026-11-30T10:00:0{}Z", id.len()));
        store.create(&row).await.expect("created");
    }
    let (mut seen, mut after, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let (rows, next) = store.list(after.as_deref(), 3).await.expect("listed");
        assert!(rows.len() <= 3, "a page holds at most the limit");
        seen.extend(rows.into_iter().map(|r| (r.task_id, r.created_at)));
        pages += 1;
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    seen.sort();
    let expected: Vec<(String, Option<String>)> = ids
        .iter()
        .map(|id| (id.clone(), Some(format!("2026-11-30T10:00:0{}Z", id.len()))))
        .collect();
    assert_eq!(seen, expected);
    assert!(
        pages >= 3,
        "7 rows at 3 a page take at least 3 pages, took {pages}"
    );
}

pub async fn replies_queue_up_to_the_bound_in_the_write_itself<S: RowStore>(store: &S) {
    push_row(store).await;
    let reply = |t: &str| WakeEvent::reply(t);
    for i in 0..crate::row::MAX_QUEUED_REPLIES {
        store
            .record(ID, &reply(&format!("r{i}")), &Guard::Open)
            .await
            .expect("queued");
    }
    assert_eq!(
        store.record(ID, &reply("one too many"), &Guard::Open).await,
        Err(StoreError::RepliesFull(ID.into()))
    );
    store.park(ID, 1, "t").await.expect("parked");
    store.drain(ID, None, 1).await.expect("drained");
    store
        .record(ID, &reply("room again"), &Guard::Open)
        .await
        .expect("queued");
}

pub async fn a_named_reply_is_queued_once_in_the_write_itself<S: RowStore>(store: &S) {
    push_row(store).await;
    let named = |text: &str, id: &str| WakeEvent::Reply {
        parts: Vec::new(),
        text: text.into(),
        id: Some(id.into()),
    };
    for _ in 0..3 {
        store
            .record(ID, &named("blue", "r1"), &Guard::Open)
            .await
            .expect("accepted");
    }
    let row = store
        .record(ID, &named("green", "r2"), &Guard::Open)
        .await
        .expect("accepted");
    assert_eq!(row.pending.replies, ["blue", "green"]);
    assert_eq!(row.reply_ids, ["r1", "r2"]);
    store.park(ID, 1, "t").await.expect("parked");
    store.drain(ID, None, 1).await.expect("drained");
    let row = store
        .record(ID, &named("blue", "r1"), &Guard::Open)
        .await
        .expect("a retry after its turn is accepted, not queued");
    assert_eq!(row.pending.replies, ["green"]);
}

/// A reply with data and a file is kept whole beside replies of text alone, and each is
/// taken once, in order, by the park it wakes (the drain's write checks the reply it read).
pub async fn a_reply_s_parts_are_kept_and_taken_with_it<S: RowStore>(store: &S) {
    use standin_wire::{FileContent, InputFile, InputPart};
    push_row(store).await;
    // Numbers past DynamoDB's range and nesting past its 32 levels: a parent may send both.
    let mut deep = serde_json::json!("bottom");
    for _ in 0..40 {
        deep = serde_json::json!({ "in": deep });
    }
    let parts = vec![
        InputPart::Data {
            data: serde_json::json!({"colour": "blue", "rgb": [0, 0, 255], "big": 1e200, "deep": deep})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        },
        InputPart::File(InputFile {
            name: Some("swatch.txt".into()),
            media_type: Some("text/plain".into()),
            content: FileContent::Bytes("Ymx1ZQ==".into()),
        }),
    ];
    let with_parts = WakeEvent::Reply {
        text: "blue".into(),
        parts: parts.clone(),
        id: Some("r1".into()),
    };
    for event in [&reply("first"), &with_parts, &reply("last")] {
        store.record(ID, event, &Guard::Open).await.expect("queued");
    }
    let mut taken = Vec::new();
    for park in 1..=3 {
        store.park(ID, park, "t").await.expect("parked");
        let drained = store.drain(ID, None, park).await.expect("drained");
        taken.push(drained.event);
    }
    let text_of = |event: &Option<WakeEvent>| match event {
        Some(WakeEvent::Reply { text, parts, .. }) => (text.clone(), parts.len()),
        other => panic!("a reply, got {other:?}"),
    };
    assert_eq!(
        taken.iter().map(text_of).collect::<Vec<_>>(),
        [("first".into(), 0), ("blue".into(), 2), ("last".into(), 0)]
    );
    assert!(
        matches!(&taken[1], Some(WakeEvent::Reply { parts: kept, .. }) if *kept == parts),
        "the parts come back as given: {:?}",
        taken[1]
    );
    let row = store.get(ID).await.expect("read").expect("row");
    assert!(row.pending.replies.is_empty(), "{:?}", row.pending);
}

/// Every reply is named, so a conversation of hundreds of replies must not grow the row
/// toward DynamoDB's item limit: the oldest ids go, the latest still refuse a retry.
pub async fn a_long_conversation_keeps_the_latest_reply_ids_only<S: RowStore>(store: &S) {
    use crate::row::{REPLY_IDS_KEPT, REPLY_IDS_MAX};
    push_row(store).await;
    let named = |i: usize| WakeEvent::Reply {
        parts: Vec::new(),
        text: format!("reply {i}"),
        id: Some(format!("r-{i}")),
    };
    let replies = REPLY_IDS_MAX + REPLY_IDS_KEPT + 5;
    for i in 0..replies {
        store
            .record(ID, &named(i), &Guard::Open)
            .await
            .expect("queued");
        let park = u64::try_from(i).unwrap() + 1;
        store.park(ID, park, "t").await.expect("parked");
        store.drain(ID, None, park).await.expect("drained");
    }
    let row = store.get(ID).await.unwrap().unwrap();
    assert!(
        (REPLY_IDS_KEPT..=REPLY_IDS_MAX).contains(&row.reply_ids.len()),
        "{} ids kept",
        row.reply_ids.len()
    );
    let latest: Vec<String> = (replies - REPLY_IDS_KEPT..replies)
        .map(|i| format!("r-{i}"))
        .collect();
    assert!(row.reply_ids.ends_with(&latest), "{:?}", row.reply_ids);
    let row = store
        .record(ID, &named(replies - REPLY_IDS_KEPT), &Guard::Open)
        .await
        .expect("a retry of a recent reply is accepted");
    assert!(row.pending.replies.is_empty(), "and not queued again");
}

pub async fn webhooks_are_set_bounded_marked_and_deleted<S: RowStore + crate::row::Webhooks>(
    store: &S,
) {
    use crate::row::{MAX_WEBHOOKS, Webhook, WebhookSecret};
    let missing = store
        .set_webhook("nobody", "w", &Webhook::new("https://a/", 0))
        .await;
    assert_eq!(missing, Err(StoreError::NotFound("nobody".into())));
    store
        .create(&Row::new(ID, "agent-a"))
        .await
        .expect("created");
    let mut first = Webhook::new("https://parent.example/hook", 0);
    first.token = Some(WebhookSecret::new("parent-token"));
    // An id with characters an expression's placeholder may not hold.
    let row = store
        .set_webhook(ID, "cfg:1.a-b", &first)
        .await
        .expect("set");
    assert_eq!(
        row.webhooks["cfg:1.a-b"], first,
        "kept whole, token and all"
    );
    for i in 1..MAX_WEBHOOKS {
        store
            .set_webhook(ID, &format!("w{i}"), &Webhook::new("https://b/", 0))
            .await
            .expect("within the bound");
    }
    let past = store
        .set_webhook(ID, "past", &Webhook::new("https://c/", 0))
        .await;
    assert_eq!(past, Err(StoreError::Refused(ID.into())), "past the bound");
    assert!(
        store
            .mark_webhook(ID, "cfg:1.a-b", first.version, 3)
            .await
            .expect("mark")
    );
    assert!(
        !store
            .mark_webhook(ID, "cfg:1.a-b", first.version, 2)
            .await
            .expect("mark"),
        "never back"
    );
    assert!(
        !store
            .mark_webhook(ID, "cfg:1.a-b", first.version + 1, 9)
            .await
            .expect("mark"),
        "another version's mark"
    );
    let row = store.get(ID).await.expect("read").expect("row");
    assert_eq!(row.webhooks["cfg:1.a-b"].through, 3);
    let since = store
        .fail_webhook(ID, "cfg:1.a-b", first.version, 1_000)
        .await
        .expect("fail");
    assert_eq!(since, Some(1_000));
    let again = store
        .fail_webhook(ID, "cfg:1.a-b", first.version, 2_000)
        .await
        .expect("fail");
    assert_eq!(again, Some(1_000), "failing since the first failure");
    assert_eq!(
        store
            .fail_webhook(ID, "cfg:1.a-b", first.version + 1, 3_000)
            .await
            .expect("fail"),
        None,
        "another version's"
    );
    assert!(
        store
            .mark_webhook(ID, "cfg:1.a-b", first.version, 4)
            .await
            .expect("mark")
    );
    let row = store.get(ID).await.expect("read").expect("row");
    assert_eq!(
        row.webhooks["cfg:1.a-b"].failing_since, None,
        "a note taken clears it"
    );
    assert!(
        store
            .delete_webhook(ID, "cfg:1.a-b")
            .await
            .expect("deleted")
    );
    assert!(!store.delete_webhook(ID, "cfg:1.a-b").await.expect("again"));
    assert!(
        !store
            .mark_webhook(ID, "cfg:1.a-b", first.version, 9)
            .await
            .expect("mark")
    );
    let row = store
        .set_webhook(ID, "again", &Webhook::new("https://d/", 0))
        .await
        .expect("room again");
    assert_eq!(row.webhooks.len(), MAX_WEBHOOKS);
}

/// A note is written only on the webhooks as read: one from a read before a webhook was
/// set is written again on the row as it is, so it says the webhook is there (its item
/// is flagged for the webhook queue, and the row returned sends it there at once).
pub async fn a_note_written_from_a_read_before_a_webhook_was_set_knows_the_webhook<
    S: RowStore + crate::row::Webhooks,
>(
    store: &S,
) {
    use crate::row::Webhook;
    use crate::state::remote_out;
    use standin_wire::TaskState;
    store
        .create(&Row::new(ID, "agent-a"))
        .await
        .expect("created");
    let seen = store.get(ID).await.expect("read").expect("row");
    store
        .set_webhook(ID, "w", &Webhook::new("https://parent.example/hook", 0))
        .await
        .expect("set");
    let applied = store
        .apply(
            ID,
            Some(&seen),
            &remote_out("r-1", TaskState::Working, "one"),
            &Guard::Open,
        )
        .await
        .expect("applied");
    let Applied::Changed { row, note } = applied else {
        panic!("a change: {applied:?}");
    };
    assert_eq!(note.seq, 1);
    assert!(
        row.webhooks.contains_key("w"),
        "written on the row as it is: {row:?}"
    );
}
