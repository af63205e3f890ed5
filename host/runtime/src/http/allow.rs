//! The network allow-list (`--allow-host`): without a matching rule a plugin reaches nothing, over
//! wasi:http, the one-call HTTP interface or wasi:sockets alike, and it may look up only the names
//! the rules give.
//!
//! A rule is `HOST` (ports 80 and 443 only, HTTP's and HTTPS's defaults), `HOST:PORT` (that port)
//! or `HOST:*` (every port: it must be asked for in so many words). Whatever the rules say, the
//! host's own listeners (`--control`, `--metrics-addr`) are never reachable: a plugin must not be
//! able to stop, steer or read the run it is part of.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs as _};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

/// Which ports a rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// HTTP's and HTTPS's default ports, 80 and 443 (a bare `HOST`).
    Defaults,
    /// Every port (`HOST:*`).
    Any,
    /// This one (`HOST:PORT`).
    One(u16),
}

impl Ports {
    fn allow(self, port: u16) -> bool {
        match self {
            Ports::Defaults => port == 80 || port == 443,
            Ports::Any => true,
            Ports::One(p) => p == port,
        }
    }
}

/// One rule: a host name or IP address, and the ports it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    /// Lower-case host name, or an IP address without brackets.
    pub host: String,
    /// The ports allowed.
    pub ports: Ports,
}

const RULE_HINT: &str = "expected HOST (ports 80 and 443), HOST:PORT or HOST:* (every port), such as \
                         127.0.0.1:8080, localhost or [::1]:443";

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
        let ports = match port {
            None => Ports::Defaults,
            Some("*") => Ports::Any,
            Some(p) => Ports::One(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| format!("'{text}' has a bad port: {RULE_HINT}"))?,
            ),
        };
        Ok(AllowRule { host: host.to_ascii_lowercase(), ports })
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.ports {
            Ports::Defaults => f.write_str(&host),
            Ports::Any => write!(f, "{host}:*"),
            Ports::One(port) => write!(f, "{host}:{port}"),
        }
    }
}

/// The host's own listening sockets, each with the flag that opened it: no plugin may reach them.
#[derive(Debug, Clone, Default)]
pub struct OwnListeners(Arc<Mutex<Vec<(SocketAddr, &'static str)>>>);

impl OwnListeners {
    /// Refuse plugins `addr`, which the host listens on for `flag`.
    pub fn add(&self, addr: SocketAddr, flag: &'static str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push((addr, flag));
    }

    /// The flag of the host's listener a connection to `dst` would reach, if any.
    pub fn reached_by(&self, dst: SocketAddr) -> Option<&'static str> {
        let listeners = self.0.lock().unwrap_or_else(|p| p.into_inner());
        listeners.iter().find(|(l, _)| l.port() == dst.port() && reaches(l.ip(), dst.ip())).map(|(_, flag)| *flag)
    }

    /// The host's listener a request to `host:port` would reach (its address and flag), as far as
    /// it can be told without a name lookup: an IP literal, or `localhost`. Other names are judged
    /// where they resolve, when connecting.
    pub fn reached_from(&self, host: &str, port: u16) -> Option<(SocketAddr, &'static str)> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ips = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) if host.trim_end_matches('.').eq_ignore_ascii_case("localhost") => {
                vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
            }
            Err(_) => return None,
        };
        ips.into_iter().map(|ip| SocketAddr::new(ip, port)).find_map(|addr| Some((addr, self.reached_by(addr)?)))
    }
}

/// Whether a connection to `dst` arrives at a socket listening on `listener` (on this machine).
fn reaches(listener: IpAddr, dst: IpAddr) -> bool {
    let (listener, dst) = (listener.to_canonical(), dst.to_canonical());
    // Linux takes a connection to 0.0.0.0 or :: as one to this machine.
    if dst.is_unspecified() || listener == dst {
        return true;
    }
    listener.is_unspecified() && (dst.is_loopback() || local_addresses().contains(&dst))
}

