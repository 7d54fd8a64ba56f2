//! Shared start-up for the smoke functions: JSON logs, and configuration read once.

use aws_sdk_dynamodb::types::AttributeValue;

/// JSON logs to stdout, which the runtime ships to CloudWatch Logs.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .json()
        .with_target(false)
        .without_time()
        .init();
}

/// A required environment variable, or an error naming it.
pub fn env(name: &str) -> Result<String, lambda_runtime::Error> {
    std::env::var(name).map_err(|_| format!("environment variable {name} is not set").into())
}

pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}
