//! What a deployment lets an agent entry name, beyond the entry's own shape: secrets
//! under its prefix, roles its pattern matches, and no address where the functions' own
//! trust lives: an AWS service endpoint, the stack's own APIs, the AWS endpoint the
//! functions call. SigV4 goes to AgentCore Runtime's data plane only. The agents
//! document, `PUT /agents` and every stored entry read back are held to the same rules,
//! so an entry cannot turn the functions into a deputy for another service.

use crate::agents::{AgentSpec, ConfigError};
use crate::auth::AuthSpec;
pub use crate::auth::agentcore::{
    AGENTCORE_SERVICE, RUNTIMES_PATH, agentcore_data_plane, is_agentcore_data_plane, origin_of,
    runtime_path,
};

/// Domains under which AWS serves its own APIs (every partition's).
const AWS_SERVICE_DOMAINS: [&str; 8] = [
    "amazonaws.com",
    "amazonaws.com.cn",
    "amazonaws.eu",
    "api.aws",
    "c2s.ic.gov",
    "sc2s.sgov.gov",
    "cloud.adc-e.uk",
    "csp.hci.ic.gov",
];

/// The label just before the AWS domain that marks a customer's own endpoint: a load
/// balancer (`name-1.us-east-1.elb.amazonaws.com`), an instance
/// (`ec2-1-2-3-4.compute-1.amazonaws.com`). Agents are served from these, and an
/// unsigned call to one reaches the customer's code, not an AWS API.
const CUSTOMER_ENDPOINT_SUFFIXES: [&str; 3] = ["elb", "compute", "compute-1"];
/// The second label of an API Gateway API (`abc123.execute-api.us-east-1.…`).
const CUSTOMER_API_LABEL: &str = "execute-api";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryRules {
    /// Secrets an entry may name start with this (empty: any).
    pub secret_prefix: String,
    /// Roles a SigV4 entry may name match this IAM-style pattern (`*`, `?`); None: any.
    pub role_pattern: Option<String>,
    /// The functions' region: where AgentCore Runtime is reached when an entry names none.
    pub region: Option<String>,
    /// AgentCore Runtime's data-plane origin when it is not AWS's own for the region (a
    /// VPC endpoint's, a test's).
    pub agentcore_endpoint: Option<String>,
    /// Origins the functions trust for themselves: the AWS endpoint they call, the
    /// stack's APIs on LocalStack.
    pub own_origins: Vec<String>,
    /// The stack's own API Gateway APIs, by id.
    pub own_api_ids: Vec<String>,
}

/// `field` joined under `at` (`agents[0]` and `url` give `agents[0].url`; no `at`, `url`).
fn under(at: &str, field: &str) -> String {
    if at.is_empty() {
        field.to_owned()
    } else {
        format!("{at}.{field}")
    }
}