/// This machine's interface addresses (read once).
fn local_addresses() -> &'static [IpAddr] {
    static LOCAL: OnceLock<Vec<IpAddr>> = OnceLock::new();
    LOCAL.get_or_init(|| {
        let mut found = Vec::new();
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs fills `list` with a linked list it allocates; it is walked read-only
        // below and released with freeifaddrs once.
        if unsafe { libc::getifaddrs(&mut list) } != 0 {
            return found;
        }
        let mut at = list;
        while !at.is_null() {
            // SAFETY: `at` is a node of the list getifaddrs returned, not yet freed.
            let entry = unsafe { &*at };
            if !entry.ifa_addr.is_null() {
                // SAFETY: a non-null ifa_addr points to a sockaddr whose family says its type.
                let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
                if family == libc::AF_INET {
                    // SAFETY: the family is AF_INET, so this is a sockaddr_in.
                    let v4 = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                    found.push(IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes()));
                } else if family == libc::AF_INET6 {
                    // SAFETY: the family is AF_INET6, so this is a sockaddr_in6.
                    let v6 = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in6) };
                    found.push(IpAddr::from(v6.sin6_addr.s6_addr));
                }
            }
            at = entry.ifa_next;
        }
        // SAFETY: `list` came from getifaddrs and is freed exactly once.
        unsafe { libc::freeifaddrs(list) };
        found
    })
}

/// The rules, with the addresses their names resolve to (for sockets, which see only addresses),
/// and the host's own listeners.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    rules: Vec<AllowRule>,
    addrs: Vec<(IpAddr, Ports)>,
    own: OwnListeners,
}

impl AllowList {
    /// Resolve each rule's host once, at start-up.
    pub fn new(rules: Vec<AllowRule>) -> Self {
        let mut addrs = Vec::new();
        for rule in &rules {
            match rule.host.parse::<IpAddr>() {
                Ok(ip) => addrs.push((ip, rule.ports)),
                Err(_) => match (rule.host.as_str(), 0).to_socket_addrs() {
                    Ok(resolved) => addrs.extend(resolved.map(|a| (a.ip(), rule.ports))),
                    Err(err) => {
                        tracing::warn!("--allow-host {rule}: cannot resolve it now ({err}); HTTP by name still works")
                    }
                },
            }
        }
        Self { rules, addrs, own: OwnListeners::default() }
    }

    /// Whether nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The host's own listeners, refused whatever the rules say.
    pub fn own_listeners(&self) -> &OwnListeners {
        &self.own
    }

