//! The DynamoDB row store against DynamoDB (LocalStack's DynamoDB Local): the same
//! doorbell rules the in-memory store is tested for, on the real conditional writes.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use standin::a2a::TaskState;
use standin::adapters::dynamo::DynamoRowStore;
use standin::domain::push::PushToken;
use standin::domain::remote::remote_out;
use standin::domain::row::{
    FollowOutcome, FollowReport, Guard, PushClaim, Row, WakeEvent, Watch, WatchMode,
};
use standin::ports::{Applied, RowStore, StoreError};

async fn store() -> DynamoRowStore {
    std::env::var("AWS_ENDPOINT_URL")
        .expect("AWS_ENDPOINT_URL is not set: run these tests with `make test`");
    let config = aws_config::load_from_env().await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let table = format!(
        "rows-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("task_id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("task_id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("table created");
    DynamoRowStore::new(client, table)
}

const ID: &str = "local/1?#";
const REMOTE: &str = "remote-1";

async fn push_row(store: &DynamoRowStore) -> PushToken {
    let token = PushToken::generate();
    let row = Row::new(ID, "agent-a");
    store.create(&row).await.expect("created");
    assert_eq!(
        store.create(&row).await,
        Err(StoreError::AlreadyExists(ID.into()))
    );
    store
        .set_remote(ID, REMOTE, Some("ctx-1"))
        .await
        .expect("remote");
    let watch = Watch {
        mode: WatchMode::Push,
        config_id: Some("cfg".into()),
        token_digest: Some(token.digest()),
    };
    store.set_watch(ID, &watch).await.expect("watch");
    token
}

#[tokio::test]
async fn rows_round_trip_and_parks_start_epochs() {
    let store = store().await;
    push_row(&store).await;
    let row = store.get(ID).await.expect("get").expect("row");
    assert_eq!(
        (
            row.remote_task_id.as_deref(),
            row.context_id.as_deref(),
            row.mode()
        ),
        (Some(REMOTE), Some("ctx-1"), WatchMode::Push)
    );
    assert_eq!(store.park(ID, "t1").await.expect("park").epoch, 1);
    let second = store.park(ID, "t2").await.expect("park");
    assert_eq!(
        (second.epoch, second.park_token.as_deref()),
        (2, Some("t2"))
    );
    assert_eq!(store.get("nobody").await.expect("get"), None);
    assert_eq!(
        store.park("nobody", "t").await,
        Err(StoreError::NotFound("nobody".into()))
    );
}

#[tokio::test]
async fn drain_takes_by_priority_and_leaves_the_rest() {
    let store = store().await;
    push_row(&store).await;
    let events = [
        WakeEvent::Follow {
            epoch: 3,
            outcome: FollowOutcome::Changed { is_final: false },
        },
        WakeEvent::Push { claimed: None },
        WakeEvent::Reply {
            text: "first".into(),
        },
        WakeEvent::Reply {
            text: "second".into(),
        },
        WakeEvent::Cancel {
            reason: "stop".into(),
        },
        WakeEvent::Cancel {
            reason: "ignored: the first reason stays".into(),
        },
    ];
    for e in &events {
        store.record(ID, e, &Guard::Open).await.expect("recorded");
    }
    let row = store.get(ID).await.unwrap().unwrap();
    assert_eq!(
        row.pending.push,
        Some(PushClaim { claimed: None }),
        "a push with no claim is kept"
    );
    assert_eq!(
        row.pending.follow,
        Some(FollowReport {
            epoch: 3,
            outcome: FollowOutcome::Changed { is_final: false }
        })
    );
    let mut order = Vec::new();
    while let Some(e) = store.drain(ID).await.expect("drain").event {
        order.push(e);
    }
    assert_eq!(
        order,
        [
            WakeEvent::Cancel {
                reason: "stop".into()
            },
            WakeEvent::Reply {
                text: "first".into()
            },
            WakeEvent::Reply {
                text: "second".into()
            },
            WakeEvent::Push { claimed: None },
            WakeEvent::Follow {
                epoch: 3,
                outcome: FollowOutcome::Changed { is_final: false }
            },
        ]
    );
}

#[tokio::test]
async fn guards_hold_in_the_write_itself() {
    let store = store().await;
    let token = push_row(&store).await;
    let push = |digest, rid: &str| Guard::Push {
        digest,
        remote_task_id: rid.into(),
    };
    let event = WakeEvent::Push {
        claimed: Some(TaskState::Completed),
    };
    assert!(
        store
            .record(ID, &event, &push(token.digest(), REMOTE))
            .await
            .is_ok()
    );
    let other = PushToken::generate();
    assert_eq!(
        store
            .record(ID, &event, &push(other.digest(), REMOTE))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store
            .record(ID, &event, &push(token.digest(), "remote-2"))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    let parked = store.park(ID, "t").await.unwrap();
    let reply = WakeEvent::Reply { text: "x".into() };
    assert!(
        store
            .record(ID, &reply, &Guard::Epoch(parked.epoch))
            .await
            .is_ok()
    );
    assert_eq!(
        store
            .record(ID, &reply, &Guard::Epoch(parked.epoch - 1))
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.record("nobody", &reply, &Guard::Open).await,
        Err(StoreError::NotFound("nobody".into()))
    );
}

#[tokio::test]
async fn apply_changes_once_and_is_fenced() {
    let store = store().await;
    push_row(&store).await;
    let working = remote_out(REMOTE, TaskState::Working, None, "building");
    assert_eq!(
        store.apply(ID, &working, &Guard::Open).await,
        Ok(Applied::Changed { seq: 1 })
    );
    assert_eq!(
        store.apply(ID, &working, &Guard::Open).await,
        Ok(Applied::Unchanged)
    );
    let asked = remote_out(REMOTE, TaskState::InputRequired, None, "colour?");
    let epoch = store.park(ID, "t").await.unwrap().epoch;
    assert_eq!(
        store.apply(ID, &asked, &Guard::Epoch(epoch - 1)).await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.apply(ID, &asked, &Guard::Epoch(epoch)).await,
        Ok(Applied::Changed { seq: 2 })
    );
    assert_eq!(store.get(ID).await.unwrap().unwrap().last, Some(asked));
}

#[tokio::test]
async fn close_is_first_final_and_idempotent() {
    let store = store().await;
    let token = push_row(&store).await;
    store.park(ID, "t").await.unwrap();
    store
        .record(
            ID,
            &WakeEvent::Reply {
                text: "late".into(),
            },
            &Guard::Open,
        )
        .await
        .unwrap();
    let (row, seq) = store.close(ID, true).await.expect("closed");
    assert!(row.closed && row.park_token.is_none() && row.pending.is_empty());
    assert_eq!(seq, 1);
    assert_eq!(
        store.close(ID, false).await.expect("again").1,
        seq,
        "a second end reuses the sequence number"
    );
    let push = Guard::Push {
        digest: token.digest(),
        remote_task_id: REMOTE.into(),
    };
    assert_eq!(
        store
            .record(ID, &WakeEvent::Push { claimed: None }, &push)
            .await,
        Err(StoreError::Refused(ID.into()))
    );
    assert_eq!(
        store.park(ID, "t2").await,
        Err(StoreError::Refused(ID.into()))
    );
    let raw = store.get(ID).await.unwrap().unwrap();
    assert!(
        !serde_json::to_string(&raw)
            .unwrap()
            .contains(token.expose()),
        "only the digest is stored"
    );
}

#[tokio::test]
async fn list_pages_through_every_row_once() {
    let store = store().await;
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
