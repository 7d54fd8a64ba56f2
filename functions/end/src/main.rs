//! Close first, delete the push config, cancel the remote task, tell the parent.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::end).await
}
