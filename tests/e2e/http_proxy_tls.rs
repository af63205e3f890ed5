//! Forward proxies and client certificates (issue 18), against the built-in target: requests go
//! through Debian's tinyproxy on loopback (`cargo xtask setup` installs it), whose log shows what it
//! carried; an mTLS target (`loadhost target --require-client-cert`) refuses a client without a
//! certificate and serves one with it.

use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Example, Loadhost, Run, assert_none_passed, assert_ok, plugin, task_count};
use crate::target_process::TargetProcess;

/// tinyproxy on 127.0.0.1, in the foreground, logging every request it carries to a file.
struct Tinyproxy {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    url: String,
    log: PathBuf,
    /// Connections logged before any test traffic (the check that it listens).
    baseline: usize,
    _dir: tempfile::TempDir,
}

impl Tinyproxy {
    /// Start one that opens CONNECT tunnels to `connect_port` only (besides tinyproxy's 443).
    fn start(connect_port: u16) -> Self {
        Self::start_with(connect_port, "")
    }

    /// [`Tinyproxy::start`] with more configuration lines (`BasicAuth USER PASSWORD`).
    fn start_with(connect_port: u16, extra: &str) -> Self {
        let tinyproxy = Path::new("/usr/bin/tinyproxy");
        assert!(
            tinyproxy.is_file(),
            "the proxy tests need tinyproxy: run `cargo xtask setup` (or apt-get install tinyproxy)"
        );
        let dir = tempfile::tempdir().unwrap();
        // A free port: bound and let go (tinyproxy cannot be told to pick one and print it).
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = dir.path().join("tinyproxy.log");
        let conf = dir.path().join("tinyproxy.conf");
        let config = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogFile \"{}\"\nLogLevel Info\nMaxClients 64\n\
             Allow 127.0.0.1\nConnectPort 443\nConnectPort {connect_port}\n{extra}\n",
            log.display()
        );
        std::fs::write(&conf, config).unwrap();
        let child = Command::new(tinyproxy)
            .args(["-d", "-c"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy starts");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "tinyproxy did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut proxy = Self { child, url: format!("http://127.0.0.1:{port}"), log, baseline: 0, _dir: dir };
        // The check above is a connection too: wait for it in the log, so it is not counted.
        while proxy.connections() == 0 {
            assert!(started.elapsed() < Duration::from_secs(10), "tinyproxy logged no connection");
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy.baseline = proxy.connections();
        proxy
    }

    /// The request lines it logged (`GET http://… HTTP/1.1`, `CONNECT host:port HTTP/1.1`).
    fn requests(&self) -> Vec<String> {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            file.read_to_string(&mut text).unwrap();
        }
        text.lines()
            .filter_map(|l| l.split_once("): ").filter(|_| l.contains("Request (")).map(|(_, r)| r.to_owned()))
            .collect()
    }

    /// Connections it accepted since it started listening.
    fn connections(&self) -> usize {
        let all = std::fs::read_to_string(&self.log).unwrap_or_default().matches("Connect (file descriptor").count();
        all - self.baseline
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn metric(run: &Run, name: &str) -> u64 {
    run.summary()["metrics"][name]["count"].as_u64().unwrap_or(0)
}

#[test]
fn http_goes_through_the_proxy_given_and_the_proxy_saw_it() {
    let target = TargetProcess::start(&[]);
    let proxy = Tinyproxy::start(1);
    let url = format!("TARGET_URL={}/", target.url);
    // Only the target is allowed: the proxy's own address needs no rule.
    let base = ["-e", &url, "--allow-host", &target.authority, "-n", "6", "-w", "2"];

    let proxied = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&base[..], &["--proxy", &proxy.url]].concat());
    assert_ok(&proxied);
    assert_eq!(task_count(&proxied.summary(), "passed"), 6, "{}", proxied.stderr);
    let wanted = format!("GET {}/ HTTP/1.1", target.url);
    let seen = proxy.requests();
    assert_eq!(seen.iter().filter(|r| **r == wanted).count(), 6, "absolute-form requests in the proxy's log: {seen:?}");

    // Without the flag (and with no proxy in loadhost's environment) nothing goes through it.
    let direct = Loadhost::run_plugin(&plugin(Example::HttpGet), &base);
    assert_ok(&direct);
    assert_eq!(proxy.requests().len(), 6, "a run without --proxy went through the proxy");
}

#[test]
fn the_environment_proxy_is_loadhosts_own_and_proxy_none_ignores_it() {
    let target = TargetProcess::start(&[]);
    let proxy = Tinyproxy::start(1);
    let url = format!("TARGET_URL={}/", target.url);
    let base = ["-e", &url, "--allow-host", &target.authority, "-n", "3", "-w", "1"];
    let from_env = Loadhost::new().env("HTTP_PROXY", &proxy.url).arg_run(&plugin(Example::HttpGet), &base).run();
    assert_ok(&from_env);
    assert_eq!(proxy.requests().len(), 3, "HTTP_PROXY in loadhost's environment applies");

    let off = Loadhost::new().env("http_proxy", &proxy.url).arg_run(&plugin(Example::HttpGet), &base);
    let off = off.args(["--proxy", "none"]).run();
    assert_ok(&off);
    let exempt = Loadhost::new()
        .env("HTTP_PROXY", &proxy.url)
        .env("NO_PROXY", "127.0.0.0/8")
        .arg_run(&plugin(Example::HttpGet), &base)
        .run();
    assert_ok(&exempt);
    // The plugin's environment (-e) is the plugin's: it never routes the host's requests.
    let plugin_env = format!("HTTP_PROXY={}", proxy.url);
    let theirs = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&base[..], &["-e", &plugin_env]].concat());
    assert_ok(&theirs);
    assert_eq!(proxy.requests().len(), 3, "--proxy none, NO_PROXY and -e must each go direct");
}

