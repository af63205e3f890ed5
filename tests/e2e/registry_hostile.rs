//! A hostile registry on loopback (issue 41, defect 4): a manifest without end, one dripping a
//! byte every 2 s, a 500 whose body never ends, a layer that claims 63 KB and streams hundreds
//! of MiB, referrers and tag-schema indexes without end. The real `loadhost` pulls from it under
//! `/usr/bin/time`: each must end in one line naming what was refused and the cap (or the
//! deadline), exit 2, in bounded time and memory. The server stops every body at
//! [`ENDLESS`] so that a loadhost without caps ends too (and its peak RSS says what it kept).

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::registry::sha256;

/// What "without end" means here: far past every cap, and finite, so that every loop ends.
const ENDLESS: u64 = 512 << 20;
/// The size the hostile layer claims.
const CLAIMED: usize = 63_000;
/// How long the dripping manifest drips, at most.
const DRIP_FOR: Duration = Duration::from_secs(60);
/// The deadline the tests set (LOADHOST_REGISTRY_DEADLINE), and the wall time a run may take.
const DEADLINE_S: &str = "3";
const WALL_LIMIT: Duration = Duration::from_secs(20);

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The blobs and manifests of the one well-formed plugin the server serves (`good`).
struct Plugin {
    config: Vec<u8>,
    layer: Vec<u8>,
    manifest: Vec<u8>,
}

impl Plugin {
    fn new(layer_size: Option<usize>) -> Self {
        let config = br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec();
        let layer = vec![b'x'; CLAIMED];
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": sha256(&config), "size": config.len()},
            "layers": [{"mediaType": "application/wasm", "digest": sha256(&layer), "size": layer_size.unwrap_or(layer.len())}],
        })
        .to_string()
        .into_bytes();
        Self { config, layer, manifest }
    }
}

/// The hostile registry: a thread per connection, each answering one request.
struct Hostile {
    addr: String,
}

impl Hostile {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let _ = serve(stream);
                });
            }
        });
        Self { addr }
    }
}

fn head(stream: &mut TcpStream, status: &str, content_type: &str, length: Option<usize>) -> std::io::Result<()> {
    let length = length.map(|n| format!("Content-Length: {n}\r\n")).unwrap_or_default();
    write!(stream, "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{length}Connection: close\r\n\r\n")
}

fn whole(stream: &mut TcpStream, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    head(stream, "200 OK", content_type, Some(body.len()))?;
    stream.write_all(body)
}

/// `ENDLESS` bytes of `fill` in 64 KiB writes (ends early when the client has gone).
fn endless(stream: &mut TcpStream, fill: u8) -> std::io::Result<()> {
    let chunk = vec![fill; 64 << 10];
    let mut sent = 0;
    while sent < ENDLESS {
        stream.write_all(&chunk)?;
        sent += chunk.len() as u64;
    }
    Ok(())
}

fn serve(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
    }
    let mut stream = stream;
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let good = Plugin::new(None);
    let lying = Plugin::new(Some(CLAIMED));
    let good_digest = sha256(&good.manifest);
    let path = path.split('?').next().unwrap_or_default().to_owned();
    let parts: Vec<&str> = path.trim_start_matches("/v2/").splitn(3, '/').collect();
    match parts.as_slice() {
        [""] => whole(&mut stream, "application/json", b"{}"),
        ["endless", "manifests", _] => {
            head(&mut stream, "200 OK", MANIFEST, None)?;
            endless(&mut stream, b' ')
        }
        ["drip", "manifests", _] => {
            head(&mut stream, "200 OK", MANIFEST, None)?;
            let began = Instant::now();
            while began.elapsed() < DRIP_FOR {
                stream.write_all(b" ")?;
                std::thread::sleep(Duration::from_secs(2));
            }
            Ok(())
        }
        ["error", "manifests", _] => {
            head(&mut stream, "500 Internal Server Error", "text/plain", None)?;
            endless(&mut stream, b'e')
        }
        // A layer that claims 63 KB (its digest the digest of 63 KB) and streams 512 MiB.
        ["bigblob", "manifests", _] => whole(&mut stream, MANIFEST, &lying.manifest),
        ["bigblob", "blobs", digest] if *digest == sha256(&lying.config) => {
            whole(&mut stream, "application/octet-stream", &lying.config)
        }
        ["bigblob", "blobs", _] => {
            head(&mut stream, "200 OK", "application/octet-stream", None)?;
            endless(&mut stream, b'x')
        }
        // A well-formed plugin whose referrers (API, or tag schema) never end.
        [_, "manifests", name] if *name == "1" || *name == good_digest => whole(&mut stream, MANIFEST, &good.manifest),
        [_, "blobs", digest] if *digest == sha256(&good.config) => {
            whole(&mut stream, "application/octet-stream", &good.config)
        }
        [_, "blobs", digest] if *digest == sha256(&good.layer) => {
            whole(&mut stream, "application/octet-stream", &good.layer)
        }
        ["referrers", "referrers", _] | ["schema", "manifests", _] => {
            head(&mut stream, "200 OK", INDEX, None)?;
            stream.write_all(
                br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":["#,
            )?;
            endless(&mut stream, b' ')
        }
        _ => {
            let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"not here"}]}"#;
            head(&mut stream, "404 Not Found", "application/json", Some(body.len()))?;
            stream.write_all(body)
        }
    }
}

