//! The park for follow: SubscribeToTask for a bounded window, heartbeating.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_follow().await
}
