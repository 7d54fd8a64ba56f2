//! One error per failure a user can act on; each prints as one line that says what to do.

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(
        "cannot reach LocalStack at {endpoint}: start it with `make up` (or `bash localstack/up`), or pass --endpoint URL"
    )]
    LocalStackDown { endpoint: String },

    #[error("cannot reach AWS ({service}) in {region}: {detail}")]
    AwsUnreachable {
        service: &'static str,
        region: String,
        detail: String,
    },

    #[error(
        "no stack {stack:?} in {place}: deploy it first (`make up` on LocalStack, `sam deploy` on AWS) or pass --stack NAME"
    )]
    NoStack { stack: String, place: String },

    #[error(
        "stack {stack:?} has no output {key}: is it a stand-in stack? Redeploy it from this repository's template.yaml"
    )]
    MissingOutput { stack: String, key: &'static str },

    #[error("no stand-in {id:?}: `standin list` shows the stand-ins there are")]
    UnknownStandIn { id: String },

    #[error("unknown agent {agent:?}: this stack knows {}", known_list(.known))]
    UnknownAgent { agent: String, known: Vec<String> },

    #[error("no agent {id:?}: `standin agents list` shows the agents there are")]
    NoAgent { id: String },

    #[error("agent {id:?}: {problem}")]
    BadAgent { id: String, problem: String },

    /// Input the control API's rules refuse, as `field: what was expected, got what`
    /// (`agents[1].follow_interval: must be at least 1 second, got 0.5`).
    #[error("{field}: {problem}")]
    Invalid { field: String, problem: String },

    #[error("cannot read {path}: {detail}")]
    Input { path: String, detail: String },

    #[error("stand-in {id:?} has ended: it takes no more replies or cancels")]
    Ended { id: String },

    #[error("the control API refused the request: {0}")]
    Refused(String),

    #[error("{0}")]
    Mcp(String),

    #[error("the control API answered {status}: {detail}")]
    Api { status: u16, detail: String },

    #[error("no AWS credentials: {0} (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)")]
    Credentials(String),

    #[error("no AWS region: set AWS_REGION (or a region in your AWS profile)")]
    NoRegion,

    #[error("{service}: {detail}")]
    Aws {
        service: &'static str,
        detail: String,
    },
}

/// The innermost cause of an error, on one line: SDK errors nest the useful part (a DNS
/// failure, a refused connection) several sources deep and print their chain over lines.
pub fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(source) = cause.source() {
        cause = source;
    }
    one_line(&cause.to_string())
}

/// The first line of a message, trimmed.
pub fn one_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().trim().to_owned()
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "no agents (its Agents parameter is empty)".into()
    } else {
        known.join(", ")
    }
}