#[test]
fn https_goes_through_a_connect_tunnel() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let target = TargetProcess::start(&["--tls-self-signed", cert.to_str().unwrap()]);
    let port: u16 = target.authority.rsplit_once(':').unwrap().1.parse().unwrap();
    let proxy = Tinyproxy::start(port);
    let url = format!("TARGET_URL={}/", target.url);
    let args =
        ["-e", &url, "--allow-host", &target.authority, "--ca-cert", cert.to_str().unwrap(), "-n", "5", "-w", "1"];
    let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&args[..], &["--proxy", &proxy.url]].concat());
    assert_ok(&run);
    assert_eq!(task_count(&run.summary(), "passed"), 5, "{}", run.stderr);
    // One worker keeps its connection: one tunnel carries the five requests, TLS end to end.
    assert_eq!(proxy.requests(), [format!("CONNECT {} HTTP/1.1", target.authority)]);
}

#[test]
fn a_host_not_allowed_is_denied_before_the_proxy_is_contacted() {
    let target = TargetProcess::start(&[]);
    let proxy = Tinyproxy::start(1);
    let url = format!("TARGET_URL={}/", target.url);
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &["-e", &url, "--allow-host", "127.0.0.1:1", "--proxy", &proxy.url, "-n", "3", "-w", "1"],
    );
    assert_none_passed(&run);
    assert!(metric(&run, "http_denied") >= 3, "{}", run.summary()["metrics"]);
    assert_eq!(proxy.connections(), 0, "the proxy was contacted for a host not allowed: {:?}", proxy.requests());
}

#[test]
fn a_proxy_that_is_down_fails_the_requests_naming_it() {
    let target = TargetProcess::start(&[]);
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("TARGET_URL={}/", target.url);
    let proxy = format!("http://127.0.0.1:{port}");
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &["-e", &url, "--allow-host", &target.authority, "--proxy", &proxy, "-n", "2", "-w", "1"],
    );
    assert_none_passed(&run);
    let errors = run.summary()["errors"].to_string();
    assert!(errors.contains(&format!("proxy 127.0.0.1:{port}: connection refused")), "{errors}");
}

/// A CA, a client certificate it signed and its key, written to `dir`.
fn client_pki(dir: &Path) -> (String, String, String) {
    let pki = loadhost_target::tls::client_pki().unwrap();
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_str().unwrap().to_owned()
    };
    (write("ca.pem", &pki.ca_pem), write("client.pem", &pki.cert_pem), write("client-key.pem", &pki.key_pem))
}

#[test]
fn an_mtls_target_refuses_without_a_client_cert_and_serves_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, client, key) = client_pki(dir.path());
    let cert = dir.path().join("server.pem");
    let target = TargetProcess::start(&["--tls-self-signed", cert.to_str().unwrap(), "--require-client-cert", &ca]);
    let url = format!("TARGET_URL={}/", target.url);
    let base =
        ["-e", &url, "--allow-host", &target.authority, "--ca-cert", cert.to_str().unwrap(), "-n", "4", "-w", "2"];

    let refused = Loadhost::run_plugin(&plugin(Example::HttpGet), &base);
    assert_none_passed(&refused);

    let served = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &[&base[..], &["--client-cert", &client, "--client-key", &key]].concat(),
    );
    assert_ok(&served);
    assert_eq!(task_count(&served.summary(), "passed"), 4, "{}", served.stderr);

    // Per host: the target's host gets the certificate, another host's would not be presented.
    let (host_cert, host_key) = (format!("127.0.0.1={client}"), format!("127.0.0.1={key}"));
    let per_host = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &[&base[..], &["--client-cert", &host_cert, "--client-key", &host_key]].concat(),
    );
    assert_ok(&per_host);
    let (other_cert, other_key) = (format!("other.example={client}"), format!("other.example={key}"));
    let other = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &[&base[..], &["--client-cert", &other_cert, "--client-key", &other_key]].concat(),
    );
    assert_none_passed(&other);
}

