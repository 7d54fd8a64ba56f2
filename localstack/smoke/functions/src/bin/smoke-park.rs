//! The park step of the smoke state machine: stores the task token on the row, so that
//! the API's ring route can end the park with SendTaskSuccess.

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
            let id = event.payload["id"]
                .as_str()
                .ok_or("payload.id is missing")?;
            let token = event.payload["token"]
                .as_str()
                .ok_or("payload.token is missing")?;
            db.put_item()
                .table_name(table)
                .item("id", s(id))
                .item("park_token", s(token))
                .send()
                .await?;
            tracing::info!(id, "parked");
            Ok::<Value, Error>(serde_json::json!({ "parked": id }))
        }
    }))
    .await
}
