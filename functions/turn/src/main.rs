//! Sends a turn to the remote agent and reads it to an interrupted or final state.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::turn).await
}
