use std::collections::BTreeSet;

use super::*;
use crate::push::PushToken;
use crate::row::{FollowOutcome, Pending, WatchMode};
use crate::state::remote_out;
use standin_wire::TaskState;

fn keys(item: &Item) -> BTreeSet<&str> {
    item.keys().map(String::as_str).collect()
}

fn map<'a>(item: &'a Item, name: &str) -> &'a Item {
    match item.get(name) {
        Some(AttributeValue::M(inner)) => inner,
        other => panic!("{name} is not a map: {other:?}"),
    }
}

/// A row with every field set, so every attribute it can have is written.
fn full_row() -> Row {
    let mut row = Row::new("si-1", "writer");
    row.remote_task_id = Some("r".into());
    row.context_id = Some("c".into());
    row.watch = Some(Watch {
        mode: WatchMode::Push,
        config_id: Some("cfg".into()),
        token_digest: Some(PushToken::generate().digest()),
    });
    row.last = Some(remote_out("r", TaskState::Working, "t"));
    row.closed = true;
    row.epoch = 2;
    row.woken = 1;
    row.taken = Some(Taken {
        park: 1,
        event: None,
    });
    row.park_token = Some("tok".into());
    row.pending = Pending {
        cancel: Some("stop".into()),
        replies: vec![
            "x".into(),
            QueuedReply::new(
                "y",
                &[standin_wire::InputPart::Text {
                    text: "more".into(),
                }],
            ),
        ],
        push: Some(PendingPush {
            claimed: None,
            asked: true,
        }),
        push_id: Some("0123456789abcdef".into()),
        follow: Some(FollowReport {
            epoch: 2,
            outcome: FollowOutcome::Unchanged,
        }),
    };
    row.seq = 3;
    row.reply_ids = vec!["r-1".into()];
    row.created_at = Some("2026-12-01T00:00:00Z".into());
    row.parent_task_token = Some("parent".into());
    row.lease = Some("lease-2".into());
    row.hearing = Some("h-1".into());
    row.hearing_park = 2;
    row.hearing_until = 1_000;
    row.generation = 2;
    row.previous_lease = Some("lease-1".into());
    row.agent_entry = Some(r#"{"id":"writer","url":"http://h"}"#.into());
    row.traceparent = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
    row
}

#[test]
fn every_attribute_name_the_expressions_use_is_one_the_row_serialises() {
    let item: Item = serde_dynamo::to_item(full_row()).expect("a row serialises");
    let written = keys(&item);
    for name in [
        TASK_ID,
        AGENT,
        REMOTE_TASK_ID,
        CONTEXT_ID,
        WATCH,
        LAST,
        CLOSED,
        EPOCH,
        WOKEN,
        TAKEN,
        PARK_TOKEN,
        PENDING,
        SEQ,
        REPLY_IDS,
        PARENT_TASK_TOKEN,
        LEASE,
        GENERATION,
        PREVIOUS_LEASE,
        HEARING,
        HEARING_PARK,
        HEARING_UNTIL,
    ] {
        assert!(
            written.contains(name),
            "{name} is not a row attribute: {written:?}"
        );
    }
    let watch = keys(map(&item, WATCH));
    assert!(
        watch.contains(MODE) && watch.contains(TOKEN_DIGEST),
        "{watch:?}"
    );
    assert_eq!(
        keys(map(&item, PENDING)),
        BTreeSet::from([CANCEL, REPLIES, PUSH, PUSH_ID, FOLLOW])
    );
    assert!(
        !written.contains(EXPIRES_AT),
        "the TTL is the store's, not the row's"
    );
}

/// A resource of the template, from its name to the next resource.
fn resource<'a>(template: &'a str, name: &str) -> &'a str {
    let start = template
        .find(&format!("\n  {name}:\n"))
        .unwrap_or_else(|| panic!("{name} in the template"));
    let body = &template[start + 1..];
    let end = body
        .match_indices("\n  ")
        .find(|(i, _)| body[i + 3..].starts_with(|c: char| c.is_ascii_alphabetic()))
        .map_or(body.len(), |(i, _)| i);
    &body[..end]
}

#[test]
fn the_keys_and_the_ttl_attribute_are_the_templates() {
    let template = include_str!("../../../../../template.yaml");
    let ttl = format!("AttributeName: {EXPIRES_AT}");
    let hash = format!("{{ AttributeName: {TASK_ID}, KeyType: HASH }}");
    let rows = resource(template, "Table");
    assert!(rows.contains(&ttl) && rows.contains(&hash), "{rows}");
    let notes = resource(template, "NotesTable");
    assert!(notes.contains(&ttl) && notes.contains(&hash), "{notes}");
    assert!(notes.contains(&format!("{{ AttributeName: {SEQ}, KeyType: RANGE }}")));
    let index = format!(
        "- IndexName: {BY_AGENT}\n          KeySchema:\n            - {{ AttributeName: {AGENT}, KeyType: HASH }}\n            - {{ AttributeName: {CREATED_AT}, KeyType: RANGE }}\n          Projection: {{ ProjectionType: KEYS_ONLY }}"
    );
    assert!(rows.contains(&index), "{rows}");
    // The index's keys are the row's own attributes, as it serialises them.
    let item: Item = serde_dynamo::to_item(full_row()).expect("a row serialises");
    assert!(
        item.contains_key(AGENT) && item.contains_key(CREATED_AT),
        "{item:?}"
    );
}

/// A reply's parts are one string on the row, whatever they hold: DynamoDB's nesting and
/// number limits never meet a parent's data. A reply of text alone stays a string.
#[test]
fn a_queued_reply_s_parts_are_one_string_attribute() {
    let item: Item = serde_dynamo::to_item(full_row()).expect("a row serialises");
    let Some(AttributeValue::M(pending)) = item.get(PENDING) else {
        panic!("pending is a map: {item:?}")
    };
    let Some(AttributeValue::L(replies)) = pending.get(REPLIES) else {
        panic!("replies is a list: {pending:?}")
    };
    assert!(matches!(&replies[0], AttributeValue::S(text) if text == "x"));
    let AttributeValue::M(with_parts) = &replies[1] else {
        panic!("a reply with parts is a map: {:?}", replies[1])
    };
    assert!(
        matches!(with_parts.get("parts"), Some(AttributeValue::S(json)) if json.starts_with('[')),
        "{with_parts:?}"
    );
}
