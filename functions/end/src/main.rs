//! Close first with the final note in the same write, then delete the push config and
//! cancel the remote task.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_step(standin::lambda::end).await
}
