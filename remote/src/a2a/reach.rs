//! Where a stand-in may connect. The agent card names the interface to call; a hostile or
//! broken card must not turn the stand-in against other hosts (SSRF): the interface must
//! share the configured URL's origin unless the agents document lists its origin in
//! `allowed_origins`, and neither the agent's own URL (its card's) nor the interface may
//! resolve to a loopback, link-local or private address unless the deployment allows
//! private agents (`AllowPrivateAgents`; always on LocalStack): agents may be added at
//! run time, and the function's own neighbours (the Lambda Runtime API on loopback, the
//! metadata service) must stay out of reach.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;

use crate::error::RemoteError;

/// Checks the interface a card chose against the configured agent URL.
pub async fn check_interface(
    configured_url: &str,
    allowed_origins: &[String],
    endpoint: &Url,
    allow_private: bool,
) -> Result<(), RemoteError> {
    let configured = Url::parse(configured_url).map_err(|e| {
        RemoteError::Card(format!("agent url {configured_url:?} is not a URL: {e}"))
    })?;
    let origin = endpoint.origin().ascii_serialization();
    let own = configured.origin().ascii_serialization();
    if origin != own && !allowed_origins.contains(&origin) {
        return Err(RemoteError::Refused(format!(
            "the card's interface is at {origin}, not at the agent's own origin {own}; list it in the agent's allowed_origins to allow it"
        )));
    }
    check_target(endpoint, "the card's interface", allow_private).await
}

/// Refuses `url` (`what`, for the message) when its host resolves to a non-public
/// address, unless private agents are allowed.
pub async fn check_target(url: &Url, what: &str, allow_private: bool) -> Result<(), RemoteError> {
    // Whatever the deployment allows, each address the host resolves to is held to what
    // no agent may be (a name, `0.0.0.0` or a mapped IPv6 form cannot pass for another).
    let port = url.port_or_known_default().unwrap_or_default();
    let runtime_api = std::env::var("AWS_LAMBDA_RUNTIME_API").ok();
    let addresses = addresses(url).await?;
    for ip in &addresses {
        if let Some(why) = never_reached(*ip, port, runtime_api.as_deref()) {
            return Err(RemoteError::Refused(format!(
                "{what} is {why}; no agent may be there"
            )));
        }
    }
    if allow_private {
        return Ok(());
    }
    if url.host_str() == Some("localhost") {
        return Err(RemoteError::Refused(format!(
            "{what} is on localhost; private agents are not allowed in this deployment (AllowPrivateAgents)"
        )));
    }
    if let Some(ip) = addresses.into_iter().find(|ip| !is_public(*ip)) {
        return Err(RemoteError::Refused(format!(
            "{what} host {} resolves to the non-public address {ip}; private agents are not allowed in this deployment (AllowPrivateAgents)",
            url.host_str().unwrap_or_default()
        )));
    }
    Ok(())
}

/// What no agent may be, even where private agents are allowed: the function's Lambda
/// Runtime API (`runtime_api`, its `host:port`), whose next invocation and answers a
/// request could forge, and a link-local address (the metadata services). The check is
/// on the address resolved before the connection; where private agents are allowed the
/// connection resolves again, so a name whose answer changes in between is the
/// deployment's risk to take (`AllowPrivateAgents` is for LocalStack and private VPCs).
fn never_reached(ip: IpAddr, port: u16, runtime_api: Option<&str>) -> Option<&'static str> {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => embedded_v4(v6),
    };
    let link_local = match (ip, v4) {
        (_, Some(v4)) => v4.is_link_local(),
        (IpAddr::V6(v6), None) => v6.is_unicast_link_local(),
        (IpAddr::V4(_), None) => false,
    };
    if link_local {
        return Some("a link-local address (a metadata service)");
    }
    let local = |ip: IpAddr, v4: Option<Ipv4Addr>| {
        ip.is_loopback()
            || ip.is_unspecified()
            || v4.is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
    };
    let runtime = runtime_api.and_then(|api| {
        let (host, at) = api.rsplit_once(':')?;
        let at: u16 = at.parse().ok()?;
        let host = host.trim_matches(['[', ']']);
        let host = if host.eq_ignore_ascii_case("localhost") {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            host.parse::<IpAddr>().ok()?
        };
        Some((host, at))
    });
    let (api_ip, api_port) = runtime?;
    let same_host = ip == api_ip || (local(ip, v4) && local(api_ip, None));
    (port == api_port && same_host).then_some("the Lambda Runtime API")
}

async fn addresses(url: &Url) -> Result<Vec<IpAddr>, RemoteError> {
    let host = url
        .host_str()
        .ok_or_else(|| RemoteError::Card(format!("{url} has no host")))?;
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let found = tokio::net::lookup_host((host, port))
        .await
        .map_err(|_| RemoteError::Transport(format!("cannot resolve {host}")))?;
    Ok(found.map(|a| a.ip()).collect())
}

