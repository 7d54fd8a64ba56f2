//! The push sketches' hearer (D77): the hearing a door hands over by a direct invoke, in
//! a function the internet does not reach. It is given the stand-in's id alone and reads
//! the rest from the row.

use bench_floor::{Hearing, hear, read};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let hearing = Hearing {
        db: aws_sdk_dynamodb::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
        http: bench_floor::agent_client()?,
        table: bench_floor::env("TABLE_NAME")?,
        queue_url: bench_floor::env("QUEUE_URL")?,
    };
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let hearing = hearing.clone();
        async move {
            let id = event.payload["id"]
                .as_str()
                .ok_or("the hand-over names no stand-in")?;
            let claimed = read(&hearing, id).await?;
            hear(&hearing, &claimed).await?;
            Ok::<Value, Error>(json!({ "heard": claimed.heard + 1 }))
        }
    }))
    .await
}
