//! A sketch of a push heard in place (D77), `POST /in-place/{id}`: the calls that design
//! needs between an agent's push and its note, and nothing else, so `make bench` can
//! measure it against the floor beside it instead of computing it.
//!
//! One conditional write checks the token's digest and claims the hearing; GetTask asks
//! the registered agent what its task is now (nothing from the body is applied); one
//! transaction commits the change with its note; SQS takes the note. What the product
//! would add off the note's path (ringing the park after the send) or in microseconds
//! (scrubbing, the note's shape) is left out, and so are artifacts and retries.

use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValue, TransactWriteItem, Update};
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TOKEN_HEADER: &str = "x-a2a-notification-token";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let db = aws_sdk_dynamodb::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let http = reqwest::Client::new();
    let table = bench_floor::env("TABLE_NAME")?;
    let queue_url = bench_floor::env("QUEUE_URL")?;
    lambda_http::run(service_fn(|request: Request| {
        let (db, sqs, http) = (db.clone(), sqs.clone(), http.clone());
        let (table, queue_url) = (table.clone(), queue_url.clone());
        async move {
            let id = request
                .path_parameters()
                .first("id")
                .unwrap_or_default()
                .to_owned();
            let token = request
                .headers()
                .get(TOKEN_HEADER)
                .and_then(|t| t.to_str().ok())
                .unwrap_or_default();
            let digest = hex::encode(Sha256::digest(token.as_bytes()));

            let claimed = db
                .update_item()
                .table_name(&table)
                .key("id", AttributeValue::S(id.clone()))
                .update_expression("ADD claims :one")
                .condition_expression("digest = :digest")
                .expression_attribute_values(":one", AttributeValue::N("1".into()))
                .expression_attribute_values(":digest", AttributeValue::S(digest))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            let Ok(claimed) = claimed else {
                return Ok(Response::builder().status(403).body(Body::Empty)?);
            };
            let row = claimed.attributes().ok_or("the claim returned no row")?;
            let text = |k: &str| row.get(k).and_then(|v| v.as_s().ok()).cloned();
            let agent = text("agent").ok_or("the row names no agent")?;
            let remote = text("remote").ok_or("the row names no remote task")?;
            let heard: u64 = row
                .get("heard")
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);

            let answer: Value = http
                .post(&agent)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": remote}}))
                .send()
                .await?
                .json()
                .await?;
            let state = answer["result"]["status"]["state"]
                .as_str()
                .ok_or("GetTask answered no state")?
                .to_owned();

            let seq = heard + 1;
            let note = json!({"task_id": id, "seq": seq, "state": state});
            let commit_note = Put::builder()
                .table_name(&table)
                .item("id", AttributeValue::S(format!("{id}#note#{seq}")))
                .item("note", AttributeValue::S(note.to_string()))
                .condition_expression("attribute_not_exists(id)")
                .build()?;
            let move_row = Update::builder()
                .table_name(&table)
                .key("id", AttributeValue::S(id.clone()))
                .update_expression("SET heard = :seq, #state = :state")
                .condition_expression("heard = :seen")
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":seq", AttributeValue::N(seq.to_string()))
                .expression_attribute_values(":seen", AttributeValue::N(heard.to_string()))
                .expression_attribute_values(":state", AttributeValue::S(state))
                .build()?;
            db.transact_write_items()
                .transact_items(TransactWriteItem::builder().put(commit_note).build())
                .transact_items(TransactWriteItem::builder().update(move_row).build())
                .send()
                .await?;

            sqs.send_message()
                .queue_url(queue_url)
                .message_group_id(&id)
                .message_deduplication_id(format!("{id}:{seq}"))
                .message_body(note.to_string())
                .send()
                .await?;
            Ok::<_, Error>(Response::builder().status(204).body(Body::Empty)?)
        }
    }))
    .await
}