#[test]
fn an_mtls_target_with_a_tunnel_through_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, client, key) = client_pki(dir.path());
    let cert = dir.path().join("server.pem");
    let target = TargetProcess::start(&["--tls-self-signed", cert.to_str().unwrap(), "--require-client-cert", &ca]);
    let port: u16 = target.authority.rsplit_once(':').unwrap().1.parse().unwrap();
    let proxy = Tinyproxy::start(port);
    let url = format!("TARGET_URL={}/", target.url);
    let run = Loadhost::run_plugin(
        &plugin(Example::HttpGet),
        &[
            "-e",
            &url,
            "--allow-host",
            &target.authority,
            "--ca-cert",
            cert.to_str().unwrap(),
            "--client-cert",
            &client,
            "--client-key",
            &key,
            "--proxy",
            &proxy.url,
            "-n",
            "3",
            "-w",
            "1",
        ],
    );
    assert_ok(&run);
    assert_eq!(proxy.requests(), [format!("CONNECT {} HTTP/1.1", target.authority)]);
}

#[test]
fn bad_proxy_and_certificate_flags_exit_2_naming_the_flag_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let junk = junk.to_str().unwrap();
    let cases: [(&[&str], String); 4] = [
        (&["--client-cert", junk, "--client-key", junk], format!("--client-cert {junk}: no certificate in the file")),
        (&["--client-cert", junk], format!("--client-cert {junk}: no --client-key FILE to go with it")),
        (&["--proxy", "socks5://127.0.0.1:1080"], "--proxy socks5://127.0.0.1:1080: socks5:// proxies".to_owned()),
        (&["--proxy", "https://u:secret@127.0.0.1:1"], "--proxy https://[redacted]@127.0.0.1:1: ".to_owned()),
    ];
    for (flags, wanted) in cases {
        let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&["-n", "1"][..], flags].concat());
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(&wanted), "{flags:?}: wanted {wanted:?} in {}", run.stderr);
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    }

    let target = Loadhost::new().args(["target", "--addr", "127.0.0.1:0", "--require-client-cert", junk]).run();
    assert_eq!(target.code, 2, "--require-client-cert needs --tls-self-signed: {}", target.stderr);
    let cert = dir.path().join("cert.pem");
    let target = Loadhost::new()
        .args([
            "target",
            "--addr",
            "127.0.0.1:0",
            "--tls-self-signed",
            cert.to_str().unwrap(),
            "--require-client-cert",
            junk,
        ])
        .run();
    assert_eq!(target.code, 2, "{}", target.stderr);
    assert!(
        target.stderr.contains(&format!("--require-client-cert {junk}: no certificate in the file")),
        "{}",
        target.stderr
    );
}

#[test]
fn both_http_paths_send_the_proxys_credentials_and_wasi_http_is_proxied_too() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let plain = TargetProcess::start(&[]);
    let tls = TargetProcess::start(&["--tls-self-signed", cert.to_str().unwrap()]);
    let port: u16 = tls.authority.rsplit_once(':').unwrap().1.parse().unwrap();
    let proxy = Tinyproxy::start_with(port, "BasicAuth loader s3cret");
    let with_auth = proxy.url.replace("http://", "http://loader:s3cret@");
    // One request per worker: tinyproxy closes a connection after each response without saying
    // so, which the wasi:http pool cannot tell from a broken one (the one-call path sends again).
    let paths = ["LOADHOST_HTTP=wasi", "LOADHOST_HTTP=one-call"];
    for (target, path) in [&plain, &tls].into_iter().flat_map(|t| paths.map(|p| (t, p))) {
        let url = format!("TARGET_URL={}/", target.url);
        let args = [
            "-e",
            &url,
            "-e",
            path,
            "--allow-host",
            &target.authority,
            "--ca-cert",
            cert.to_str().unwrap(),
            "-n",
            "2",
            "-w",
            "2",
        ];
        let run = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&args[..], &["--proxy", &with_auth]].concat());
        assert_ok(&run);
        assert!(!run.stderr.contains("s3cret"), "{path}: {}", run.stderr);
        let refused = Loadhost::run_plugin(&plugin(Example::HttpGet), &[&args[..], &["--proxy", &proxy.url]].concat());
        assert_none_passed(&refused);
    }
    let seen = proxy.requests();
    let get = format!("GET {}/ HTTP/1.1", plain.url);
    let connect = format!("CONNECT {} HTTP/1.1", tls.authority);
    assert_eq!(seen.iter().filter(|r| **r == get).count(), 8, "{seen:?}");
    assert_eq!(seen.iter().filter(|r| **r == connect).count(), 8, "{seen:?}");
}
