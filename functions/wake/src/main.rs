//! Drains one event after a park and decides the next step.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::wake).await
}
