//! Hears a push the receiver claimed: GetTask, the change and its note, then the ring.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_hear().await
}