    /// Whether an HTTP request to `host:port` may go out (the host's own listeners are refused
    /// where the name resolves, when connecting).
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let by_name = self.rules.iter().any(|r| r.ports.allow(port) && r.host.eq_ignore_ascii_case(host));
        by_name || host.parse::<IpAddr>().is_ok_and(|ip| self.allows_addr(SocketAddr::new(ip, port)))
    }

    /// Whether a socket may connect to (or send to) `addr`.
    pub fn allows_addr(&self, addr: SocketAddr) -> bool {
        let ip = addr.ip().to_canonical();
        self.own.reached_by(addr).is_none()
            && self.addrs.iter().any(|(allowed, ports)| allowed.to_canonical() == ip && ports.allow(addr.port()))
    }

    /// Whether a plugin may look `name` up (wasi:sockets `ip-name-lookup`): only names a rule
    /// gives, so a lookup cannot carry anything out; IP literals need no lookup and pass.
    pub fn allows_lookup(&self, name: &str) -> bool {
        let name = name.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
        name.parse::<IpAddr>().is_ok() || self.rules.iter().any(|r| r.host.eq_ignore_ascii_case(name))
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
        assert_eq!(rule("127.0.0.1:8080"), AllowRule { host: "127.0.0.1".into(), ports: Ports::One(8080) });
        assert_eq!(rule("Example.COM"), AllowRule { host: "example.com".into(), ports: Ports::Defaults });
        assert_eq!(rule("example.com:*"), AllowRule { host: "example.com".into(), ports: Ports::Any });
        assert_eq!(rule("[::1]:443"), AllowRule { host: "::1".into(), ports: Ports::One(443) });
        assert_eq!(rule("[::1]:*").ports, Ports::Any);
        assert_eq!(rule("::1"), AllowRule { host: "::1".into(), ports: Ports::Defaults });
        for bad in ["", ":80", "host:0", "host:99999", "host:x", "[::1", "a b", "http://x", "host:**"] {
            assert!(bad.parse::<AllowRule>().is_err(), "{bad} should be rejected");
        }
        assert_eq!(rule("[::1]:443").to_string(), "[::1]:443");
        assert_eq!(rule("h:*").to_string(), "h:*");
    }

    #[test]
    fn a_bare_host_allows_the_default_ports_and_star_every_port() {
        let bare = AllowList::new(vec![rule("127.0.0.1")]);
        assert!(bare.allows("127.0.0.1", 80) && bare.allows("127.0.0.1", 443));
        assert!(!bare.allows("127.0.0.1", 8080), "a bare host is not every port");
        let any = AllowList::new(vec![rule("127.0.0.1:*")]);
        assert!(any.allows("127.0.0.1", 8080) && any.allows_addr("127.0.0.1:22".parse().unwrap()));
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
        let list = AllowList::new(vec![rule("localhost:*")]);
        assert!(list.allows("LOCALHOST", 1234));
        assert!(list.allows("127.0.0.1", 80), "localhost resolves to 127.0.0.1");
        assert!(list.allows_addr("127.0.0.1:9".parse().unwrap()));
        assert!(!list.allows("example.com", 80));
        assert!(AllowList::default().is_empty());
        assert!(!AllowList::default().allows("127.0.0.1", 80));
    }

    #[test]
    fn the_hosts_own_listeners_are_refused_whatever_the_rules_say() {
        let list = AllowList::new(vec![rule("127.0.0.1:*")]);
        list.own_listeners().add("127.0.0.1:9100".parse().unwrap(), "--control");
        list.own_listeners().add("0.0.0.0:9200".parse().unwrap(), "--metrics-addr");
        assert!(!list.allows_addr("127.0.0.1:9100".parse().unwrap()));
        assert_eq!(list.own_listeners().reached_by("127.0.0.1:9100".parse().unwrap()), Some("--control"));
        assert_eq!(list.own_listeners().reached_by("0.0.0.0:9100".parse().unwrap()), Some("--control"));
        assert_eq!(list.own_listeners().reached_by("127.0.0.2:9100".parse().unwrap()), None, "bound to 127.0.0.1 only");
        assert_eq!(list.own_listeners().reached_by("127.0.0.9:9200".parse().unwrap()), Some("--metrics-addr"));
        assert_eq!(list.own_listeners().reached_by("[::ffff:127.0.0.1]:9200".parse().unwrap()), Some("--metrics-addr"));
        assert!(list.allows_addr("127.0.0.1:9101".parse().unwrap()), "other ports stay allowed");
        let own = list.own_listeners();
        assert_eq!(own.reached_from("127.0.0.1", 9100), Some(("127.0.0.1:9100".parse().unwrap(), "--control")));
        assert_eq!(own.reached_from("LocalHost.", 9100).map(|(_, flag)| flag), Some("--control"));
        assert_eq!(own.reached_from("[::1]", 9200).map(|(_, flag)| flag), Some("--metrics-addr"));
        assert_eq!(own.reached_from("example.com", 9100), None, "a name is judged when it resolves");
        assert_eq!(own.reached_from("127.0.0.1", 9101), None);
    }

    #[test]
    fn only_names_on_the_list_may_be_looked_up() {
        let list = AllowList::new(vec![rule("localhost:8080"), rule("127.0.0.1")]);
        assert!(list.allows_lookup("localhost") && list.allows_lookup("LOCALHOST."));
        assert!(list.allows_lookup("10.1.2.3"), "an IP literal is no lookup");
        assert!(!list.allows_lookup("secret-data.example.com"));
    }
}
