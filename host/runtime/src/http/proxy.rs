//! Forward proxies: `--proxy URL`, or `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY` (and their lowercase
//! forms) from loadhost's own environment, never the plugin's `-e` one.
//!
//! An http target goes to the proxy as an absolute-form request (`GET http://host/path`); an https
//! target goes through a `CONNECT` tunnel, so TLS stays end to end, and so does every target under
//! `--h2c` (absolute form is HTTP/1.1 only). The allow-list judges the origin the plugin named
//! before any of this, so a host not allowed is denied before a proxy is contacted; the proxy's own
//! address needs no rule. `NO_PROXY` matching (curl's rules) and the tunnels are hyper-util's.

use http::{HeaderValue, Uri};
use hyper_util::client::proxy::matcher::{Intercept, Matcher};

/// A proxy URL and where it came from (`--proxy`, `HTTPS_PROXY`, …), for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxySetting {
    /// The URL as given.
    pub url: String,
    /// The flag or variable that gave it.
    pub from: &'static str,
}

/// The proxy settings of a run, before they are checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyOptions {
    /// The proxy for http:// targets.
    pub http: Option<ProxySetting>,
    /// The proxy for https:// targets.
    pub https: Option<ProxySetting>,
    /// Hosts that go direct (`NO_PROXY`: comma-separated names, IPs, CIDRs, `*`).
    pub no_proxy: String,
}

/// What `--proxy` takes to ignore the environment's proxies (an empty value does too).
pub const NO_PROXY_FLAG: &str = "none";

impl ProxyOptions {
    /// The settings from `--proxy` (`flag`) and loadhost's environment (`env`, a variable's
    /// value): the flag wins over `HTTP_PROXY`/`HTTPS_PROXY` for both schemes; `none` or an empty
    /// flag turns proxies off whatever the environment says. `NO_PROXY` applies either way.
    pub fn resolve(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Self {
        let first = |names: [&'static str; 2]| {
            names
                .into_iter()
                .find_map(|name| env(name).filter(|v| !v.trim().is_empty()).map(|url| ProxySetting { url, from: name }))
        };
        let no_proxy = first(["NO_PROXY", "no_proxy"]).map(|s| s.url).unwrap_or_default();
        match flag.map(str::trim) {
            Some(off) if off.is_empty() || off.eq_ignore_ascii_case(NO_PROXY_FLAG) => Self::default(),
            Some(url) => {
                let setting = ProxySetting { url: url.to_owned(), from: "--proxy" };
                Self { http: Some(setting.clone()), https: Some(setting), no_proxy }
            }
            None => Self {
                http: first(["HTTP_PROXY", "http_proxy"]),
                https: first(["HTTPS_PROXY", "https_proxy"]),
                no_proxy,
            },
        }
    }
}

/// A proxy setting loadhost cannot use.
#[derive(Debug, thiserror::Error)]
#[error("{from} {shown}: {why}")]
pub struct ProxyError {
    /// The flag or variable.
    pub from: &'static str,
    /// The URL, its credentials redacted.
    pub shown: String,
    /// What is wrong.
    pub why: String,
}

/// How a connection to a target is made.
#[derive(Debug)]
pub(crate) enum Route {
    /// Straight to the target.
    Direct,
    /// To the proxy, sending absolute-form requests (http targets).
    Forward(Intercept),
    /// Through a `CONNECT` tunnel opened by the proxy (https targets; every target under h2c).
    Tunnel(Intercept),
}

/// The checked proxy settings of a run.
#[derive(Debug, Default)]
pub struct Proxies {
    /// `None` without any proxy, so the plain path pays one branch.
    matcher: Option<Matcher>,
    /// Some proxy has credentials (then forwarded requests need a `Proxy-Authorization`).
    has_auth: bool,
    /// Tunnel http targets too (`--h2c`: prior-knowledge HTTP/2 cannot be forwarded).
    tunnel_http: bool,
}

impl Proxies {
    /// Check `options`; `h2c` tunnels http targets too.
    pub fn new(options: &ProxyOptions, h2c: bool) -> Result<Self, ProxyError> {
        let http = options.http.as_ref().map(check).transpose()?;
        let https = options.https.as_ref().map(check).transpose()?;
        if http.is_none() && https.is_none() {
            return Ok(Self::default());
        }
        let has_auth =
            http.iter().chain(https.iter()).any(|uri| uri.authority().is_some_and(|a| a.as_str().contains('@')));
        let mut builder = Matcher::builder().no(options.no_proxy.as_str());
        if let Some(setting) = &options.http {
            builder = builder.http(setting.url.trim());
        }
        if let Some(setting) = &options.https {
            builder = builder.https(setting.url.trim());
        }
        Ok(Self { matcher: Some(builder.build()), has_auth, tunnel_http: h2c })
    }