/// What one `loadhost` under `/usr/bin/time` did.
#[derive(Debug)]
struct Measured {
    code: i32,
    stderr: String,
    peak_rss_mib: u64,
    wall: Duration,
}

/// `loadhost ARGS…` in `dir` with its own store and the test deadline, under `/usr/bin/time`;
/// killed after [`WALL_LIMIT`].
fn measured(dir: &Path, args: &[&str]) -> Measured {
    let began = Instant::now();
    let mut child = Command::new("/usr/bin/time")
        // Its own process group, so that a run past the limit is killed with loadhost under it.
        .process_group(0)
        .args(["-f", "peak_rss_kib=%M"])
        .arg(env!("CARGO_BIN_EXE_loadhost"))
        .args(args)
        .env("LOADHOST_CACHE_DIR", dir.join("store"))
        .env("REGISTRY_AUTH_FILE", dir.join("no-auth.json"))
        .env("LOADHOST_REGISTRY_DEADLINE", DEADLINE_S)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/time runs loadhost");
    let status = loop {
        match child.try_wait().unwrap() {
            Some(status) => break Some(status),
            None if began.elapsed() > WALL_LIMIT => break None,
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if status.is_none() {
        let group = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: a plain kill(2) of the process group this test made.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let out = child.wait_with_output().unwrap();
    let wall = began.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let peak_rss_mib = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_kib="))
        .and_then(|k| k.trim().parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024);
    // /usr/bin/time's own lines (the figure, "Command exited with non-zero status N") are not loadhost's.
    let stderr: String = stderr
        .lines()
        .filter(|l| !l.starts_with("peak_rss_kib=") && !l.starts_with("Command "))
        .collect::<Vec<_>>()
        .join("\n");
    let code = if status.is_none() { -1 } else { out.status.code().unwrap_or(-1) };
    let m = Measured { code, stderr, peak_rss_mib, wall };
    eprintln!(
        "loadhost {}: exit {}, peak RSS {} MiB, wall {:.1} s",
        args.join(" "),
        m.code,
        m.peak_rss_mib,
        m.wall.as_secs_f64()
    );
    m
}

/// Exit 2, one line naming the reference and `needles`, within the bounds.
fn refused(m: &Measured, reference: &str, needles: &[&str]) {
    assert_eq!(m.code, 2, "exit 2, got {m:?}");
    let line = m.stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(line.contains(reference), "names {reference}: {line}");
    for needle in needles {
        assert!(line.contains(needle), "says {needle:?}: {line}");
    }
    assert!(m.wall < Duration::from_secs(10), "ends within the deadline and then some: {m:?}");
    assert!(m.peak_rss_mib < 200, "a bounded peak RSS: {m:?}");
}

#[test]
fn an_endless_manifest_and_an_endless_error_body_are_cut_at_their_caps() {
    let hostile = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let reference = format!("{}/endless:1", hostile.addr);
    let m = measured(dir.path(), &["pull", &reference]);
    refused(&m, &reference, &["the manifest is refused", "4 MiB"]);
    let reference = format!("{}/error:1", hostile.addr);
    let m = measured(dir.path(), &["pull", &reference]);
    refused(&m, &reference, &["HTTP 500"]);
}

#[test]
fn a_manifest_dripping_a_byte_every_two_seconds_meets_the_deadline() {
    let hostile = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let reference = format!("{}/drip:1", hostile.addr);
    let m = measured(dir.path(), &["pull", &reference]);
    refused(&m, &reference, &["did not finish within the deadline of 3 s", "LOADHOST_REGISTRY_DEADLINE"]);
    assert!(m.wall >= Duration::from_secs(3), "{m:?}");
}

#[test]
fn a_layer_that_streams_past_its_descriptor_is_refused_at_its_size() {
    let hostile = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let reference = format!("{}/bigblob:1", hostile.addr);
    let m = measured(dir.path(), &["pull", &reference]);
    refused(&m, &reference, &["application/wasm", "more than its descriptor's 63000 bytes"]);
    // A component larger than --max-plugin-size is refused by its descriptor, before any read.
    let m = measured(dir.path(), &["run", &reference, "--max-plugin-size", "1KiB", "-n", "1"]);
    refused(&m, &reference, &["its descriptor says 63000 bytes", "--max-plugin-size"]);
}

#[test]
fn endless_referrers_and_tag_schema_indexes_are_cut_at_their_cap() {
    let hostile = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let made = measured(dir.path(), &["keygen", "team"]);
    assert_eq!(made.code, 0, "{made:?}");
    std::fs::write(
        dir.path().join("policy.toml"),
        format!("[[rule]]\nrepositories = \"{}/*\"\nkeys = [\"team.pub\"]\n", hostile.addr),
    )
    .unwrap();
    for repo in ["referrers", "schema"] {
        let reference = format!("{}/{repo}:1", hostile.addr);
        let m = measured(dir.path(), &["inspect", &reference, "--trust-policy", "policy.toml"]);
        refused(&m, &reference, &["referrers", "4 MiB"]);
    }
}
