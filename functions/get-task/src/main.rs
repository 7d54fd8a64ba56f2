//! GetTask and apply (fail closed).

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::fetch).await
}