    /// Whether any target goes through a proxy.
    pub fn any(&self) -> bool {
        self.matcher.is_some()
    }

    /// How to reach `dst` (an absolute URI).
    pub(crate) fn route(&self, dst: &Uri) -> Route {
        let Some(proxy) = self.matcher.as_ref().and_then(|m| m.intercept(dst)) else { return Route::Direct };
        if dst.scheme_str() == Some("http") && !self.tunnel_http { Route::Forward(proxy) } else { Route::Tunnel(proxy) }
    }

    /// The `Proxy-Authorization` a request to `dst` needs when it is forwarded to a proxy with
    /// credentials (a tunnel sends its own, in the `CONNECT`).
    pub(crate) fn forward_auth(&self, dst: &Uri) -> Option<HeaderValue> {
        if !self.has_auth {
            return None;
        }
        match self.route(dst) {
            Route::Forward(proxy) => proxy.basic_auth().cloned(),
            Route::Direct | Route::Tunnel(_) => None,
        }
    }
}

/// A proxy URL loadhost can use: `http://[USER:PASS@]HOST[:PORT]` (port 80 by default), or
/// `HOST:PORT` alone.
fn check(setting: &ProxySetting) -> Result<Uri, ProxyError> {
    let url = setting.url.trim();
    let fail = |why: &str| ProxyError { from: setting.from, shown: redact(url), why: why.to_owned() };
    let uri: Uri = url.parse().map_err(|_| fail("not a URL: expected http://HOST:PORT"))?;
    match uri.scheme_str() {
        None | Some("http") => {}
        Some("https") => {
            return Err(fail(
                "a proxy reached over TLS is not supported: use http://HOST:PORT (https targets stay encrypted end to \
                 end through its CONNECT tunnel)",
            ));
        }
        Some(other) => {
            return Err(fail(&format!("{other}:// proxies are not supported: use an http://HOST:PORT proxy")));
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(fail("no host: expected http://HOST:PORT"));
    }
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty()) {
        return Err(fail("a proxy URL has no path: expected http://HOST:PORT"));
    }
    Ok(uri)
}

/// `url` with any `user:password@` replaced, so credentials never reach a log or an error.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let Some((_, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    let scheme = if scheme.is_empty() { String::new() } else { format!("{scheme}://") };
    format!("{scheme}[redacted]@{host}{path}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    fn proxies(http: &str, no_proxy: &str) -> Proxies {
        let vars = [("HTTP_PROXY", http), ("HTTPS_PROXY", http), ("NO_PROXY", no_proxy)];
        Proxies::new(&ProxyOptions::resolve(None, env(&vars)), false).unwrap()
    }

