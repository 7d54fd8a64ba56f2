//! The park for push and off: stores the park token.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_park().await
}
