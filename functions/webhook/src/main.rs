//! The webhooks' delivery: each note of a stand-in with webhooks, POSTed to them in order.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_webhook().await
}
