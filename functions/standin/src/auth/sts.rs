//! The agents' roles assumed through AWS STS: the [`RoleKeys`] port's adapter.

use aws_credential_types::Credentials as RoleCredentials;
use aws_sdk_sts::Client;
use futures_util::future::BoxFuture;
use standin_remote::RemoteError;

use super::sigv4::{AgentRole, RoleKeys};

/// How long assumed keys last: STS's least is 15 minutes, an hour its default.
const SESSION_SECS: i32 = 3600;

pub struct StsRoleKeys {
    client: Client,
    /// Names the deployment in the role's CloudTrail entries (`standin-<stack>`).
    session_name: String,
}

impl StsRoleKeys {
    pub fn new(client: Client, stack_name: &str) -> Self {
        // STS takes 2 to 64 of [\w+=,.@-].
        let name: String = format!("standin-{stack_name}")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(*c))
            .take(64)
            .collect();
        Self {
            client,
            session_name: name,
        }
    }
}

impl RoleKeys for StsRoleKeys {
    fn assume<'a>(
        &'a self,
        role: &'a AgentRole,
    ) -> BoxFuture<'a, Result<RoleCredentials, RemoteError>> {
        Box::pin(async move {
            let assumed = self
                .client
                .assume_role()
                .role_arn(&role.role_arn)
                .role_session_name(&self.session_name)
                .set_external_id(role.external_id.clone())
                .duration_seconds(SESSION_SECS)
                .send()
                .await
                .map_err(|e| {
                    let code = aws_sdk_sts::error::ProvideErrorMetadata::code(&e)
                        .unwrap_or("no answer")
                        .to_owned();
                    RemoteError::Credentials(format!(
                        "cannot assume the role {} ({code}): its trust policy must let the functions' roles assume it (with the entry's external_id, if it asks for one), and it must match the stack's AgentRoleArnPattern",
                        role.role_arn
                    ))
                })?;
            let keys = assumed.credentials().ok_or_else(|| {
                RemoteError::Credentials(format!("STS gave no keys for {}", role.role_arn))
            })?;
            let expiry = std::time::SystemTime::try_from(*keys.expiration()).ok();
            Ok(RoleCredentials::new(
                keys.access_key_id(),
                keys.secret_access_key(),
                Some(keys.session_token().to_owned()),
                expiry,
                "standin-agent-role",
            ))
        })
    }
}
