//! The push sketches' hearer (D77): the hearing a door hands over by a direct invoke, in
//! a function the internet does not reach. Given the stand-in's id alone, it reads the
//! rest from the row; given the door's claim, it takes it as hints the commit checks.

use bench_floor::{Claimed, Hearing, hear, read};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let hearing = Hearing::from_env(&config)?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let hearing = hearing.clone();
        async move {
            let claimed = if event.payload.get("remote").is_some() {
                Claimed::from_json(&event.payload)?
            } else {
                let id = event.payload["id"]
                    .as_str()
                    .ok_or("the hand-over names no stand-in")?;
                read(&hearing, id).await?
            };
            hear(&hearing, &claimed).await?;
            Ok::<Value, Error>(json!({ "heard": claimed.heard + 1 }))
        }
    }))
    .await
}
