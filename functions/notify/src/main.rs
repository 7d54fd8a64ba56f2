//! The outbox's delivery: each new note, in order, to the parent's FIFO queue.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin::lambda::serve_notify().await
}
