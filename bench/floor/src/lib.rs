//! What the floor's functions and the in-place sketch's share: configuration read once,
//! named when missing, and the sketch's two halves (the door's claim, the hearing).

use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValue, TransactWriteItem, Update};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub type Error = lambda_runtime::Error;

/// A required environment variable, or an error naming it.
pub fn env(name: &str) -> Result<String, Error> {
    std::env::var(name).map_err(|_| format!("environment variable {name} is not set").into())
}

/// The clients the hearing uses, built once per process.
#[derive(Clone)]
pub struct Hearing {
    pub db: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub http: reqwest::Client,
    pub table: String,
    pub queue_url: String,
}

/// The row as the door's claim left it: what the hearing needs and nothing secret.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub agent: String,
    pub remote: String,
    pub heard: u64,
}

impl Claimed {
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "agent": self.agent, "remote": self.remote, "heard": self.heard})
    }

    pub fn from_json(v: &Value) -> Result<Self, Error> {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| Error::from(format!("the claim has no {k}")))
        };
        Ok(Self {
            id: text("id")?,
            agent: text("agent")?,
            remote: text("remote")?,
            heard: v["heard"].as_u64().ok_or("the claim has no heard")?,
        })
    }
}

/// The door: one conditional write checks the token's digest and claims the hearing.
/// None when the token is not the row's.
pub async fn claim(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
    token: &str,
) -> Result<Option<Claimed>, Error> {
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    let claimed = db
        .update_item()
        .table_name(table)
        .key("id", AttributeValue::S(id.to_owned()))
        .update_expression("ADD claims :one")
        .condition_expression("digest = :digest")
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .expression_attribute_values(":digest", AttributeValue::S(digest))
        .return_values(ReturnValue::AllNew)
        .send()
        .await;
    let Ok(claimed) = claimed else {
        return Ok(None);
    };
    let row = claimed.attributes().ok_or("the claim returned no row")?;
    let text = |k: &str| {
        row.get(k)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .ok_or_else(|| Error::from(format!("the row has no {k}")))
    };
    Ok(Some(Claimed {
        id: id.to_owned(),
        agent: text("agent")?,
        remote: text("remote")?,
        heard: row
            .get("heard")
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
    }))
}

/// The hearing: GetTask asks the agent what its task is now (nothing from the push's
/// body is applied), one transaction commits the change with its note, SQS takes it.
pub async fn hear(h: &Hearing, claimed: &Claimed) -> Result<(), Error> {
    let Claimed {
        id,
        agent,
        remote,
        heard,
    } = claimed;
    let answer: Value = h
        .http
        .post(agent)
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
        .table_name(&h.table)
        .item("id", AttributeValue::S(format!("{id}#note#{seq}")))
        .item("note", AttributeValue::S(note.to_string()))
        .condition_expression("attribute_not_exists(id)")
        .build()?;
    let move_row = Update::builder()
        .table_name(&h.table)
        .key("id", AttributeValue::S(id.clone()))
        .update_expression("SET heard = :seq, #state = :state")
        .condition_expression("heard = :seen")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":seq", AttributeValue::N(seq.to_string()))
        .expression_attribute_values(":seen", AttributeValue::N(heard.to_string()))
        .expression_attribute_values(":state", AttributeValue::S(state))
        .build()?;
    h.db.transact_write_items()
        .transact_items(TransactWriteItem::builder().put(commit_note).build())
        .transact_items(TransactWriteItem::builder().update(move_row).build())
        .send()
        .await?;

    h.sqs
        .send_message()
        .queue_url(&h.queue_url)
        .message_group_id(id)
        .message_deduplication_id(format!("{id}:{seq}"))
        .message_body(note.to_string())
        .send()
        .await?;
    Ok(())
}