impl EntryRules {
    /// Checks `spec`, the entry at `at` (empty for a registry entry).
    pub fn check(&self, at: &str, spec: &AgentSpec) -> Result<(), ConfigError> {
        let mut places = vec![(under(at, "url"), spec.url.clone())];
        if let Some(card) = &spec.card_url {
            places.push((under(at, "card_url"), card.clone()));
        }
        for (i, origin) in spec.allowed_origins.iter().enumerate() {
            places.push((under(at, &format!("allowed_origins[{i}]")), origin.clone()));
        }
        if let Some(AuthSpec::OAuth2ClientCredentials { token_url, .. }) = &spec.auth {
            places.push((under(at, "auth.token_url"), token_url.clone()));
        }
        if let Some(standin_remote::CardSigning::JwksUrl(url)) = &spec.card_signing {
            places.push((under(at, "card_signing.jwks_url"), url.clone()));
        }
        let agentcore = self.agentcore_origin(spec.auth.as_ref());
        for (field, text) in &places {
            self.check_place(field, text, agentcore.as_deref(), "an agent")?;
        }
        let Some(auth) = &spec.auth else {
            return Ok(());
        };
        let at_auth = under(at, "auth");
        auth.check_secret_prefix(&at_auth, &self.secret_prefix)?;
        if let AuthSpec::SigV4 { role_arn, .. } = auth {
            if let Some(pattern) = &self.role_pattern
                && !glob_matches(pattern, role_arn)
            {
                return Err(ConfigError::new(
                    under(&at_auth, "role_arn"),
                    format!(
                        "{role_arn} does not match {pattern}, the roles this deployment may assume (AgentRoleArnPattern)"
                    ),
                ));
            }
            let Some(agentcore) = agentcore else {
                return Err(ConfigError::new(
                    under(&at_auth, "region"),
                    "names no region and the deployment has none: name AgentCore Runtime's region",
                ));
            };
            for (field, text) in &places {
                if origin_of(text).as_deref() != Some(agentcore.as_str()) {
                    return Err(ConfigError::new(
                        field.clone(),
                        format!(
                            "a SigV4 agent is AgentCore Runtime, reached at {agentcore} only: the calls are signed for it"
                        ),
                    ));
                }
                if self.agentcore_endpoint.is_none()
                    && !field.contains("allowed_origins")
                    && !runtime_path(text)
                {
                    return Err(ConfigError::new(
                        field.clone(),
                        format!(
                            "a SigV4 agent is an AgentCore runtime: its URL's path starts with {RUNTIMES_PATH} (the data plane's other APIs are not signed for)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// AgentCore Runtime's data-plane origin for an entry's SigV4 auth (None for other
    /// schemes, or when no region is known).
    pub fn agentcore_origin(&self, auth: Option<&AuthSpec>) -> Option<String> {
        let Some(AuthSpec::SigV4 { region, .. }) = auth else {
            return None;
        };
        if let Some(endpoint) = &self.agentcore_endpoint {
            return origin_of(endpoint);
        }
        let region = region.as_deref().or(self.region.as_deref())?;
        Some(agentcore_data_plane(region))
    }

    /// Checks a parent's webhook URL as an agent's: no AWS service endpoint, none of
    /// the stack's own. The POST is never signed, but it carries the parent's token.
    pub fn check_webhook(&self, field: &str, url: &str) -> Result<(), ConfigError> {
        self.check_place(field, url, None, "a webhook")
    }

    /// Refuses a place on an AWS service endpoint (AgentCore Runtime's own for a SigV4
    /// entry aside), on the stack's APIs, or on the functions' AWS endpoint.
    fn check_place(
        &self,
        field: &str,
        text: &str,
        agentcore: Option<&str>,
        what: &str,
    ) -> Result<(), ConfigError> {
        let Ok(url) = reqwest::Url::parse(text) else {
            return Ok(()); // the entry's own parse names a malformed URL
        };
        let origin = url.origin().ascii_serialization();
        if agentcore == Some(origin.as_str()) {
            return Ok(());
        }
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if self.own_origins.contains(&origin) {
            return Err(ConfigError::new(
                field.to_owned(),
                format!("{origin} is where this deployment calls AWS: {what} cannot be there"),
            ));
        }
        if let Some(api) = self.own_api_ids.iter().find(|id| {
            host.strip_prefix(id.as_str())
                .is_some_and(|rest| rest.starts_with(".execute-api."))
        }) {
            return Err(ConfigError::new(
                field.to_owned(),
                format!("{host} is this stack's own API ({api}): {what} cannot be there"),
            ));
        }
        if is_aws_service_host(&host) {
            return Err(ConfigError::new(
                field.to_owned(),
                format!(
                    "{host} is an AWS service endpoint: {what} cannot be there{}",
                    if what == "an agent" {
                        " (AgentCore Runtime is reached with auth.type sigv4)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        Ok(())
    }
}

/// Whether `host` (lowercase) is one AWS serves its own APIs at: under an AWS domain and
/// not a customer's endpoint there.
pub fn is_aws_service_host(host: &str) -> bool {
    if is_agentcore_data_plane(host) {
        return false;
    }
    let Some(domain) = AWS_SERVICE_DOMAINS
        .iter()
        .find(|domain| host == **domain || host.ends_with(&format!(".{domain}")))
    else {
        return false;
    };
    let labels: Vec<&str> = host[..host.len() - domain.len()]
        .trim_end_matches('.')
        .split('.')
        .collect();
    // By position, so a bucket named "elb" (elb.s3.amazonaws.com) is not taken for one.
    let customers = labels
        .last()
        .is_some_and(|last| CUSTOMER_ENDPOINT_SUFFIXES.contains(last))
        || (labels.len() >= 2 && labels[1] == CUSTOMER_API_LABEL);
    !customers
}

/// IAM's wildcard match: `*` any run of characters, `?` one.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests;
