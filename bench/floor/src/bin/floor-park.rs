//! The floor's park: stores the waiting task's token under the id, as any push design must
//! (the push has to find the token).

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let db = aws_sdk_dynamodb::Client::new(&config);
    let table = bench_floor::env("TABLE_NAME")?;
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
                .item("id", AttributeValue::S(id.to_owned()))
                .item("token", AttributeValue::S(token.to_owned()))
                .send()
                .await?;
            Ok::<Value, Error>(json!({ "parked": id }))
        }
    }))
    .await
}
