//! The push receiver behind POST /a2a/push/{task_id}.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_push().await
}
