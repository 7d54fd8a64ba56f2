//! Records each job it receives as an item `{id, via}`: from an SQS event source mapping
//! (`via = "sqs"`) or from an asynchronous invoke (`via = "async"`).

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;
use smoke_functions::{env, init_logs, s};

#[tokio::main]
async fn main() -> Result<(), Error> {
    init_logs();
    let config = aws_config::load_from_env().await;
    let db = aws_sdk_dynamodb::Client::new(&config);
    let table = env("TABLE_NAME")?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let (db, table) = (db.clone(), table.clone());
        async move {
            let jobs: Vec<(Value, &str)> = match event.payload["Records"].as_array() {
                Some(records) => records
                    .iter()
                    .map(|r| {
                        let body = r["body"].as_str().unwrap_or_default();
                        (serde_json::from_str(body).unwrap_or(Value::Null), "sqs")
                    })
                    .collect(),
                None => vec![(event.payload.clone(), "async")],
            };
            for (job, via) in &jobs {
                let id = job["id"].as_str().ok_or("job without an id")?;
                db.put_item()
                    .table_name(&table)
                    .item("id", s(id))
                    .item("via", s(*via))
                    .send()
                    .await?;
                tracing::info!(id, via, "job recorded");
            }
            Ok::<Value, Error>(serde_json::json!({ "recorded": jobs.len() }))
        }
    }))
    .await
}
