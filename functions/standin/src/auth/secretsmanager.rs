//! The agents' secrets in AWS Secrets Manager.

use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::error::ProvideErrorMetadata;
use futures_util::future::BoxFuture;

use super::secrets::{SecretError, SecretStore, SecretValue};

pub struct SecretsManager {
    client: Client,
}

impl SecretsManager {
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

impl SecretStore for SecretsManager {
    fn read<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SecretValue, SecretError>> {
        Box::pin(async move {
            let answer = self
                .client
                .get_secret_value()
                .secret_id(id)
                .send()
                .await
                .map_err(|err| {
                    // The SDK's message for these names the secret, never its value; only
                    // the code is kept all the same.
                    match err.code() {
                        Some("ResourceNotFoundException") => SecretError::NotFound(id.to_owned()),
                        Some("AccessDeniedException") => SecretError::Denied(id.to_owned()),
                        code => SecretError::Unavailable {
                            id: id.to_owned(),
                            problem: code.unwrap_or("no answer from Secrets Manager").to_owned(),
                        },
                    }
                })?;
            answer
                .secret_string
                .map(SecretValue::from)
                .ok_or_else(|| SecretError::NotText(id.to_owned()))
        })
    }
}
