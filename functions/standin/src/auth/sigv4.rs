//! SigV4 for agents on AgentCore Runtime, with the keys of the role the entry names,
//! assumed through STS ([`RoleKeys`], the port): never with the functions' own role,
//! whose grants (the parents' queue, the follow queue, the tables) an entry must not
//! borrow. Only a request to AgentCore Runtime's data plane is signed, and only for its
//! service: whatever an entry says, a signature cannot be spent on another AWS API.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials as RoleCredentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use futures_util::future::BoxFuture;
use standin_remote::RemoteError;

use super::agentcore::{
    AGENTCORE_SERVICE, RUNTIMES_PATH, agentcore_data_plane, origin_of, runtime_path,
};

/// The role an entry signs as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentRole {
    pub role_arn: String,
    pub external_id: Option<String>,
}

/// Where a role's keys come from: STS in the functions ([`super::sts::StsRoleKeys`]).
pub trait RoleKeys: Send + Sync {
    fn assume<'a>(
        &'a self,
        role: &'a AgentRole,
    ) -> BoxFuture<'a, Result<RoleCredentials, RemoteError>>;
}

/// Keys are assumed again this long before they expire.
const RENEW_BEFORE_EXPIRY: Duration = Duration::from_secs(300);
/// Roles whose keys are kept at once, past which the cache starts again.
const MAX_KEPT_ROLES: usize = 64;

pub struct AgentCoreSigner {
    roles: Arc<dyn RoleKeys>,
    /// The function's region, for an entry that names none.
    region: Option<String>,
    /// AgentCore Runtime's data-plane origin when it is not AWS's own (a VPC endpoint's,
    /// a test's: the `AgentCoreEndpoint` parameter).
    endpoint: Option<String>,
    kept: Mutex<HashMap<AgentRole, RoleCredentials>>,
}

fn failed(problem: impl std::fmt::Display) -> RemoteError {
    RemoteError::Credentials(format!("cannot sign the call with SigV4: {problem}"))
}

impl AgentCoreSigner {
    pub fn new(roles: Arc<dyn RoleKeys>, region: Option<String>, endpoint: Option<String>) -> Self {
        Self {
            roles,
            region,
            endpoint,
            kept: Mutex::default(),
        }
    }

    /// The role's keys: kept until five minutes before they expire.
    async fn keys(&self, role: &AgentRole) -> Result<RoleCredentials, RemoteError> {
        let fresh = |c: &RoleCredentials| {
            c.expiry()
                .is_none_or(|expiry| SystemTime::now() + RENEW_BEFORE_EXPIRY < expiry)
        };
        if let Some(kept) = self
            .kept
            .lock()
            .ok()
            .and_then(|k| k.get(role).cloned())
            .filter(fresh)
        {
            return Ok(kept);
        }
        let keys = self.roles.assume(role).await?;
        super::held::remember_fleeting(keys.secret_access_key());
        if let Some(token) = keys.session_token() {
            super::held::remember_fleeting(token);
        }
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() >= MAX_KEPT_ROLES {
                kept.clear();
            }
            kept.insert(role.clone(), keys.clone());
        }
        Ok(keys)
    }

    /// Forgets the role's keys, so the next call assumes it afresh (after a refusal).
    pub fn forget(&self, role: &AgentRole) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.remove(role);
        }
    }

    /// Every secret part of the keys held (secret key, session token): what the echo
    /// guard blanks if an agent sends one back.
    pub fn held(&self) -> Vec<String> {
        let Ok(kept) = self.kept.lock() else {
            return Vec::new();
        };
        kept.values()
            .flat_map(|c| [Some(c.secret_access_key()), c.session_token()])
            .flatten()
            .map(str::to_owned)
            .collect()
    }

    /// Signs `request` as `role` for AgentCore Runtime, refusing any other destination.
    pub async fn sign(
        &self,
        request: &mut reqwest::Request,
        role: &AgentRole,
        region: Option<&str>,
    ) -> Result<(), RemoteError> {
        let region = region.or(self.region.as_deref());
        let no_region = || failed("no region: name one in the entry's auth.region");
        let origin = match &self.endpoint {
            Some(endpoint) => origin_of(endpoint)
                .ok_or_else(|| failed("the AgentCoreEndpoint parameter is not a URL"))?,
            None => agentcore_data_plane(region.ok_or_else(no_region)?),
        };
        let target = request.url().origin().ascii_serialization();
        // AWS's data plane also serves other APIs (memory, code interpreter): only its
        // runtimes are signed for. A deployment's own endpoint is its own to lay out.
        let runtime = self.endpoint.is_some() || runtime_path(request.url().as_str());
        if target != origin || !runtime {
            return Err(RemoteError::Refused(format!(
                "a SigV4 call goes to AgentCore Runtime ({origin}{RUNTIMES_PATH}…) only, not to {target}{}",
                request.url().path()
            )));
        }
        let region = region.ok_or_else(no_region)?;
        let identity: Identity = self.keys(role).await?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(AGENTCORE_SERVICE)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(failed)?
            .into();
        let headers = request.headers().iter();
        let signable = SignableRequest::new(
            request.method().as_str(),
            request.url().as_str(),
            headers.filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?))),
            SignableBody::Bytes(
                request
                    .body()
                    .and_then(|b| b.as_bytes())
                    .unwrap_or_default(),
            ),
        )
        .map_err(failed)?;
        let (instructions, _) = sign(signable, &params).map_err(failed)?.into_parts();
        for (name, value) in instructions.headers() {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(failed)?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(failed)?;
            value.set_sensitive(true);
            request.headers_mut().insert(name, value);
        }
        Ok(())
    }
}