/// The agent client's resolver where private agents are not allowed: a host's
/// addresses, the non-public ones refused, resolved once for the connection itself. A
/// check that resolves apart from the connection can be passed by a DNS answer that
/// changes in between (a TTL of 0 switching to loopback); this one cannot.
#[derive(Debug, Clone, Copy)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(private) = found.iter().find(|a| !is_public(a.ip())) {
                let refused: Box<dyn std::error::Error + Send + Sync> = format!(
                    "{host} resolves to the non-public address {}; private agents are not allowed in this deployment (AllowPrivateAgents)",
                    private.ip()
                )
                .into();
                return Err(refused);
            }
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// Whether an address is on the public internet (not loopback, private, link-local —
/// the instance metadata service's 169.254.169.254 included — shared, or reserved).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:abcd:efgh::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] | [0, 0, 0, 0, 0, 0, ..] => Some(tail()),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(tail()),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (18..20).contains(&b))
        || ip.is_multicast()
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || ip.is_multicast())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap_or_else(|_| {
            Url::parse("http://invalid.invalid").unwrap_or_else(|_| unreachable!())
        })
    }

    /// Allowing private agents (LocalStack, a VPC) opens loopback and private ranges,
    /// never the function's own Runtime API or a metadata service, in any spelling.
    #[tokio::test]
    async fn the_runtime_api_and_link_local_are_refused_even_where_private_agents_are_allowed() {
        let api = Some("127.0.0.1:9001");
        let ip = |s: &str| s.parse::<IpAddr>().unwrap_or_else(|_| unreachable!());
        for (at, port, refused) in [
            ("127.0.0.1", 9001, true),
            ("0.0.0.0", 9001, true),
            ("::1", 9001, true),
            ("::ffff:127.0.0.1", 9001, true),
            ("169.254.169.254", 80, true),
            ("::ffff:169.254.169.254", 80, true),
            ("fe80::1", 80, true),
            ("127.0.0.1", 27110, false),
            ("10.0.0.7", 9001, false),
        ] {
            assert_eq!(
                never_reached(ip(at), port, api).is_some(),
                refused,
                "{at}:{port}"
            );
        }
        for (target, why) in [
            ("http://169.254.170.2/v2/credentials", "link-local"),
            ("http://[::ffff:a9fe:a9fe]/latest/meta-data/", "link-local"),
        ] {
            let refused = check_target(&url(target), "the agent's card", true).await;
            assert!(
                matches!(&refused, Err(RemoteError::Refused(m)) if m.contains(why)),
                "{target}: {refused:?}"
            );
        }
    }

    #[test]
    fn private_loopback_link_local_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(
                !is_public(ip.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))),
                "{ip}"
            );
        }
        for ip in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(
                is_public(ip.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))),
                "{ip}"
            );
        }
    }

    #[tokio::test]
    async fn another_origin_is_refused_unless_allowed() {
        let configured = "http://127.0.0.1:27101";
        let other = url("http://127.0.0.1:9999/");
        let refused = check_interface(configured, &[], &other, true).await;
        assert!(
            matches!(&refused, Err(RemoteError::Refused(m)) if m.contains("allowed_origins")),
            "{refused:?}"
        );
        let allowed = ["http://127.0.0.1:9999".to_owned()];
        assert_eq!(
            check_interface(configured, &allowed, &other, true).await,
            Ok(())
        );
        assert_eq!(
            check_interface(configured, &[], &url("http://127.0.0.1:27101/rpc"), true).await,
            Ok(()),
            "the same origin, another path"
        );
    }

    /// An agent added at run time could name the function's neighbours: the Lambda
    /// Runtime API on loopback, the metadata service. Refused unless allowed.
    #[tokio::test]
    async fn a_private_agent_is_refused_unless_the_deployment_allows_them() {
        for target in [
            "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:8080/",
            "http://10.0.0.5/",
        ] {
            let refused = check_target(&url(target), "the agent's card", false).await;
            let metadata = target.contains("169.254");
            assert!(
                matches!(&refused, Err(RemoteError::Refused(m))
                    if m.contains(if metadata { "link-local" } else { "AllowPrivateAgents" })),
                "{target}: {refused:?}"
            );
            // Allowed, but never the metadata service.
            let allowed = check_target(&url(target), "the agent's card", true).await;
            assert_eq!(allowed.is_ok(), !metadata, "{target}: {allowed:?}");
        }
        assert_eq!(
            check_target(&url("https://93.184.216.34/"), "the agent's card", false).await,
            Ok(())
        );
    }

    /// The connection itself refuses a private address, whatever was checked before: a
    /// name that resolves to loopback when the connection is made (as a DNS answer with a
    /// TTL of 0 may switch) is not connected to, though a server listens there.
    #[tokio::test]
    async fn the_connection_is_made_only_to_public_addresses_it_resolved_itself() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|_| unreachable!());
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await;
            }
        });
        let public = crate::tls::Roots::built_in()
            .public_only()
            .agent_http_client()
            .unwrap_or_else(|_| unreachable!());
        let refused = public
            .get(format!("http://localhost:{port}/"))
            .send()
            .await
            .err()
            .map(|e| format!("{e:?}"))
            .unwrap_or_default();
        assert!(refused.contains("AllowPrivateAgents"), "{refused}");
        let private = crate::tls::Roots::built_in()
            .agent_http_client()
            .unwrap_or_else(|_| unreachable!());
        let answered = private
            .get(format!("http://127.0.0.1:{port}/"))
            .send()
            .await
            .map(|r| r.status().as_u16());
        assert_eq!(
            answered.ok(),
            Some(200),
            "a deployment that allows them connects"
        );
    }

    #[tokio::test]
    async fn a_public_agent_may_not_point_at_private_addresses() {
        // The configured URL is public; the card (allowed to name another origin) points
        // at the instance metadata address, or at loopback.
        let configured = "https://93.184.216.34";
        for target in [
            "http://169.254.169.254/",
            "http://127.0.0.1:8080/",
            "http://[::1]/",
        ] {
            let endpoint = url(target);
            let allowed = [endpoint.origin().ascii_serialization()];
            let refused = check_interface(configured, &allowed, &endpoint, false).await;
            assert!(
                matches!(&refused, Err(RemoteError::Refused(m))
                    if m.contains("non-public") || m.contains("link-local")),
                "{target}: {refused:?}"
            );
        }
    }
}
