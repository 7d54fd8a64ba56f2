//! GetTask and apply (fail closed). Kept for one release after the wake took this step
//! over: executions started on the previous definition still invoke it.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::fetch).await
}
