//! Where AgentCore Runtime is: the one AWS API the functions sign for (SigV4), as the
//! role an agent's entry names.

/// The AgentCore Runtime data plane's service name, the only one SigV4 signs for.
pub const AGENTCORE_SERVICE: &str = "bedrock-agentcore";

/// Where AgentCore Runtime's agents are on its data plane: `/runtimes/{arn}/invocations`.
pub const RUNTIMES_PATH: &str = "/runtimes/";

/// Whether `text` is a URL under the data plane's runtimes.
pub fn runtime_path(text: &str) -> bool {
    reqwest::Url::parse(text).is_ok_and(|url| url.path().starts_with(RUNTIMES_PATH))
}

/// AgentCore Runtime's data-plane origin in `region` (AWS's own endpoint; the China
/// partition's domain for a `cn-` region).
pub fn agentcore_data_plane(region: &str) -> String {
    let domain = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    format!("https://{AGENTCORE_SERVICE}.{region}.{domain}")
}

/// A URL's origin (`scheme://host[:port]`), None when it is not one.
pub fn origin_of(text: &str) -> Option<String> {
    let url = reqwest::Url::parse(text).ok()?;
    url.host_str()?;
    Some(url.origin().ascii_serialization())
}

/// Whether `host` is AgentCore Runtime's data plane in some region: an agent host,
/// whichever auth reaches it (SigV4, or the bearer token of its inbound JWT auth).
pub fn is_agentcore_data_plane(host: &str) -> bool {
    let Some(rest) = host.strip_prefix(&format!("{AGENTCORE_SERVICE}.")) else {
        return false;
    };
    ["amazonaws.com", "amazonaws.com.cn"].iter().any(|domain| {
        rest.strip_suffix(domain)
            .and_then(|region| region.strip_suffix('.'))
            .is_some_and(|region| {
                !region.is_empty()
                    && region
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    })
}
