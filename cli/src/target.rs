//! Where the stack runs: LocalStack (the default, with its test credentials) or AWS
//! (the usual profile, region and credential settings).

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::provider::error::CredentialsError;

use crate::error::{CliError, root_cause};

pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4566";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    LocalStack { endpoint: String },
    Aws,
}

impl Target {
    /// The place, for messages: "LocalStack at http://…" or "AWS region eu-west-1".
    pub fn place(&self, config: &SdkConfig) -> String {
        match self {
            Self::LocalStack { endpoint } => format!("LocalStack at {endpoint}"),
            Self::Aws => format!("AWS region {}", region_name(config)),
        }
    }

    pub async fn sdk_config(&self) -> SdkConfig {
        match self {
            Self::Aws => aws_config::load_defaults(BehaviorVersion::latest()).await,
            Self::LocalStack { endpoint } => {
                let region = std::env::var("AWS_REGION")
                    .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
                    .unwrap_or_else(|_| "us-east-1".into());
                // LocalStack takes any key; "test" maps to its default account 000000000000.
                let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "test".into());
                let secret =
                    std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "test".into());
                aws_config::defaults(BehaviorVersion::latest())
                    .endpoint_url(endpoint)
                    .region(Region::new(region))
                    .credentials_provider(Credentials::new(key, secret, None, None, "localstack"))
                    .load()
                    .await
            }
        }
    }
}

impl Target {
    /// On AWS, a region and credentials must be there before any call: without them the
    /// SDK's error reads as a connection failure.
    pub async fn check(&self, config: &SdkConfig) -> Result<(), CliError> {
        if *self != Self::Aws {
            return Ok(());
        }
        if config.region().is_none() {
            return Err(CliError::NoRegion);
        }
        let provider = config
            .credentials_provider()
            .ok_or_else(|| CliError::Credentials("no credential provider".into()))?;
        provider.provide_credentials().await.map(drop).map_err(|e| {
            CliError::Credentials(match e {
                CredentialsError::CredentialsNotLoaded(_) => {
                    "none found in the environment, the AWS config files or instance metadata"
                        .into()
                }
                other => root_cause(&other),
            })
        })
    }
}

pub fn region_name(config: &SdkConfig) -> String {
    config
        .region()
        .map_or_else(|| "(no region set)".into(), ToString::to_string)
}
