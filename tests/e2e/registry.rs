//! Sharing plugins through a real OCI registry (Debian's `docker-registry`, on loopback): push,
//! run by digest, run from the store with the registry down, corrupted blobs, and interop with an
//! independent client (the `oras` Python library in the tools venv).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Example, Loadhost, plugin};
use crate::target_process::TargetProcess;

/// A `docker-registry serve` child on 127.0.0.1, killed on drop.
pub struct RegistryProcess {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl RegistryProcess {
    pub fn start() -> Self {
        Self::start_with("")
    }

    /// A registry that allows deleting manifests (`storage.delete.enabled`), as `registry prune` needs.
    pub fn start_with_deletes() -> Self {
        Self::start_with("{STORAGE}  delete:\n    enabled: true\n")
    }

    /// A registry that asks for basic auth: user `tester`, password `right-password`.
    pub fn start_with_auth() -> Self {
        Self::start_with("auth:\n  htpasswd:\n    realm: loadhost-test\n    path: {DIR}/htpasswd\n")
    }

    fn start_with(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        // bcrypt (cost 5, to keep the test quick) of "right-password".
        std::fs::write(
            dir.path().join("htpasswd"),
            "tester:$2b$05$xerj1c8.Mo8Tq3nvoMkTr.lPMb9AqWq3HlDlu.Vy/4oL5FY7Wz66.\n",
        )
        .unwrap();
        // `{STORAGE}` puts the rest under `storage:`, the rest goes at the top level.
        let (storage_extra, extra) = match extra.strip_prefix("{STORAGE}") {
            Some(rest) => (rest.to_owned(), String::new()),
            None => (String::new(), extra.replace("{DIR}", &dir.path().display().to_string())),
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        let storage = dir.path().join("storage");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n{storage_extra}http:\n  addr: {addr}\n{extra}",
                storage.display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry starts (cargo xtask setup installs it)");
        let registry = Self { child, addr, _dir: dir };
        registry.wait_ready();
        registry
    }

    /// Where the registry keeps its blobs (`docker/registry/v2/blobs/sha256/XX/HEX/data`).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self._dir.path().join("storage/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    /// The tags of `repository`, sorted, read over plain HTTP (`GET /v2/REPO/tags/list`); none for
    /// a repository the registry does not know.
    pub fn tags(&self, repository: &str) -> Vec<String> {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        write!(stream, "GET /v2/{repository}/tags/list HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr)
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        let list: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let mut tags: Vec<String> =
            list["tags"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(str::to_owned)).collect();
        tags.sort();
        tags
    }

    /// Wait until `GET /v2/` answers.
    fn wait_ready(&self) {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(20) {
            if let Ok(mut stream) = TcpStream::connect(&self.addr) {
                let _ = write!(stream, "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr);
                let mut response = String::new();
                // 401: up, and asking for credentials.
                if stream.read_to_string(&mut response).is_ok()
                    && (response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.1 401"))
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("docker-registry on {} did not answer GET /v2/", self.addr);
    }
}

impl Drop for RegistryProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `loadhost ARGS…` with its own store (`LOADHOST_CACHE_DIR=store`).
fn loadhost(store: &Path, args: &[&str]) -> crate::common::Run {
    Loadhost::new().env("LOADHOST_CACHE_DIR", store).args(args).run()
}

/// The stored blob with `hex` (the component's sha256).
fn blob(store: &Path, hex: &str) -> PathBuf {
    store.join("oci").join("blobs").join("sha256").join(hex)
}

/// Push http-get; the printed `REF@sha256:…`.
fn push_http_get(store: &Path, reference: &str) -> String {
    let wasm = plugin(Example::HttpGet).display().to_string();
    let push = loadhost(store, &["push", &wasm, reference]);
    assert_eq!(push.code, 0, "push: {}", push.stderr);
    let pinned = push.stdout.trim().to_owned();
    assert!(pinned.starts_with(&format!("{reference}@sha256:")), "push prints REF@sha256:…, got {pinned}");
    pinned
}

fn run_against(store: &Path, target: &TargetProcess, reference: &str, extra: &[&str]) -> crate::common::Run {
    let url = format!("TARGET_URL={}/", target.url);
    let args = [&["-e", url.as_str(), "--allow-host", target.authority.as_str(), "-n", "5"][..], extra].concat();
    Loadhost::new().env("LOADHOST_CACHE_DIR", store).arg_run(Path::new(reference), &args).run()
}

#[test]
fn a_pushed_script_is_the_component_build_makes_and_runs_by_reference() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let store = tempfile::tempdir().unwrap();
    let script = crate::common::root().join("tests/scripts/python/journey.py");
    let script = script.display().to_string();
    let tag = format!("{}/team/journey:1.0", registry.addr);
    let push = loadhost(store.path(), &["push", &script, &tag]);
    assert_eq!(push.code, 0, "push: {}", push.stderr);
    let pinned = push.stdout.trim().to_owned();

    // The digest is that of the component `loadhost build` writes.
    let built = loadhost(store.path(), &["build", &script, "-o", "journey.wasm"]);
    assert_eq!(built.code, 0, "build: {}", built.stderr);
    let bytes = std::fs::read(built.dir.path().join("journey.wasm")).unwrap();
    let hex = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let fresh = tempfile::tempdir().unwrap();
    let run = run_against(fresh.path(), &target, &pinned, &[]);
    assert_eq!(run.code, 0, "run by reference: {}", run.stderr);
    assert_eq!(run.summary()["plugin"]["sha256"], hex.as_str());
    assert_eq!(run.summary()["tasks"]["passed"], 5);
}

#[test]
fn a_pushed_plugin_runs_by_digest_and_then_from_the_store() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let store = tempfile::tempdir().unwrap();
    let tag = format!("{}/team/http-get:1.0", registry.addr);
    let pinned = push_http_get(store.path(), &tag);
    let digest = pinned.rsplit_once('@').unwrap().1.to_owned();

    let pin = loadhost(store.path(), &["pin", &tag]);
    assert_eq!((pin.code, pin.stdout.trim()), (0, pinned.as_str()), "pin: {}", pin.stderr);

    // A fresh store: the run pulls by digest, and the summary names the reference and digest.
    let fresh = tempfile::tempdir().unwrap();
    let files =
        ["--junit", "j.xml", "--csv", "c.csv", "--html", "h.html", "--results", "r.jsonl", "--out", "json=o.jsonl"];
    let run = run_against(fresh.path(), &target, &pinned, &files);
    assert_eq!(run.code, 0, "run by digest: {}", run.stderr);
    let summary = run.summary();
    assert_eq!(summary["plugin"]["ref"], pinned.as_str());
    assert_eq!(summary["plugin"]["digest"], digest.as_str());
    // Every output records what ran, pinned.
    for file in ["j.xml", "c.csv", "h.html", "r.jsonl", "o.jsonl"] {
        let text = run.file(file);
        assert!(text.contains(&pinned) && text.contains(&digest), "{file} names the reference and digest");
    }
    assert_eq!(summary["tasks"]["passed"], 5);
    let hex = summary["plugin"]["sha256"].as_str().unwrap().to_owned();

    // A corrupted component in the store is detected and pulled again while the registry is up.
    std::fs::write(blob(fresh.path(), &hex), b"\0asm not the component").unwrap();
    let run = run_against(fresh.path(), &target, &pinned, &[]);
    assert_eq!(run.code, 0, "re-pull of a corrupted blob: {}", run.stderr);
    assert!(run.stderr.contains("does not match its digest"), "says why it pulled again: {}", run.stderr);

    // `cache ls` lists the pulled artifact by its reference, beside the compiled plugins.
    let ls = loadhost(fresh.path(), &["cache", "ls"]);
    assert_eq!(ls.code, 0, "{}", ls.stderr);
    assert!(ls.stdout.contains("(1 artifact,") && ls.stdout.contains(&pinned), "{}", ls.stdout);
    assert!(ls.stdout.contains(&digest), "{}", ls.stdout);
    // The compiled entry is named by the reference too, not by the store's blob path.
    assert_eq!(ls.stdout.matches(pinned.as_str()).count(), 2, "{}", ls.stdout);

    // Registry down: the digest and the tag pulled before (with --pull never) run from the store.
    drop(registry);
    let run = run_against(fresh.path(), &target, &pinned, &[]);
    assert_eq!(run.code, 0, "digest with the registry down: {}", run.stderr);
    let run = run_against(store.path(), &target, &tag, &["--pull", "never"]);
    assert_eq!(run.code, 0, "tag with --pull never: {}", run.stderr);
    let run = run_against(store.path(), &target, &tag, &["--require-digest"]);
    assert_eq!(run.code, 2, "--require-digest refuses a tag: {}", run.stderr);
    assert!(run.stderr.contains(&format!("loadhost pin {tag}")), "{}", run.stderr);

    // find-max takes a reference too.
    let url = format!("TARGET_URL={}/", target.url);
    let search = loadhost(
        fresh.path(),
        &[
            "find-max",
            &pinned,
            "--slo",
            "latency_ms:p(99)<5000",
            "--max-steps",
            "1",
            "--step-duration",
            "500ms",
            "--start",
            "10",
            "-e",
            &url,
            "--allow-host",
            &target.authority,
        ],
    );
    // It ran the pulled plugin and judged the step (99 only if a busy machine failed that step).
    let judged = search.stdout.contains("achieved");
    assert!(judged && (search.code == 0 || search.code == 99), "find-max REF: {}\n{}", search.stderr, search.stdout);

    // Corrupted and offline: refused, never run.
    std::fs::write(blob(fresh.path(), &hex), b"\0asm not the component").unwrap();
    let run = run_against(fresh.path(), &target, &pinned, &["--pull", "never"]);
    assert_eq!(run.code, 3, "a corrupted blob offline is refused: {}", run.stderr);
    assert!(run.stderr.contains("does not match its digest"), "{}", run.stderr);
}

#[test]
fn an_independent_client_reads_what_loadhost_pushes_and_loadhost_runs_what_it_pushes() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let store = tempfile::tempdir().unwrap();
    push_http_get(store.path(), &format!("{}/team/http-get:1.0", registry.addr));
    let work = tempfile::tempdir().unwrap();
    std::fs::copy(plugin(Example::HttpGet), work.path().join("p.wasm")).unwrap();
    std::fs::write(work.path().join("c.json"), "{}").unwrap();
    let script = format!(
        r#"
import oras.provider
r = oras.provider.Registry("{addr}", insecure=True)
m = r.get_manifest("{addr}/team/http-get:1.0")
print(m["config"]["mediaType"], ",".join(l["mediaType"] + "=" + l["annotations"]["org.opencontainers.image.title"] for l in m["layers"]))
res = r.push(target="{addr}/team/from-oras:1", files=["p.wasm:application/wasm"],
             manifest_config="c.json:application/vnd.wasm.config.v0+json", disable_path_validation=True)
assert res.status_code == 201, res.status_code
"#,
        addr = registry.addr
    );
    let out =
        Command::new(crate::receivers::venv_python()).arg("-c").arg(script).current_dir(work.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "oras: {}", String::from_utf8_lossy(&out.stderr));
    // Each layer names its file, so oras saves it by name, not by digest.
    assert_eq!(stdout.trim(), "application/vnd.wasm.config.v0+json application/wasm=http-get.wasm");

    let run = run_against(store.path(), &target, &format!("{}/team/from-oras:1", registry.addr), &[]);
    assert_eq!(run.code, 0, "run what oras pushed: {}", run.stderr);
    assert_eq!(run.summary()["tasks"]["passed"], 5);
}

/// `sha256:HEX` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// One raw HTTP/1.1 request; the status line and the headers.
pub fn http(addr: &str, method: &str, path: &str, content_type: &str, body: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split("\r\n\r\n").next().unwrap_or_default().to_owned()
}

/// Push an artifact with the given media types by hand (POST then PUT uploads), as another tool
/// would.
pub fn push_raw(addr: &str, repo: &str, tag: &str, config_type: &str, layer_types: &[&str]) {
    let config = b"{}".to_vec();
    let layers: Vec<(&str, Vec<u8>)> =
        layer_types.iter().map(|t| (*t, format!("not a component: {t}").into_bytes())).collect();
    for blob in std::iter::once(&config).chain(layers.iter().map(|(_, b)| b)) {
        let started = http(addr, "POST", &format!("/v2/{repo}/blobs/uploads/"), "application/octet-stream", b"");
        let location = started
            .lines()
            .find_map(|l| l.strip_prefix("Location: "))
            .unwrap_or_else(|| panic!("upload start: {started}"));
        let path = location.split_once(addr).map_or(location, |(_, p)| p);
        let sep = if path.contains('?') { '&' } else { '?' };
        let done = http(addr, "PUT", &format!("{path}{sep}digest={}", sha256(blob)), "application/octet-stream", blob);
        assert!(done.starts_with("HTTP/1.1 201"), "blob upload: {done}");
    }
    let layers: Vec<_> =
        layers.iter().map(|(t, b)| serde_json::json!({"mediaType": t, "digest": sha256(b), "size": b.len()})).collect();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": config_type, "digest": sha256(&config), "size": config.len()},
        "layers": layers,
    });
    let status = http(
        addr,
        "PUT",
        &format!("/v2/{repo}/manifests/{tag}"),
        "application/vnd.oci.image.manifest.v1+json",
        manifest.to_string().as_bytes(),
    );
    assert!(status.starts_with("HTTP/1.1 201"), "manifest upload: {status}");
}

/// `loadhost push` with the password on standard input.
fn push_with_password(store: &Path, reference: &str, password: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .env("LOADHOST_CACHE_DIR", store)
        .env("REGISTRY_AUTH_FILE", store.join("no-such-auth.json"))
        .args(["push", &plugin(Example::HttpGet).display().to_string(), reference])
        .args(["--registry-user", "tester", "--registry-password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn registry_credentials_come_from_the_command_line_or_the_auth_file_and_a_refusal_names_them() {
    let registry = RegistryProcess::start_with_auth();
    let store = tempfile::tempdir().unwrap();
    let tag = format!("{}/team/private:1", registry.addr);
    let (code, stderr) = push_with_password(store.path(), &tag, "wrong-password");
    assert_eq!(code, 2, "wrong password: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("credentials tried: --registry-user"), "{stderr}");
    let (code, stderr) = push_with_password(store.path(), &tag, "right-password");
    assert_eq!(code, 0, "right password: {stderr}");

    // An auth file (docker config.json format): right, then wrong, then none at all.
    let auth = store.path().join("auth.json");
    let write_auth = |password: &str| {
        use base64_free::encode;
        let entry = encode(&format!("tester:{password}"));
        std::fs::write(&auth, format!(r#"{{"auths":{{"{}":{{"auth":"{entry}"}}}}}}"#, registry.addr)).unwrap();
    };
    let fresh = tempfile::tempdir().unwrap();
    let pin = |env: Option<&Path>| {
        let cmd = Loadhost::new().env("LOADHOST_CACHE_DIR", fresh.path());
        let cmd = match env {
            Some(file) => cmd.env("REGISTRY_AUTH_FILE", file),
            None => cmd.env("REGISTRY_AUTH_FILE", fresh.path().join("none.json")),
        };
        cmd.args(["pin", &tag]).run()
    };
    write_auth("right-password");
    let run = pin(Some(&auth));
    assert_eq!(run.code, 0, "auth file: {}", run.stderr);
    write_auth("wrong-password");
    let run = pin(Some(&auth));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("credentials tried: {}", auth.display())), "{}", run.stderr);
    let run = pin(None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("credentials tried: none (anonymous"), "{}", run.stderr);
}

/// Base64 for the auth file, without a dependency.
mod base64_free {
    pub fn encode(text: &str) -> String {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in text.as_bytes().chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}

#[test]
fn a_bundle_carries_its_load_and_feed_but_grants_nothing() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let store = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let toml = work.path().join("checkout.toml");
    std::fs::write(
        &toml,
        "rate = 50\nduration = \"10s\"\ndata = \"rows.jsonl\"\ndata-mode = \"once\"\nthreshold = [\"latency_ms:p(99)<5000\"]\n",
    )
    .unwrap();
    std::fs::write(work.path().join("rows.jsonl"), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n").unwrap();
    let wasm = plugin(Example::HttpGet).display().to_string();
    let tag = format!("{}/team/checkout:1", registry.addr);
    let push = loadhost(store.path(), &["push", &wasm, &tag, "--bundle", "-c", &toml.display().to_string()]);
    assert_eq!(push.code, 0, "push --bundle: {}", push.stderr);
    let pinned = push.stdout.trim().to_owned();

    // Only the grants on the command line: the bundle's rate, threshold and three-row feed apply.
    let url = format!("TARGET_URL={}/", target.url);
    let fresh = tempfile::tempdir().unwrap();
    let run = Loadhost::new()
        .env("LOADHOST_CACHE_DIR", fresh.path())
        .arg_run(Path::new(&pinned), &["-e", &url, "--allow-host", &target.authority])
        .run();
    assert_eq!(run.code, 0, "run the bundle: {}", run.stderr);
    let s = run.summary();
    assert_eq!(s["tasks"]["scheduled"], 3, "the bundle's once feed of 3 rows ends the run");
    assert!(s["thresholds"]["latency_ms:p(99)<5000"]["ok"].as_bool().unwrap(), "{}", s["thresholds"]);
    assert_eq!(s["config"]["data-mode"], "once");

    // Flags win over the bundle.
    let run = Loadhost::new()
        .env("LOADHOST_CACHE_DIR", fresh.path())
        .arg_run(Path::new(&pinned), &["-e", &url, "--allow-host", &target.authority, "--data-mode", "loop", "-n", "7"])
        .run();
    assert_eq!(run.code, 0, "flags over the bundle: {}", run.stderr);
    assert_eq!(run.summary()["tasks"]["scheduled"], 7);

    // inspect shows what the bundle would apply.
    let inspect = loadhost(fresh.path(), &["inspect", &pinned]);
    assert_eq!(inspect.code, 0, "{}", inspect.stderr);
    assert!(inspect.stdout.contains("bundle config:\n    rate = 50\n"), "{}", inspect.stdout);
    assert!(
        inspect.stdout.contains("bundle data: application/vnd.loadhost.data.v1+jsonl, 27 bytes"),
        "{}",
        inspect.stdout
    );

    // find-max applies the bundle's feed (3 rows, once) but searches the rate itself.
    let search = loadhost(
        fresh.path(),
        &["find-max", &pinned, "--slo", "latency_ms:p(99)<5000", "--max-steps", "1", "--step-duration", "2s"],
    );
    assert!(
        search.stderr.contains("applies the bundle's options but its rate, duration, threshold"),
        "{}",
        search.stderr
    );

    // A bundle cannot grant: refused at push.
    std::fs::write(&toml, "rate = 5\nallow-host = [\"127.0.0.1:*\"]\n").unwrap();
    let push = loadhost(store.path(), &["push", &wasm, &tag, "--bundle", "-c", &toml.display().to_string()]);
    assert_eq!(push.code, 2, "{}", push.stderr);
    assert!(push.stderr.contains("a bundle cannot grant or write anything, but it sets allow-host"), "{}", push.stderr);
}

#[test]
fn a_scenario_block_runs_a_pinned_reference_beside_the_command_lines_plugin() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let store = tempfile::tempdir().unwrap();
    let pinned = push_http_get(store.path(), &format!("{}/team/http-get:2", registry.addr));
    let digest = pinned.rsplit_once('@').unwrap().1.to_owned();
    let url = format!("TARGET_URL={}/", target.url);
    let grants = ["-e", url.as_str(), "--allow-host", target.authority.as_str()];

    // The command line's plugin (noop) runs `local`; `shared` names the pinned reference.
    let noop = plugin(Example::Noop).display().to_string();
    let config = |local_plugin: &str| {
        format!(
            "[[scenario]]\nname = \"local\"\n{local_plugin}workers = 1\niterations = 3\n\n\
             [[scenario]]\nname = \"shared\"\nplugin = \"{pinned}\"\nworkers = 1\niterations = 4\n"
        )
    };
    let cmd = Loadhost::new().env("LOADHOST_CACHE_DIR", store.path());
    std::fs::write(cmd.path().join("two.toml"), config("")).unwrap();
    let run = cmd.arg_run(Path::new(&noop), &[&grants[..], &["-c", "two.toml", "--results", "r.jsonl"]].concat()).run();
    assert_eq!(run.code, 0, "two plugins: {}", run.stderr);
    let s = run.summary();
    assert_eq!(s["plugin"]["path"], noop.as_str(), "the run's plugin is the command line's");
    assert_eq!(s["scenarios"]["local"]["plugin"], serde_json::Value::Null, "local runs the run's plugin");
    assert_eq!(s["scenarios"]["shared"]["plugin"]["ref"], pinned.as_str());
    assert_eq!(s["scenarios"]["shared"]["plugin"]["digest"], digest.as_str());
    assert_eq!(s["scenarios"]["shared"]["tasks"]["passed"], 4, "{}", s["scenarios"]);
    assert_eq!(s["scenarios"]["local"]["tasks"]["passed"], 3);
    // http-get sent its requests (noop sends none): the shared scenario ran the pulled plugin.
    assert_eq!(s["metrics"]["http_reqs"]["count"], 4, "{}", s["metrics"]);
    let results = run.file("r.jsonl");
    let end = results.lines().last().unwrap();
    assert!(end.contains(&format!("\"scenario_plugins\":{{\"shared\":{{\"path\":\"{pinned}\"")), "{end}");

    // Registry down, no plugin on the command line: every block names its own, from the store.
    drop(registry);
    let cmd = Loadhost::new().env("LOADHOST_CACHE_DIR", store.path());
    std::fs::write(cmd.path().join("two.toml"), config(&format!("plugin = \"{noop}\"\n"))).unwrap();
    let run = cmd.args(["run", "-c", "two.toml", "--summary-json", "summary.json"]).args(grants).run();
    assert_eq!(run.code, 0, "blocks only, offline: {}", run.stderr);
    let s = run.summary();
    assert_eq!(s["plugin"]["path"], noop.as_str(), "the first block's plugin names the run");
    assert_eq!(s["scenarios"]["shared"]["plugin"]["digest"], digest.as_str());

    // A block without a plugin, and none on the command line: one line, exit 2.
    let cmd = Loadhost::new().env("LOADHOST_CACHE_DIR", store.path());
    std::fs::write(cmd.path().join("two.toml"), config("")).unwrap();
    let run = cmd.args(["run", "-c", "two.toml"]).args(grants).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no plugin for scenario 'local'"), "{}", run.stderr);
}

#[test]
fn a_moved_tag_is_warned_about_refused_under_pin_tags_and_accepted_by_pull() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    // Team A publishes from its store; team B runs from its own, as two machines would.
    let publisher = tempfile::tempdir().unwrap();
    let runner = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let a_toml = work.path().join("a.toml");
    let b_toml = work.path().join("b.toml");
    std::fs::write(&a_toml, "rate = 50\nthreshold = [\"latency_ms:p(99)<5000\"]\n").unwrap();
    std::fs::write(&b_toml, "rate = 20\nmax-workers = 4\n").unwrap();
    let wasm = plugin(Example::HttpGet).display().to_string();
    let tag = format!("{}/team/x:1.0", registry.addr);
    let push = |toml: &Path| {
        let push = loadhost(publisher.path(), &["push", &wasm, &tag, "--bundle", "-c", &toml.display().to_string()]);
        assert_eq!(push.code, 0, "push: {}", push.stderr);
        push.stdout.trim().rsplit_once('@').unwrap().1.to_owned()
    };
    let run = |extra: &[&str]| run_against(runner.path(), &target, &tag, extra);

    // A, run by tag: the store records its digest; nothing moved.
    let a = push(&a_toml);
    let first = run(&[]);
    assert_eq!(first.code, 0, "first run: {}", first.stderr);
    assert!(!first.stderr.contains("MOVED"), "{}", first.stderr);

    // B pushed as the same tag: --pin-tags refuses it, exit 3 before anything is loaded, naming
    // both digests and how to accept the move; the record stays, so it refuses again.
    let b = push(&b_toml);
    assert_ne!(a, b);
    for _ in 0..2 {
        let refused = run(&["--pin-tags"]);
        eprintln!("--pin-tags refusal:\n{}", refused.stderr);
        assert_eq!(refused.code, 3, "--pin-tags refuses a moved tag: {}", refused.stderr);
        let text = &refused.stderr;
        assert!(text.contains(&a) && text.contains(&b), "both digests: {text}");
        assert!(
            text.contains(&format!("loadhost pull {tag}")) && text.contains(&format!("loadhost pin {tag}")),
            "{text}"
        );
        assert!(text.contains("rate 50 -> 20"), "the changed setting: {text}");
        assert!(!text.contains("compiled") && !text.contains("from the compile cache"), "nothing loaded: {text}");
        assert_eq!(text.lines().count(), 1, "one line: {text}");
    }

    // `loadhost pull REF` accepts the move: the run passes under --pin-tags, without a warning.
    let pull = loadhost(runner.path(), &["pull", &tag]);
    assert_eq!(pull.code, 0, "pull: {}", pull.stderr);
    assert_eq!(pull.stdout.trim(), format!("{tag}@{b}"));
    assert!(pull.stderr.contains("MOVED") && pull.stderr.contains(&format!("Recorded {b}")), "{}", pull.stderr);
    let accepted = run(&["--pin-tags"]);
    assert_eq!(accepted.code, 0, "after pull: {}", accepted.stderr);
    assert!(!accepted.stderr.contains("MOVED") && !accepted.stderr.contains("WARN"), "{}", accepted.stderr);
    assert_eq!(accepted.summary()["plugin"]["digest"], b.as_str());

    // Moved back to A without --pin-tags: it runs A, with a loud warning naming both digests and
    // every setting that changes.
    let a_again = push(&a_toml);
    assert_eq!(a_again, a, "the same bundle, the same digest");
    let warned = run(&[]);
    eprintln!("moved-tag warning:\n{}", warned.stderr);
    assert_eq!(warned.code, 0, "a moved tag runs with a warning: {}", warned.stderr);
    let warning = warned.stderr.lines().find(|l| l.contains("MOVED")).unwrap_or_else(|| panic!("{}", warned.stderr));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(
        warning.contains(&format!("recorded it as {b}")) && warning.contains(&format!("resolves it to {a}")),
        "{warning}"
    );
    assert!(warning.contains("max-workers vanished (was 4)"), "{warning}");
    assert!(warning.contains("rate 20 -> 50"), "{warning}");
    assert!(warning.contains("threshold added ([\"latency_ms:p(99)<5000\"])"), "{warning}");
    assert_eq!(warned.summary()["plugin"]["digest"], a.as_str());
    // Recorded: the next run says nothing.
    let quiet = run(&[]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("MOVED"), "{}", quiet.stderr);

    // The old manifest gone from the store: the settings cannot be compared, and it says so.
    std::fs::remove_file(blob(runner.path(), a.strip_prefix("sha256:").unwrap())).unwrap();
    push(&b_toml);
    let unknown = run(&[]);
    assert_eq!(unknown.code, 0, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("no longer in the local store"), "{}", unknown.stderr);
}

#[test]
fn a_manifest_tampered_with_on_the_registry_is_refused_once_with_exit_3() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let publisher = tempfile::tempdir().unwrap();
    let pinned = push_http_get(publisher.path(), &format!("{}/team/tampered:1", registry.addr));
    let digest = pinned.rsplit_once('@').unwrap().1.to_owned();
    // Change the manifest's bytes on the registry's disk: it is served under its old digest.
    let file = registry.blob_file(&digest);
    let mut manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    manifest["annotations"] = serde_json::json!({ "changed": "after the push" });
    std::fs::write(&file, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let runner = tempfile::tempdir().unwrap();
    let run = run_against(runner.path(), &target, &pinned, &[]);
    assert_eq!(run.code, 3, "a plugin problem: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    assert!(lines[0].contains("does not match its digest"), "{}", lines[0]);
    assert_eq!(lines[0].matches(&digest).count(), 2, "the digest named, the message said once: {}", lines[0]);
}

/// A folder holding the credential helper `docker-credential-loadhosttest`, a shell script that
/// checks its action and the server address on its stdin, then runs `then` (with `$address`).
fn credential_helper(expected_address: &str, then: &str) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = tempfile::tempdir().unwrap();
    let path = bin.path().join("docker-credential-loadhosttest");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || {{ echo \"unexpected action: $1\"; exit 1; }}\nread -r address\n[ \"$address\" = \"{expected_address}\" ] || {{ echo \"unexpected server address: $address\"; exit 1; }}\n{then}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `loadhost ARGS…` in a fresh folder, with the store `store`, the credentials file
/// `DOCKER_CONFIG/config.json` (no `REGISTRY_AUTH_FILE`) and `bin` first on `PATH`: its exit code,
/// stderr and folder.
fn loadhost_with_helper(
    store: &Path,
    docker_config: &Path,
    bin: &Path,
    args: &[&str],
) -> (i32, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .current_dir(dir.path())
        .env("LOADHOST_CACHE_DIR", store)
        .env_remove("REGISTRY_AUTH_FILE")
        .env("DOCKER_CONFIG", docker_config)
        .env("PATH", path)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned(), dir)
}

#[test]
fn a_docker_credential_helper_named_by_creds_store_or_cred_helpers_answers_for_the_registry() {
    let registry = RegistryProcess::start_with_auth();
    let target = TargetProcess::start(&[]);
    let wasm = plugin(Example::HttpGet).display().to_string();
    let right = credential_helper(
        &registry.addr,
        r#"printf '{"ServerURL":"%s","Username":"tester","Secret":"right-password"}\n' "$address""#,
    );
    let docker_config = tempfile::tempdir().unwrap();
    let config = docker_config.path().join("config.json");
    let url = format!("TARGET_URL={}/", target.url);
    let run_args = ["-e", url.as_str(), "--allow-host", target.authority.as_str(), "-n", "5"];

    // credsStore: the default helper, for every registry. Then credHelpers for this registry,
    // which wins over a wrong password in its auths entry.
    let wrong = base64_free::encode("tester:wrong-password");
    let configs = [
        (r#"{"credsStore":"loadhosttest"}"#.to_owned(), "credsStore"),
        (
            format!(
                r#"{{"auths":{{"{0}":{{"auth":"{wrong}"}}}},"credHelpers":{{"{0}":"loadhosttest"}}}}"#,
                registry.addr
            ),
            "credHelpers",
        ),
    ];
    for (text, setting) in configs {
        std::fs::write(&config, text).unwrap();
        let store = tempfile::tempdir().unwrap();
        let tag = format!("{}/team/helped-{}:1", registry.addr, setting.to_lowercase());
        let (code, stderr, dir) =
            loadhost_with_helper(store.path(), docker_config.path(), right.path(), &["push", &wasm, &tag]);
        assert_eq!(code, 0, "push with the {setting} helper: {stderr}");
        assert!(!stderr.contains("right-password"), "the secret is never printed: {stderr}");
        drop(dir);
        let fresh = tempfile::tempdir().unwrap();
        let args = [&["run", tag.as_str()][..], &run_args, &["--summary-json", "summary.json"]].concat();
        let (code, stderr, dir) = loadhost_with_helper(fresh.path(), docker_config.path(), right.path(), &args);
        assert_eq!(code, 0, "run by reference with the {setting} helper: {stderr}");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["tasks"]["passed"], 5, "{setting}: {summary}");
    }

    // A helper with no credentials for the registry: anonymous, so the registry's 401.
    std::fs::write(&config, r#"{"credsStore":"loadhosttest"}"#).unwrap();
    let tag = format!("{}/team/helped-credsstore:1", registry.addr);
    let none = credential_helper(&registry.addr, "echo 'credentials not found in native keychain'; exit 1");
    let fresh = tempfile::tempdir().unwrap();
    let (code, stderr, _dir) = loadhost_with_helper(fresh.path(), docker_config.path(), none.path(), &["pin", &tag]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("the registry refused access"), "{stderr}");
    assert!(stderr.contains("credentials tried: none (anonymous: docker-credential-loadhosttest"), "{stderr}");

    // A helper that fails otherwise: an error naming it and what it said, in one line.
    let broken = credential_helper(&registry.addr, "echo 'the keychain is locked'; exit 1");
    let (code, stderr, _dir) = loadhost_with_helper(fresh.path(), docker_config.path(), broken.path(), &["pin", &tag]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("docker-credential-loadhosttest") && stderr.contains("the keychain is locked"), "{stderr}");
}
