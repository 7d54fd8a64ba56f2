//! The parent's control API: start, reply, cancel, status.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    standin_control_plane::lambda::serve_control().await
}
