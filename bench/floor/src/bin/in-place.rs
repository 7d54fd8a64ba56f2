//! A sketch of a push heard without Step Functions between (D77), so `make bench` can
//! measure it against the floor beside it instead of computing it: the calls that design
//! needs between an agent's push and its note, and nothing else.
//!
//! The door (`POST /in-place/{id}` or `/to-hearer/{id}`) checks the token's digest and
//! claims the hearing in one conditional write. Then, in place, it hears itself; with
//! `HEARER_FUNCTION` set, it hands the claim to that function (a direct invoke), which
//! hears, so the door holds no agent's credentials and no parent's outlet. What the
//! product would add off the note's path (ringing the park when the execution must act)
//! or in microseconds (scrubbing, the note's shape) is left out, and so are artifacts and
//! retries.

use aws_sdk_lambda::primitives::Blob;
use bench_floor::{Hearing, claim, hear};
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};

const TOKEN_HEADER: &str = "x-a2a-notification-token";

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let hearing = Hearing {
        db: aws_sdk_dynamodb::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
        http: reqwest::Client::new(),
        table: bench_floor::env("TABLE_NAME")?,
        queue_url: bench_floor::env("QUEUE_URL")?,
    };
    let hearer = std::env::var("HEARER_FUNCTION").ok();
    let lambda = aws_sdk_lambda::Client::new(&config);
    lambda_http::run(service_fn(|request: Request| {
        let (hearing, hearer, lambda) = (hearing.clone(), hearer.clone(), lambda.clone());
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
            let Some(claimed) = claim(&hearing.db, &hearing.table, &id, token).await? else {
                return Ok(Response::builder().status(403).body(Body::Empty)?);
            };
            match hearer {
                None => hear(&hearing, &claimed).await?,
                Some(hearer) => {
                    let answer = lambda
                        .invoke()
                        .function_name(hearer)
                        .payload(Blob::new(claimed.to_json().to_string()))
                        .send()
                        .await?;
                    if let Some(error) = answer.function_error() {
                        return Err(format!("the hearer failed: {error}").into());
                    }
                }
            }
            Ok::<_, Error>(Response::builder().status(204).body(Body::Empty)?)
        }
    }))
    .await
}
