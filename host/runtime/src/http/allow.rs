//! The network allow-list (`--allow-host HOST[:PORT]`): without a matching rule a plugin reaches
//! nothing, over wasi:http or wasi:sockets alike.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs as _};
use std::str::FromStr;

/// One rule: a host name or IP address, and optionally one port (any port without it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    /// Lower-case host name, or an IP address without brackets.
    pub host: String,
    /// The one port allowed; `None` allows every port.
    pub port: Option<u16>,
}

const RULE_HINT: &str = "expected HOST or HOST:PORT, such as 127.0.0.1:8080, localhost or [::1]:443";

impl FromStr for AllowRule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let s = text.trim();
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(|| format!("'{text}': unclosed '[': {RULE_HINT}"))?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(|| format!("'{text}': {RULE_HINT}"))?)),
            }
        } else if s.matches(':').count() > 1 {
            // A bare IPv6 address: no port.
            (s, None)
        } else {
            match s.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (s, None),
            }
        };
        if host.is_empty() || host.contains('/') || host.contains(char::is_whitespace) {
            return Err(format!("'{text}' is not a host: {RULE_HINT}"));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| format!("'{text}' has a bad port: {RULE_HINT}"))?,
            ),
            None => None,
        };
        Ok(AllowRule { host: host.to_ascii_lowercase(), port })
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            Some(port) => write!(f, "{host}:{port}"),
            None => f.write_str(&host),
        }
    }
}

/// The rules, with the addresses their names resolve to (for sockets, which see only addresses).
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    rules: Vec<AllowRule>,
    addrs: Vec<(IpAddr, Option<u16>)>,
}

impl AllowList {
    /// Resolve each rule's host once, at start-up.
    pub fn new(rules: Vec<AllowRule>) -> Self {
        let mut addrs = Vec::new();
        for rule in &rules {
            match rule.host.parse::<IpAddr>() {
                Ok(ip) => addrs.push((ip, rule.port)),
                Err(_) => match (rule.host.as_str(), 0).to_socket_addrs() {
                    Ok(resolved) => addrs.extend(resolved.map(|a| (a.ip(), rule.port))),
                    Err(err) => {
                        tracing::warn!("--allow-host {rule}: cannot resolve it now ({err}); HTTP by name still works")
                    }
                },
            }
        }
        Self { rules, addrs }
    }

    /// Whether nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether an HTTP request to `host:port` may go out.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let by_name = self.rules.iter().any(|r| r.port.is_none_or(|p| p == port) && r.host.eq_ignore_ascii_case(host));
        by_name || host.parse::<IpAddr>().is_ok_and(|ip| self.allows_addr(SocketAddr::new(ip, port)))
    }

    /// Whether a socket may connect to (or bind) `addr`.
    pub fn allows_addr(&self, addr: SocketAddr) -> bool {
        self.addrs.iter().any(|(ip, port)| *ip == addr.ip() && port.is_none_or(|p| p == addr.port()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> AllowRule {
        s.parse().unwrap()
    }

    #[test]
    fn rules_parse_hosts_ports_and_ipv6() {
        assert_eq!(rule("127.0.0.1:8080"), AllowRule { host: "127.0.0.1".into(), port: Some(8080) });
        assert_eq!(rule("Example.COM"), AllowRule { host: "example.com".into(), port: None });
        assert_eq!(rule("[::1]:443"), AllowRule { host: "::1".into(), port: Some(443) });
        assert_eq!(rule("::1"), AllowRule { host: "::1".into(), port: None });
        for bad in ["", ":80", "host:0", "host:99999", "host:x", "[::1", "a b", "http://x"] {
            assert!(bad.parse::<AllowRule>().is_err(), "{bad} should be rejected");
        }
        assert_eq!(rule("[::1]:443").to_string(), "[::1]:443");
    }

    #[test]
    fn a_port_rule_allows_only_that_port() {
        let list = AllowList::new(vec![rule("127.0.0.1:8080")]);
        assert!(list.allows("127.0.0.1", 8080));
        assert!(!list.allows("127.0.0.1", 8081));
        assert!(!list.allows("10.0.0.1", 8080));
        assert!(list.allows_addr("127.0.0.1:8080".parse().unwrap()));
        assert!(!list.allows_addr("127.0.0.1:22".parse().unwrap()));
    }

    #[test]
    fn names_match_by_name_and_by_their_addresses() {
        let list = AllowList::new(vec![rule("localhost")]);
        assert!(list.allows("LOCALHOST", 1234));
        assert!(list.allows("127.0.0.1", 80), "localhost resolves to 127.0.0.1");
        assert!(list.allows_addr("127.0.0.1:9".parse().unwrap()));
        assert!(!list.allows("example.com", 80));
        assert!(AllowList::default().is_empty());
        assert!(!AllowList::default().allows("127.0.0.1", 80));
    }
}
