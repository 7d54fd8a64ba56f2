//! The door of the push sketches (D77): a push heard with no Step Functions between, so
//! `make bench` can measure it against the floor beside it instead of computing it. Only
//! the calls each design needs between an agent's push and its note are made.
//!
//! The door (`POST /in-place/{id}`, `/to-hearer/{id}`, `/to-hearer-hinted/{id}`,
//! `/to-hearer-async/{id}`) checks the token's digest and claims the hearing in one
//! conditional write. In place, it then hears itself. With `HEARER_FUNCTION` set, it
//! hands the hearing to that function by a direct invoke, so the door holds no agent's
//! credentials and no parent's outlet: `HEARER_HANDS` says what it hands over (`id`, the
//! stand-in's id alone, or `claim`, the row its write returned, as hints), and
//! `HEARER_INVOCATION` how (`RequestResponse`, answering the push once the note is sent,
//! or `Event`, answering at once). What the product would add off the
//! note's path (ringing the park when the execution must act) or in microseconds
//! (scrubbing, the note's shape) is left out, and so are artifacts and retries.

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use bench_floor::{Door, Hearing, claim, hear};
use lambda_http::{Body, Error, Request, Response, service_fn};
use serde_json::json;

const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// Where a claimed hearing happens.
#[derive(Clone)]
enum Hears {
    Here(Hearing),
    Hearer {
        lambda: aws_sdk_lambda::Client,
        function: String,
        invocation: InvocationType,
        hands_claim: bool,
    },
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_from_env().await;
    let db = aws_sdk_dynamodb::Client::new(&config);
    let table = bench_floor::env("TABLE_NAME")?;
    let hears = match std::env::var("HEARER_FUNCTION") {
        Ok(function) => Hears::Hearer {
            lambda: aws_sdk_lambda::Client::new(&config),
            function,
            invocation: match bench_floor::env("HEARER_INVOCATION")?.as_str() {
                "Event" => InvocationType::Event,
                "RequestResponse" => InvocationType::RequestResponse,
                other => {
                    return Err(
                        format!("HEARER_INVOCATION is {other}: Event or RequestResponse").into(),
                    );
                }
            },
            hands_claim: match bench_floor::env("HEARER_HANDS")?.as_str() {
                "claim" => true,
                "id" => false,
                other => return Err(format!("HEARER_HANDS is {other}: id or claim").into()),
            },
        },
        Err(_) => Hears::Here(Hearing::from_env(&config)?),
    };
    lambda_http::run(service_fn(|request: Request| {
        let (db, table, hears) = (db.clone(), table.clone(), hears.clone());
        async move {
            let id = bench_floor::path_id(&request);
            let token = request
                .headers()
                .get(TOKEN_HEADER)
                .and_then(|t| t.to_str().ok())
                .unwrap_or_default();
            let claimed = match claim(&db, &table, &id, token).await? {
                Door::Claimed(claimed) => claimed,
                Door::Pending => return Ok(Response::builder().status(202).body(Body::Empty)?),
                Door::Refused => return Ok(Response::builder().status(403).body(Body::Empty)?),
            };
            match hears {
                Hears::Here(hearing) => hear(&hearing, &claimed).await?,
                Hears::Hearer {
                    lambda,
                    function,
                    invocation,
                    hands_claim,
                } => {
                    let handed = if hands_claim {
                        claimed.to_json()
                    } else {
                        json!({ "id": claimed.id })
                    };
                    let answer = lambda
                        .invoke()
                        .function_name(function)
                        .invocation_type(invocation)
                        .payload(Blob::new(handed.to_string()))
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
