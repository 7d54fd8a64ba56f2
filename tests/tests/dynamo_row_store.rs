//! The row store's contract (`standin::row::contract`) against DynamoDB (LocalStack's
//! DynamoDB Local): the same checks the in-memory store passes, on the real conditional
//! writes and the transactions that write a row change together with its note.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use standin::row::dynamo::DynamoRowStore;

fn attribute(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .unwrap()
}

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .unwrap()
}

/// LocalStack's DynamoDB, and a suffix that makes a table's name this test's own.
async fn dynamodb() -> (aws_sdk_dynamodb::Client, u128) {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests with `make test`");
    let config = aws_config::load_from_env().await;
    let suffix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    (aws_sdk_dynamodb::Client::new(&config), suffix)
}

/// A fresh row table (HASH task_id, its index by agent: HASH agent, RANGE created_at,
/// keys only) and notes table (HASH task_id, RANGE seq), as the template makes them.
async fn store() -> DynamoRowStore {
    let (client, suffix) = dynamodb().await;
    let table = format!("rows-{suffix}");
    let notes_table = format!("notes-{suffix}");
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("task_id", ScalarAttributeType::S))
        .attribute_definitions(attribute("agent", ScalarAttributeType::S))
        .attribute_definitions(attribute("created_at", ScalarAttributeType::S))
        .key_schema(key("task_id", KeyType::Hash))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("by_agent")
                .key_schema(key("agent", KeyType::Hash))
                .key_schema(key("created_at", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::KeysOnly)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("table created");
    client
        .create_table()
        .table_name(&notes_table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("task_id", ScalarAttributeType::S))
        .attribute_definitions(attribute("seq", ScalarAttributeType::N))
        .key_schema(key("task_id", KeyType::Hash))
        .key_schema(key("seq", KeyType::Range))
        .send()
        .await
        .expect("notes table created");
    DynamoRowStore::new(client, table, notes_table)
}

standin::row_store_contract!(store().await);

/// A fresh turns table (HASH task_id, RANGE turn_key; local index `in_order` on
/// turn_order, all attributes), as the template makes it.
async fn turns_table() -> standin_control_plane::turns::dynamo::DynamoTurns {
    use aws_sdk_dynamodb::types::LocalSecondaryIndex;
    let (client, suffix) = dynamodb().await;
    let table = format!("turns-{suffix}");
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("task_id", ScalarAttributeType::S))
        .attribute_definitions(attribute("turn_key", ScalarAttributeType::S))
        .attribute_definitions(attribute("turn_order", ScalarAttributeType::S))
        .key_schema(key("task_id", KeyType::Hash))
        .key_schema(key("turn_key", KeyType::Range))
        .local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name("in_order")
                .key_schema(key("task_id", KeyType::Hash))
                .key_schema(key("turn_order", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("turns table created");
    standin_control_plane::turns::dynamo::DynamoTurns::new(client, table)
}

fn turn(
    kind: standin_control_plane::turns::TurnKind,
    id: &str,
    after_seq: u64,
    at: &str,
) -> standin_control_plane::turns::Turn {
    standin_control_plane::turns::Turn {
        kind,
        turn_id: id.into(),
        after_seq,
        at: at.into(),
        text: format!("said {id}"),
        parts: Vec::new(),
    }
}

/// On DynamoDB: a turn recorded again keeps its first record, a reply named `start` is
/// not the start, parts come back as given, and a read gives the newest 100 oldest first.
#[tokio::test]
async fn turns_are_kept_once_and_read_newest_hundred_in_order() {
    use standin_control_plane::turns::{TurnKind, TurnLog};
    let log = turns_table().await;
    let mut start = turn(TurnKind::Start, "start", 0, "2026-12-05T10:00:00.000Z");
    start.parts = standin_wire::parse_parts(
        &serde_json::json!({"parts": [{"kind": "data", "data": {"order": 7}}]}),
        "text",
    )
    .unwrap();
    log.record("t", &start).await.unwrap();
    log.record(
        "t",
        &turn(TurnKind::Reply, "start", 0, "2026-12-05T10:00:00.000Z"),
    )
    .await
    .unwrap();
    log.record(
        "t",
        &turn(TurnKind::Reply, "r-1", 2, "2026-12-05T10:00:02.000Z"),
    )
    .await
    .unwrap();
    // Sent again later, when the row had moved on: the first record stays.
    log.record(
        "t",
        &turn(TurnKind::Reply, "r-1", 5, "2026-12-05T10:00:09.000Z"),
    )
    .await
    .unwrap();
    let read = log.turns("t").await.unwrap();
    let seen: Vec<(TurnKind, &str, u64)> = read
        .iter()
        .map(|t| (t.kind, t.turn_id.as_str(), t.after_seq))
        .collect();
    assert_eq!(
        seen,
        [
            (TurnKind::Start, "start", 0),
            (TurnKind::Reply, "start", 0),
            (TurnKind::Reply, "r-1", 2)
        ]
    );
    assert_eq!(read[0].parts, start.parts);

    for i in 0..105u64 {
        let at = format!("2026-12-05T11:{:02}:{:02}.000Z", i / 60, i % 60);
        log.record("long", &turn(TurnKind::Reply, &format!("r-{i:03}"), i, &at))
            .await
            .unwrap();
    }
    let read = log.turns("long").await.unwrap();
    assert_eq!(read.len(), 100);
    assert_eq!(read[0].turn_id, "r-005", "the newest hundred");
    assert_eq!(read[99].turn_id, "r-104", "oldest first");
}
