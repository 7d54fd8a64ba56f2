//! The deployed stack's outputs: the control API and the parent queue.

use aws_config::SdkConfig;
use aws_sdk_cloudformation::error::ProvideErrorMetadata;

use crate::error::{CliError, root_cause};
use crate::target::{Target, region_name};

#[derive(Debug, Clone)]
pub struct StackInfo {
    pub name: String,
    pub control_url: String,
    pub queue_url: String,
    pub state_machine_arn: String,
}

impl StackInfo {
    pub async fn load(target: &Target, config: &SdkConfig, name: &str) -> Result<Self, CliError> {
        let cfn = aws_sdk_cloudformation::Client::new(config);
        let described = cfn
            .describe_stacks()
            .stack_name(name)
            .send()
            .await
            .map_err(|err| {
                if err.as_service_error().is_some_and(|e| {
                    e.code() == Some("ValidationError")
                        && e.message().is_some_and(|m| m.contains("does not exist"))
                }) {
                    return CliError::NoStack {
                        stack: name.to_owned(),
                        place: target.place(config),
                    };
                }
                unreachable_or(target, config, "CloudFormation", &err)
            })?;
        let outputs: Vec<(String, String)> = described
            .stacks()
            .first()
            .map(|s| {
                s.outputs()
                    .iter()
                    .filter_map(|o| {
                        Some((o.output_key()?.to_owned(), o.output_value()?.to_owned()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let out = |key: &'static str| {
            outputs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| CliError::MissingOutput {
                    stack: name.to_owned(),
                    key,
                })
        };
        let control_url = match target {
            // The output names the default endpoint; build the URL on the one in use.
            Target::LocalStack { endpoint } => format!(
                "{}/_aws/execute-api/{}/Prod",
                endpoint.trim_end_matches('/'),
                out("ControlApiId")?
            ),
            Target::Aws => out("ControlApiUrl")?,
        };
        Ok(Self {
            name: name.to_owned(),
            control_url,
            queue_url: out("ParentQueueUrl")?,
            state_machine_arn: out("StateMachineArn")?,
        })
    }
}

/// An SDK failure: no connection means LocalStack is down (or AWS unreachable); anything
/// else is reported with the service's own words.
pub fn unreachable_or<E, R>(
    target: &Target,
    config: &SdkConfig,
    service: &'static str,
    err: &aws_smithy_runtime_api::client::result::SdkError<E, R>,
) -> CliError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let no_connection = matches!(
        err,
        aws_smithy_runtime_api::client::result::SdkError::DispatchFailure(_)
            | aws_smithy_runtime_api::client::result::SdkError::TimeoutError(_)
    );
    match target {
        Target::LocalStack { endpoint } if no_connection => CliError::LocalStackDown {
            endpoint: endpoint.clone(),
        },
        Target::Aws if no_connection => CliError::AwsUnreachable {
            service,
            region: region_name(config),
            detail: root_cause(err),
        },
        _ => CliError::Aws {
            service,
            detail: match err.as_service_error() {
                Some(service_error) => service_error.to_string(),
                None => root_cause(err),
            },
        },
    }
}
