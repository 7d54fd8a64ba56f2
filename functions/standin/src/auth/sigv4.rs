//! SigV4 with the function's own role, for agents on AgentCore Runtime: the whole request
//! (method, URL, headers, body) is signed as it is about to go out.

use std::time::SystemTime;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use standin_remote::RemoteError;

pub struct RoleSigner {
    credentials: Option<SharedCredentialsProvider>,
    /// The function's region, for an entry that names none.
    region: Option<String>,
}

fn failed(problem: impl std::fmt::Display) -> RemoteError {
    RemoteError::Credentials(format!("cannot sign the call with SigV4: {problem}"))
}

impl RoleSigner {
    pub fn new(credentials: Option<SharedCredentialsProvider>, region: Option<String>) -> Self {
        Self {
            credentials,
            region,
        }
    }

    pub async fn sign(
        &self,
        request: &mut reqwest::Request,
        service: &str,
        region: Option<&str>,
    ) -> Result<(), RemoteError> {
        let region = region
            .or(self.region.as_deref())
            .ok_or_else(|| failed("no region: name one in the entry's auth.region"))?;
        let provider = self
            .credentials
            .as_ref()
            .ok_or_else(|| failed("the function has no AWS credentials"))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|_| failed("the function's role credentials could not be read"))?;
        let identity: Identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(service)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(failed)?
            .into();
        let body = request
            .body()
            .map(|b| b.as_bytes().unwrap_or_default())
            .unwrap_or_default()
            .to_vec();
        let url = request.url().to_string();
        let method = request.method().as_str().to_owned();
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let signable = SignableRequest::new(
            &method,
            url.as_str(),
            headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            SignableBody::Bytes(&body),
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
