//! The stack's control API, signed with SigV4 (the API uses the AWS_IAM authorizer on AWS;
//! LocalStack accepts the signature without checking it).

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use serde::de::DeserializeOwned;
use serde_json::Value;
use standin_wire::openapi;
use standin_wire::{
    AgentView, AgentsPage, ArtifactContent, ArtifactsPage, CancelRequest, ErrorBody, InputPart,
    ListPage, NotesPage, ParentNote, ReplyId, ReplyRequest, StandInStatus, StartRequest, Started,
    Summary, TaskId, TurnView, TurnsPage,
};

use crate::error::CliError;
use crate::target::{Target, region_name};

pub struct ControlClient {
    http: reqwest::Client,
    base_url: String,
    credentials: Credentials,
    region: String,
    target: Target,
}

impl ControlClient {
    /// The client other requests (an upload's PUT) go out on.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

/// What the API answered, before it is judged.
pub(crate) struct RawAnswer {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

impl ControlClient {
    pub async fn new(
        target: &Target,
        config: &SdkConfig,
        base_url: &str,
    ) -> Result<Self, CliError> {
        let provider = config
            .credentials_provider()
            .ok_or_else(|| CliError::Credentials("no credential provider configured".into()))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| CliError::Credentials(e.to_string()))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| CliError::Api {
                status: 0,
                detail: format!("HTTP client: {e}"),
            })?;
        Ok(Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            credentials,
            region: region_name(config),
            target: target.clone(),
        })
    }

    /// A client with test credentials, for tests that never reach an API.
    #[cfg(test)]
    pub(crate) fn unsigned(base_url: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.to_owned(),
            credentials: Credentials::new("test", "test", None, None, "test"),
            region: "us-east-1".into(),
            target: Target::LocalStack {
                endpoint: base_url.to_owned(),
            },
        }
    }

    /// Starts a stand-in; returns its local task id, execution ARN and trace id.
    /// `deadline_secs`: how long it may live (none: its agent's or the stack's bound);
    /// `traceparent`: the caller's trace (none: the stand-in begins one).
    pub async fn start(
        &self,
        agent: &str,
        message: &str,
        parts: Vec<InputPart>,
        task_id: Option<&str>,
        deadline_secs: Option<u64>,
        traceparent: Option<&str>,
    ) -> Result<Started, CliError> {
        let task_id = task_id
            .map(TaskId::parse)
            .transpose()
            .map_err(|e| CliError::Refused(e.to_string()))?;
        let request = StartRequest {
            agent: agent.to_owned(),
            message: message.to_owned(),
            parts,
            task_id,
            deadline_secs,
            traceparent: traceparent.map(str::to_owned),
            webhook: None,
            context_id: None,
        };
        let shown = request
            .task_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let answer = self
            .call("POST", "/standins", Some(&encode(&request)?))
            .await?;
        if answer.status == 400
            && let Ok(ErrorBody {
                error,
                agents: Some(known),
            }) = serde_json::from_value::<ErrorBody>(answer.body.clone())
            && error.starts_with("unknown agent")
        {
            return Err(CliError::UnknownAgent {
                agent: agent.to_owned(),
                known,
            });
        }
        decode(judge(answer, &shown)?)
    }

    pub async fn reply(&self, id: &str, text: &str, parts: Vec<InputPart>) -> Result<(), CliError> {
        self.reply_as(id, text, parts, None).await
    }

    /// A reply under the parent's own name for it: sent again (a second click, a retry),
    /// the stand-in takes it once.
    pub async fn reply_as(
        &self,
        id: &str,
        text: &str,
        parts: Vec<InputPart>,
        reply_id: Option<&str>,
    ) -> Result<(), CliError> {
        let reply_id = reply_id
            .map(ReplyId::parse)
            .transpose()
            .map_err(|e| CliError::Refused(e.to_string()))?;
        let request = ReplyRequest {
            text: text.to_owned(),
            parts,
            reply_id,
        };
        let answer = self
            .call(
                "POST",
                &format!("/standins/{}/reply", path_id(id)?),
                Some(&encode(&request)?),
            )
            .await?;
        judge(answer, id).map(drop)
    }

    pub async fn cancel(&self, id: &str, reason: Option<&str>) -> Result<(), CliError> {
        let request = CancelRequest {
            reason: reason.map(str::to_owned),
        };
        let answer = self
            .call(
                "POST",
                &format!("/standins/{}/cancel", path_id(id)?),
                Some(&encode(&request)?),
            )
            .await?;
        judge(answer, id).map(drop)
    }

    /// The stand-in's row as the API shows it.
    pub async fn status(&self, id: &str) -> Result<StandInStatus, CliError> {
        let answer = self
            .call("GET", &format!("/standins/{}", path_id(id)?), None)
            .await?;
        decode(judge(answer, id)?)
    }

    /// The stand-in's note log after note `after`, every page of it, in order.
    pub async fn notes(&self, id: &str, after: u64) -> Result<Vec<ParentNote>, CliError> {
        let mut all = Vec::new();
        let mut after = after;
        loop {
            let path = format!("/standins/{}/notes?after={after}", path_id(id)?);
            let page: NotesPage = decode(judge(self.call("GET", &path, None).await?, id)?)?;
            all.extend(page.notes);
            match page.next {
                Some(next) if next > after => after = next,
                _ => break,
            }
        }
        Ok(all)
    }

    /// What the stand-in's sub-task produced, every page of it.
    pub async fn artifacts(&self, id: &str) -> Result<ArtifactsPage, CliError> {
        let base = format!("/standins/{}/artifacts", path_id(id)?);
        let mut all: ArtifactsPage = decode(judge(self.call("GET", &base, None).await?, id)?)?;
        while let Some(after) = all.next.take() {
            let path = format!("{base}?after={}", segment(&after));
            let page: ArtifactsPage = decode(judge(self.call("GET", &path, None).await?, id)?)?;
            all.artifacts.extend(page.artifacts);
            all.next = page.next.filter(|next| *next != after);
        }
        Ok(all)
    }

    /// One artifact, with a link per stored part.
    pub async fn artifact(&self, id: &str, artifact_id: &str) -> Result<ArtifactContent, CliError> {
        let path = format!(
            "/standins/{}/artifacts/{}",
            path_id(id)?,
            segment(artifact_id)
        );
        decode(judge(self.call("GET", &path, None).await?, id)?)
    }

    /// A part's bytes, read through its link (no signing: the link carries its own).
    pub async fn download(&self, link: &str) -> Result<Vec<u8>, CliError> {
        let response = self
            .http
            .get(link)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(CliError::Api {
                status,
                detail: "the part's link did not read (it lasts five minutes: ask again)".into(),
            });
        }
        let bytes = response.bytes().await.map_err(|e| self.unreachable(&e))?;
        Ok(bytes.to_vec())
    }

    /// One page of stand-ins (the API's order), of one agent when named; `next` is the
    /// `after` of the following page.
    pub async fn list_page(
        &self,
        after: Option<&str>,
        agent: Option<&str>,
    ) -> Result<ListPage, CliError> {
        let mut query = Vec::new();
        if let Some(after) = after.filter(|a| !a.is_empty()) {
            query.push(format!("after={}", segment(after)));
        }
        if let Some(agent) = agent.filter(|a| !a.is_empty()) {
            query.push(format!("agent={}", segment(agent)));
        }
        let path = match query.is_empty() {
            true => "/standins".to_owned(),
            false => format!("/standins?{}", query.join("&")),
        };
        decode(judge(self.call("GET", &path, None).await?, "")?)
    }

    /// The parent's turns of a stand-in (its start, each reply), oldest first.
    pub async fn turns(&self, id: &str) -> Result<Vec<TurnView>, CliError> {
        let path = format!("/standins/{}/turns", path_id(id)?);
        let page: TurnsPage = decode(judge(self.call("GET", &path, None).await?, id)?)?;
        Ok(page.turns)
    }

    /// Every stand-in, newest first (the API pages; this follows the pages).
    pub async fn list(&self) -> Result<Vec<Summary>, CliError> {
        let mut all = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let path = match &next {
                Some(after) => format!("/standins?after={after}"),
                None => "/standins".to_owned(),
            };
            let page: ListPage = decode(judge(self.call("GET", &path, None).await?, "")?)?;
            all.extend(page.standins);
            match page.next {
                Some(after) if !after.is_empty() => next = Some(after),
                _ => break,
            }
        }
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(all)
    }

    /// Adds or replaces a registry agent; the entry as stored. The entry is the user's:
    /// the control API judges it, and names what it refuses as it does for any caller.
    pub async fn put_agent(&self, entry: &Value) -> Result<AgentView, CliError> {
        let id = entry["id"].as_str().unwrap_or_default();
        let path = format!("/agents/{}", agent_path_id(id)?);
        let answer = self.send("PUT", &path, Some(entry)).await?;
        if answer.status == 400 {
            let problem = answer.body["error"]
                .as_str()
                .map_or_else(|| answer.body.to_string(), str::to_owned);
            return Err(CliError::BadAgent {
                id: id.to_owned(),
                problem,
            });
        }
        decode(judge(answer, "")?)
    }

    /// Puts every entry of an agents document, or none: the control API checks the
    /// whole document before it writes anything.
    pub async fn put_agents(&self, document: &Value) -> Result<Vec<AgentView>, CliError> {
        let answer = self.send("PUT", "/agents", Some(document)).await?;
        if answer.status == 400 {
            let problem = answer.body["error"]
                .as_str()
                .map_or_else(|| answer.body.to_string(), str::to_owned);
            let field = answer.body["field"].as_str().unwrap_or_default().to_owned();
            let problem = problem
                .strip_prefix(&format!("{field}: "))
                .map_or(problem.clone(), str::to_owned);
            return Err(CliError::Invalid { field, problem });
        }
        let page: AgentsPage = decode(judge(answer, "")?)?;
        Ok(page.agents)
    }

    /// One agent, the stack's or the registry's.
    pub async fn agent(&self, id: &str) -> Result<AgentView, CliError> {
        let path = format!("/agents/{}", agent_path_id(id)?);
        let answer = self.call("GET", &path, None).await?;
        decode(judge_agent(answer, id)?)
    }

    /// Removes a registry agent.
    pub async fn remove_agent(&self, id: &str) -> Result<(), CliError> {
        let path = format!("/agents/{}", agent_path_id(id)?);
        let answer = self.call("DELETE", &path, None).await?;
        judge_agent(answer, id).map(drop)
    }

    /// Every agent: the stack's, then the registry's (the API pages; this follows them).
    pub async fn agents(&self) -> Result<Vec<AgentView>, CliError> {
        let mut all = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let path = match &next {
                Some(after) => format!("/agents?after={}", agent_path_id(after)?),
                None => "/agents".to_owned(),
            };
            let page: AgentsPage = decode(judge(self.call("GET", &path, None).await?, "")?)?;
            all.extend(page.agents);
            match page.next {
                Some(after) if !after.is_empty() => next = Some(after),
                _ => break,
            }
        }
        Ok(all)
    }

    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<RawAnswer, CliError> {
        // The command holds itself to the control API's document both ways: a request
        // that does not fit is refused here as the API would refuse it (a field the user
        // gave, such as an empty message), an answer that does not fit is the API's fault.
        openapi::check_request(method, path, body).map_err(refused_here)?;
        self.send(method, path, body).await
    }

    /// Sends a request as it is; its answer is still held to the document.
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<RawAnswer, CliError> {
        let url = format!("{}{path}", self.base_url);
        let payload = body.map(Value::to_string).unwrap_or_default();
        let mut headers = vec![("host".to_owned(), host_of(&url))];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let signed = self.sign(method, &url, &headers, payload.as_bytes())?;
        let mut request = self.http.request(
            method
                .parse()
                .map_err(|_| CliError::Refused(format!("bad method {method}")))?,
            &url,
        );
        for (name, value) in headers
            .iter()
            .filter(|(n, _)| n != "host")
            .chain(signed.iter())
        {
            request = request.header(name, value);
        }
        if body.is_some() {
            request = request.body(payload);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        // An answer the command acts on must fit; a refusal is judged by its status
        // whatever its shape, so a proxy's or an older API's refusal still reads well.
        if (200..300).contains(&status) {
            openapi::check_response(method, path, status, &body).map_err(|e| CliError::Api {
                status,
                detail: format!("{e}: {body}"),
            })?;
        }
        Ok(RawAnswer { status, body })
    }

    fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, CliError> {
        let identity = self.credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("execute-api")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| CliError::Credentials(e.to_string()))?
            .into();
        let signable = SignableRequest::new(
            method,
            url,
            headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            SignableBody::Bytes(body),
        )
        .map_err(|e| CliError::Refused(format!("cannot sign {url}: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| CliError::Credentials(format!("signing failed: {e}")))?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect())
    }

    fn unreachable(&self, err: &reqwest::Error) -> CliError {
        match &self.target {
            Target::LocalStack { endpoint } if err.is_connect() => CliError::LocalStackDown {
                endpoint: endpoint.clone(),
            },
            _ => CliError::AwsUnreachable {
                service: "control API",
                region: self.region.clone(),
                detail: err.to_string(),
            },
        }
    }
}

/// Judges an answer: 2xx gives the body; the API's refusals become their own errors.
pub(crate) fn judge(answer: RawAnswer, id: &str) -> Result<Value, CliError> {
    // The function says `error`; API Gateway's own refusals say `message`.
    let message = answer.body["error"]
        .as_str()
        .or_else(|| answer.body["message"].as_str())
        .map_or_else(|| answer.body.to_string(), str::to_owned);
    match answer.status {
        200..=299 => Ok(answer.body),
        404 if !id.is_empty() && message.starts_with("no stand-in") => {
            Err(CliError::UnknownStandIn { id: id.to_owned() })
        }
        409 if message.ends_with("has ended") => Err(CliError::Ended { id: id.to_owned() }),
        400 => Err(match field_and_problem(&message) {
            Some((field, problem)) => CliError::Invalid { field, problem },
            None => CliError::Refused(message),
        }),
        409 => Err(CliError::Refused(message)),
        403 => Err(CliError::Credentials(format!(
            "the control API refused the signature: {message}"
        ))),
        status => Err(CliError::Api {
            status,
            detail: message,
        }),
    }
}

/// `field: problem`, as the control API words a field it refuses (`text: is required`).
fn field_and_problem(message: &str) -> Option<(String, String)> {
    let (field, problem) = message.split_once(": ")?;
    let names_a_field = field
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'))
        && field.starts_with(|c: char| c.is_ascii_alphabetic());
    names_a_field.then(|| (field.to_owned(), problem.to_owned()))
}

/// A request the document refuses, named as the control API names a field it refuses.
fn refused_here(error: openapi::ContractError) -> CliError {
    match error {
        openapi::ContractError::Misfit { at, problem, .. } if at.starts_with("$.") => {
            CliError::Invalid {
                field: at["$.".len()..].to_owned(),
                problem,
            }
        }
        other => CliError::Refused(format!("not sent: {other}")),
    }
}

/// An answer about one agent: a 404 is "no such agent".
fn judge_agent(answer: RawAnswer, id: &str) -> Result<Value, CliError> {
    if answer.status == 404 {
        return Err(CliError::NoAgent { id: id.to_owned() });
    }
    judge(answer, "")
}

/// An agent's id goes into the URL path as it is: 1 to 64 letters, digits, `.`, `_`, `-`.
fn agent_path_id(id: &str) -> Result<&str, CliError> {
    let fits = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if fits {
        Ok(id)
    } else {
        Err(CliError::BadAgent {
            id: id.to_owned(),
            problem: "id: must be 1 to 64 letters, digits, '.', '_' or '-'".into(),
        })
    }
}

/// A stand-in's id goes into the URL path as it is; anything else can't name one.
fn path_id(id: &str) -> Result<TaskId, CliError> {
    TaskId::parse(id).map_err(|_| CliError::UnknownStandIn { id: id.to_owned() })
}

pub(crate) fn encode(request: &impl serde::Serialize) -> Result<Value, CliError> {
    serde_json::to_value(request)
        .map_err(|e| CliError::Refused(format!("cannot write the request: {e}")))
}

/// An answer's body as the API's type for it; one that does not read is the API's fault.
pub(crate) fn decode<T: DeserializeOwned>(body: Value) -> Result<T, CliError> {
    serde_json::from_value(body.clone()).map_err(|e| CliError::Api {
        status: 200,
        detail: format!("an answer this command does not understand ({e}): {body}"),
    })
}

fn host_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_default()
}

/// An id as one path segment: every byte outside the unreserved set percent-encoded.
pub(crate) fn segment(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_the_document_refuses_names_the_field_as_the_api_does() {
        let said = |method: &str, path: &str, body: Value| {
            openapi::check_request(method, path, Some(&body))
                .map_err(refused_here)
                .expect_err("refused")
                .to_string()
        };
        assert_eq!(
            said("POST", "/standins", json!({"agent": "a", "message": ""})),
            "message: must not be empty"
        );
        assert_eq!(
            said("POST", "/standins/t/reply", json!({"text": 1})),
            "text: must be of type string, got 1"
        );
    }

    #[test]
    fn refusals_become_errors_a_user_can_act_on() {
        let not_found = RawAnswer {
            status: 404,
            body: json!({"error": "no stand-in x"}),
        };
        assert!(matches!(judge(not_found, "x"), Err(CliError::UnknownStandIn { id }) if id == "x"));
        let ended = RawAnswer {
            status: 409,
            body: json!({"error": "stand-in x has ended"}),
        };
        assert!(matches!(judge(ended, "x"), Err(CliError::Ended { .. })));
        let bad = RawAnswer {
            status: 400,
            body: json!({"error": "text: is required"}),
        };
        assert_eq!(
            judge(bad, "x").expect_err("refused").to_string(),
            "text: is required"
        );
        let unknown = RawAnswer {
            status: 400,
            body: json!({"error": "unknown agent \"w\": the stack knows a, b"}),
        };
        assert!(matches!(judge(unknown, "x"), Err(CliError::Refused(_))));
        let invalid = RawAnswer {
            status: 400,
            body: json!({"message": "Invalid request body"}),
        };
        assert!(
            matches!(judge(invalid, "x"), Err(CliError::Refused(m)) if m == "Invalid request body"),
            "API Gateway's validator says `message`"
        );
        let odd = RawAnswer {
            status: 502,
            body: json!("Bad Gateway"),
        };
        assert!(matches!(
            judge(odd, "x"),
            Err(CliError::Api { status: 502, .. })
        ));
        let fine = RawAnswer {
            status: 202,
            body: json!({"accepted": true}),
        };
        assert_eq!(judge(fine, "x").ok(), Some(json!({"accepted": true})));
    }

    #[test]
    fn ids_that_cannot_be_stand_ins_are_refused_before_any_call() {
        assert!(path_id("si-0a1b").is_ok());
        for bad in ["", "a/b", "../x", "a b", &"x".repeat(65)] {
            assert!(
                matches!(path_id(bad), Err(CliError::UnknownStandIn { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn agent_ids_that_cannot_be_a_path_segment_are_refused_before_any_call() {
        assert_eq!(agent_path_id("a-1.b_c").ok(), Some("a-1.b_c"));
        for bad in ["", "a/b", "..%2f", "a b", &"x".repeat(65)] {
            assert!(
                matches!(agent_path_id(bad), Err(CliError::BadAgent { .. })),
                "{bad:?}"
            );
        }
        let missing = RawAnswer {
            status: 404,
            body: json!({"error": "no agent \"x\""}),
        };
        assert!(matches!(judge_agent(missing, "x"), Err(CliError::NoAgent { id }) if id == "x"));
    }

    #[test]
    fn the_signed_host_keeps_its_port() {
        assert_eq!(host_of("http://127.0.0.1:4566/_aws/x"), "127.0.0.1:4566");
        assert_eq!(
            host_of("https://abc.execute-api.eu-west-1.amazonaws.com/Prod"),
            "abc.execute-api.eu-west-1.amazonaws.com"
        );
    }
}