    fn route(proxies: &Proxies, url: &str) -> &'static str {
        match proxies.route(&url.parse().unwrap()) {
            Route::Direct => "direct",
            Route::Forward(_) => "forward",
            Route::Tunnel(_) => "tunnel",
        }
    }

    #[test]
    fn the_flag_wins_over_the_environment_and_none_turns_it_off() {
        let vars = [("HTTP_PROXY", "http://env:1"), ("https_proxy", "http://lower:2"), ("no_proxy", "a.example")];
        let from_env = ProxyOptions::resolve(None, env(&vars));
        assert_eq!(from_env.http.as_ref().unwrap().from, "HTTP_PROXY");
        assert_eq!(from_env.https.as_ref().unwrap().url, "http://lower:2");
        assert_eq!(from_env.no_proxy, "a.example");
        let flag = ProxyOptions::resolve(Some("http://flag:3"), env(&vars));
        assert_eq!(flag.http.as_ref().unwrap().url, "http://flag:3");
        assert_eq!(flag.https.as_ref().unwrap().from, "--proxy");
        assert_eq!(flag.no_proxy, "a.example", "NO_PROXY still applies to --proxy");
        assert_eq!(ProxyOptions::resolve(Some("none"), env(&vars)), ProxyOptions::default());
        assert_eq!(ProxyOptions::resolve(Some(""), env(&vars)), ProxyOptions::default());
        assert!(!Proxies::new(&ProxyOptions::resolve(None, env(&[])), false).unwrap().any());
    }

    #[test]
    fn uppercase_wins_and_empty_variables_count_as_unset() {
        let vars = [("HTTP_PROXY", " "), ("http_proxy", "http://lower:1"), ("HTTPS_PROXY", "http://UP:2")];
        let options = ProxyOptions::resolve(None, env(&vars));
        assert_eq!(options.http.unwrap().from, "http_proxy");
        assert_eq!(options.https.unwrap().url, "http://UP:2");
    }

    #[test]
    fn http_is_forwarded_https_tunnelled_and_h2c_tunnels_both() {
        let p = proxies("http://127.0.0.1:3128", "");
        assert_eq!(route(&p, "http://target.example/x"), "forward");
        assert_eq!(route(&p, "https://target.example/x"), "tunnel");
        let vars = [("HTTP_PROXY", "127.0.0.1:3128")];
        let h2c = Proxies::new(&ProxyOptions::resolve(None, env(&vars)), true).unwrap();
        assert_eq!(route(&h2c, "http://target.example/"), "tunnel");
        assert_eq!(route(&h2c, "https://target.example/"), "direct", "HTTPS_PROXY unset: https goes direct");
    }

    #[test]
    fn no_proxy_matches_names_subdomains_ips_and_networks() {
        let p = proxies("http://127.0.0.1:3128", "example.com, .internal, 10.0.0.0/8, ::1, 192.168.1.7");
        for direct in [
            "http://example.com/",
            "http://www.example.com:8080/",
            "https://EXAMPLE.COM/",
            "http://a.b.internal/",
            "http://10.1.2.3/",
            "http://[::1]:8080/",
            "http://192.168.1.7/",
        ] {
            assert_eq!(route(&p, direct), "direct", "{direct}");
        }
        for proxied in ["http://notexample.com/", "http://192.168.1.8/", "http://11.0.0.1/", "http://internal.org/"] {
            assert_eq!(route(&p, proxied), "forward", "{proxied}");
        }
        assert_eq!(route(&proxies("http://127.0.0.1:3128", "*"), "https://anything.example/"), "direct");
    }

    #[test]
    fn credentials_go_in_proxy_authorization_for_forwarded_requests_only() {
        let p = proxies("http://user:pa%20ss@127.0.0.1:3128", "direct.example");
        let auth = p.forward_auth(&"http://t.example/".parse().unwrap()).unwrap();
        assert_eq!(auth, "Basic dXNlcjpwYSBzcw==");
        assert!(p.forward_auth(&"https://t.example/".parse().unwrap()).is_none(), "the tunnel carries it");
        assert!(p.forward_auth(&"http://direct.example/".parse().unwrap()).is_none());
        assert!(proxies("http://127.0.0.1:3128", "").forward_auth(&"http://t.example/".parse().unwrap()).is_none());
    }

    #[test]
    fn unusable_proxies_are_refused_naming_the_source_without_the_password() {
        for (url, why) in [
            ("https://proxy:3128", "over TLS"),
            ("socks5://proxy:1080", "socks5:// proxies"),
            ("http://proxy:3128/path", "no path"),
            ("http://user:secret@ proxy", "not a URL"),
        ] {
            let options = ProxyOptions::resolve(Some(url), env(&[]));
            let err = Proxies::new(&options, false).unwrap_err().to_string();
            assert!(err.starts_with("--proxy "), "{err}");
            assert!(err.contains(why), "{url}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
        let vars = [("HTTPS_PROXY", "socks5h://u:p@h:1")];
        let err = Proxies::new(&ProxyOptions::resolve(None, env(&vars)), false).unwrap_err().to_string();
        assert!(err.starts_with("HTTPS_PROXY socks5h://[redacted]@h:1: "), "{err}");
    }

    #[test]
    fn redact_hides_userinfo_only() {
        assert_eq!(redact("http://u:p@h:1/"), "http://[redacted]@h:1/");
        assert_eq!(redact("u:p@h:1"), "[redacted]@h:1");
        assert_eq!(redact("http://h:1"), "http://h:1");
    }
}
