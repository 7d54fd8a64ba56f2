//! Chooses the watch once; registers push with a fresh token.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::register).await
}
