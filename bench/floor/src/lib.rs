//! What the floor's three functions share: configuration read once, named when missing.

/// A required environment variable, or an error naming it.
pub fn env(name: &str) -> Result<String, lambda_runtime::Error> {
    std::env::var(name).map_err(|_| format!("environment variable {name} is not set").into())
}
