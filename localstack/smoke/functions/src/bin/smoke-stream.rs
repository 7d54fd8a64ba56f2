//! A response that streams: three server-sent events a second apart, through a function
//! URL in RESPONSE_STREAM mode. `scripts/measure-streaming` times when each arrives, to
//! learn whether the local AWS streams a Lambda's answer or buffers it (D68).

use std::time::Duration;

use lambda_runtime::streaming::{Body, Response, channel};
use lambda_runtime::{Error, LambdaEvent, service_fn};

async fn stream(_: LambdaEvent<serde_json::Value>) -> Result<Response<Body>, Error> {
    let (mut events, body) = channel();
    tokio::spawn(async move {
        for n in 1..=3 {
            let event = format!("data: {{\"event\": {n}}}\n\n");
            if events.send_data(event.into()).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    Ok(Response::from(body))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(stream)).await
}
