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

/// A fresh row table (HASH task_id, its index by agent: HASH agent, RANGE created_at,
/// keys only) and notes table (HASH task_id, RANGE seq), as the template makes them.
async fn store() -> DynamoRowStore {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests with `make test`");
    let config = aws_config::load_from_env().await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let suffix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
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
