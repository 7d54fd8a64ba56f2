//! What the floor's functions and the push sketches share: configuration read once,
//! named when missing, and the sketches' two halves (the door's claim, the hearing).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub type Error = lambda_runtime::Error;

/// How long a claimed hearing keeps others out: a hearer that dies holding it blocks the
/// stand-in's hearings no longer than this.
const HEARING_LEASE: Duration = Duration::from_secs(30);

/// The stand-in's id, the `{id}` of a push's path.
pub fn path_id(request: &lambda_http::Request) -> String {
    use lambda_http::RequestExt;
    request
        .path_parameters()
        .first("id")
        .unwrap_or_default()
        .to_owned()
}

/// A required environment variable, or an error naming it.
pub fn env(name: &str) -> Result<String, Error> {
    std::env::var(name).map_err(|_| format!("environment variable {name} is not set").into())
}

/// An HTTP client for GetTask that gives up as the product's does, not never.
pub fn agent_client() -> Result<reqwest::Client, Error> {
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?)
}

/// The clients the hearing uses, built once per process, and the registry of agents:
/// where each agent named on a row is reached comes from the hearing's own configuration
/// (`AGENTS`, as the product's functions have it), never from a row or a door.
#[derive(Clone)]
pub struct Hearing {
    pub db: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub http: reqwest::Client,
    pub table: String,
    pub queue_url: String,
    pub agents: std::collections::HashMap<String, String>,
}

impl Hearing {
    pub fn from_env(config: &aws_config::SdkConfig) -> Result<Self, Error> {
        let agents = env("AGENTS")?;
        Ok(Self {
            db: aws_sdk_dynamodb::Client::new(config),
            sqs: aws_sdk_sqs::Client::new(config),
            http: agent_client()?,
            table: env("TABLE_NAME")?,
            queue_url: env("QUEUE_URL")?,
            agents: serde_json::from_str(&agents)
                .map_err(|e| format!("AGENTS is not a JSON object of names to URLs: {e}"))?,
        })
    }
}

/// The stand-in's row as the hearing needs it: the agent by its name in the registry.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub agent: String,
    pub remote: String,
    pub heard: u64,
}

impl Claimed {
    /// The stand-in `id` as its row says.
    fn from_row(
        id: &str,
        row: &std::collections::HashMap<String, AttributeValue>,
    ) -> Result<Self, Error> {
        Ok(Self {
            id: id.to_owned(),
            agent: text(row, "agent")?,
            remote: text(row, "remote")?,
            heard: number(row, "heard")?,
        })
    }

    /// The claim a door hands a hearer as hints: nothing in it is trusted. The agent is
    /// looked up in the hearer's own registry, and the commit applies the answer only
    /// where the row still says what the hints say.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "agent": self.agent, "remote": self.remote, "heard": self.heard})
    }

    pub fn from_json(v: &Value) -> Result<Self, Error> {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| Error::from(format!("the hand-over has no {k}")))
        };
        Ok(Self {
            id: text("id")?,
            agent: text("agent")?,
            remote: text("remote")?,
            heard: v["heard"].as_u64().ok_or("the hand-over has no heard")?,
        })
    }
}

/// What the door's one write found.
pub enum Door {
    /// The token is the row's and no hearing was in flight: this push hears.
    Claimed(Claimed),
    /// The token is the row's, but a hearing is in flight: the push waits on the row
    /// (a second write), for that hearing to hear once more before it lets go.
    Pending,
    /// Not the row's token (or no such row).
    Refused,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn text(row: &std::collections::HashMap<String, AttributeValue>, k: &str) -> Result<String, Error> {
    row.get(k)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .ok_or_else(|| format!("the row has no {k}").into())
}

fn number(row: &std::collections::HashMap<String, AttributeValue>, k: &str) -> Result<u64, Error> {
    row.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("the row has no number {k}").into())
}

/// The door: one conditional write checks the token's digest and, when no hearing is in
/// flight, claims one with a lease.
pub async fn claim(
    db: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
    token: &str,
) -> Result<Door, Error> {
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    let now = now_ms();
    let claimed = db
        .update_item()
        .table_name(table)
        .key("id", AttributeValue::S(id.to_owned()))
        .update_expression("SET hearing_until = :until")
        .condition_expression(
            "digest = :digest AND (attribute_not_exists(hearing_until) OR hearing_until < :now)",
        )
        .expression_attribute_values(":digest", AttributeValue::S(digest.clone()))
        .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
        .expression_attribute_values(
            ":until",
            AttributeValue::N((now + HEARING_LEASE.as_millis() as u64).to_string()),
        )
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match claimed {
        Ok(claimed) => {
            let row = claimed.attributes().ok_or("the claim returned no row")?;
            Ok(Door::Claimed(Claimed::from_row(id, row)?))
        }
        Err(err) => match err.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(failed) => {
                let ours = failed
                    .item()
                    .and_then(|row| row.get("digest"))
                    .and_then(|d| d.as_s().ok())
                    .is_some_and(|d| *d == digest);
                if !ours {
                    return Ok(Door::Refused);
                }
                db.update_item()
                    .table_name(table)
                    .key("id", AttributeValue::S(id.to_owned()))
                    .update_expression("ADD pending :one")
                    .condition_expression("digest = :digest")
                    .expression_attribute_values(":one", AttributeValue::N("1".into()))
                    .expression_attribute_values(":digest", AttributeValue::S(digest))
                    .send()
                    .await?;
                Ok(Door::Pending)
            }
            other => Err(other.into()),
        },
    }
}

/// The stand-in's row, read by the hearer: the door hands over only the id, so the agent
/// a hearing asks (and, in the product, its credentials) never come from the door.
pub async fn read(h: &Hearing, id: &str) -> Result<Claimed, Error> {
    let item =
        h.db.get_item()
            .table_name(&h.table)
            .key("id", AttributeValue::S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await?;
    let row = item.item().ok_or("no row for the claimed stand-in")?;
    Claimed::from_row(id, row)
}

/// The hearing: GetTask asks the agent what its task is now (nothing from the push's
/// body is applied), one transaction commits the change with its note and lets the claim
/// go, on the condition that the row names this agent and task and has heard `heard`
/// changes, and SQS takes the note. (A hearing that finds pushes pending hears once more
/// before it lets go; the bench's pushes come one at a time, so the sketch leaves that
/// out.)
pub async fn hear(h: &Hearing, claimed: &Claimed) -> Result<(), Error> {
    let Claimed {
        id,
        agent,
        remote,
        heard,
    } = claimed;
    let url = h
        .agents
        .get(agent)
        .ok_or_else(|| format!("no agent {agent} is registered"))?;
    let answer: Value = h
        .http
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": remote}}))
        .send()
        .await?
        .error_for_status()?
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
        .update_expression("SET heard = :seq, #state = :state REMOVE hearing_until")
        .condition_expression("heard = :seen AND #agent = :agent AND #remote = :remote")
        .expression_attribute_names("#state", "state")
        .expression_attribute_names("#agent", "agent")
        .expression_attribute_names("#remote", "remote")
        .expression_attribute_values(":agent", AttributeValue::S(agent.clone()))
        .expression_attribute_values(":remote", AttributeValue::S(remote.clone()))
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
