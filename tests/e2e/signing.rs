//! Signed plugins and the trust policy (issue 32), against a real registry (Debian's
//! `docker-registry`, which has no referrers API: the signatures are found through the referrers
//! tag schema): keygen, `push --sign`, runs under a policy that pass or are refused before any
//! load, a moved tag refused by the policy, and the signature read and verified by an independent
//! implementation (Python's `cryptography`, over plain HTTP).

use std::path::Path;
use std::process::Command;

use crate::common::{Example, Run, plugin};
use crate::registry::{RegistryProcess, http, sha256};
use crate::target_process::TargetProcess;

/// `loadhost ARGS…` in the folder `dir`, with the store `store`.
fn loadhost_in(dir: &Path, store: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .current_dir(dir)
        .env("LOADHOST_CACHE_DIR", store)
        .env_remove("LOADHOST_TRUST_POLICY")
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        dir: tempfile::tempdir().unwrap(),
    }
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites_one() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let made = loadhost_in(work.path(), store.path(), &["keygen", "team"]);
    assert_eq!(made.code, 0, "keygen: {}", made.stderr);
    let (key, public) = (work.path().join("team.key"), work.path().join("team.pub"));
    assert_eq!(mode(&key), 0o600, "the private key is the owner's alone");
    assert_eq!(mode(&public) & 0o644, 0o644, "the public key is readable by all");
    assert!(std::fs::read_to_string(&key).unwrap().starts_with("-----BEGIN PRIVATE KEY-----\n"));
    let public_text = std::fs::read_to_string(&public).unwrap();
    assert!(public_text.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{public_text}");

    // Never over an existing file, either of the two: exit 2 naming it, both files unchanged.
    let again = loadhost_in(work.path(), store.path(), &["keygen", "team"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(again.stderr.contains("team.key: already exists"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&public).unwrap(), public_text);
    std::fs::write(work.path().join("solo.pub"), "mine").unwrap();
    let half = loadhost_in(work.path(), store.path(), &["keygen", "solo"]);
    assert_eq!(half.code, 2, "{}", half.stderr);
    assert!(half.stderr.contains("solo.pub: already exists"), "{}", half.stderr);
    assert!(!work.path().join("solo.key").exists(), "no half pair");
    assert_eq!(std::fs::read_to_string(work.path().join("solo.pub")).unwrap(), "mine");

    // A public key is not a signing key: refused before any registry is contacted.
    let wasm = plugin(Example::HttpGet).display().to_string();
    let push = loadhost_in(work.path(), store.path(), &["push", &wasm, "127.0.0.1:9/team/x:1", "--sign", "team.pub"]);
    assert_eq!(push.code, 2, "{}", push.stderr);
    assert!(push.stderr.contains("team.pub: not an ECDSA P-256 private key in PKCS#8 PEM"), "{}", push.stderr);
}

/// The Python check: read the signature of `digest` in `repo` from the registry over HTTP (the
/// referrers tag schema's index, the signature manifest, its payload blob and annotation) and
/// verify it with `cryptography` against `public`.
const PYTHON_CHECK: &str = r#"
import base64, json, sys, urllib.request
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

addr, repo, digest, public = sys.argv[1:5]
def get(path, accept):
    request = urllib.request.Request(f"http://{addr}/v2/{repo}/{path}", headers={"Accept": accept})
    with urllib.request.urlopen(request) as response:
        return response.read()

index = json.loads(get("manifests/" + digest.replace(":", "-"), "application/vnd.oci.image.index.v1+json"))
signatures = [m for m in index["manifests"] if m.get("artifactType") == "application/vnd.dev.cosign.artifact.sig.v1+json"]
assert len(signatures) == 1, index
manifest = json.loads(get("manifests/" + signatures[0]["digest"], "application/vnd.oci.image.manifest.v1+json"))
assert manifest["subject"]["digest"] == digest, manifest["subject"]
assert manifest["config"]["mediaType"] == "application/vnd.oci.empty.v1+json"
layer = manifest["layers"][0]
assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json", layer
payload = get("blobs/" + layer["digest"], "*/*")
critical = json.loads(payload)["critical"]
assert critical["image"]["docker-manifest-digest"] == digest, critical
assert critical["identity"]["docker-reference"] == f"{addr}/{repo}", critical
assert critical["type"] == "cosign container image signature"
signature = base64.b64decode(layer["annotations"]["dev.cosignproject.cosign/signature"])
key = serialization.load_pem_public_key(open(public, "rb").read())
key.verify(signature, payload, ec.ECDSA(hashes.SHA256()))  # raises InvalidSignature otherwise
print("verified", critical["image"]["docker-manifest-digest"])
"#;

#[test]
fn a_signed_plugin_runs_under_the_policy_and_every_other_is_refused_before_any_load() {
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let addr = registry.addr.clone();
    let work = tempfile::tempdir().unwrap();
    let publisher = tempfile::tempdir().unwrap();
    let runner = tempfile::tempdir().unwrap();
    for name in ["team", "other"] {
        let made = loadhost_in(work.path(), publisher.path(), &["keygen", name]);
        assert_eq!(made.code, 0, "keygen {name}: {}", made.stderr);
    }
    let wasm = plugin(Example::HttpGet).display().to_string();
    let push = |tag: &str, key: Option<&str>| {
        let mut args = vec!["push", wasm.as_str(), tag];
        args.extend(key.map(|k| ["--sign", k]).into_iter().flatten());
        let pushed = loadhost_in(work.path(), publisher.path(), &args);
        assert_eq!(pushed.code, 0, "push {tag}: {}", pushed.stderr);
        pushed.stdout.trim().to_owned()
    };
    let signed_tag = format!("{addr}/team/signed:1");
    let signed = push(&signed_tag, Some("team.key"));
    let digest = signed.rsplit_once('@').unwrap().1.to_owned();
    let by_other = push(&format!("{addr}/team/other-key:1"), Some("other.key"));
    let unsigned = push(&format!("{addr}/team/unsigned:1"), None);

    // The example policy, its placeholders filled in, is the policy of every run below.
    let example = loadhost_in(work.path(), runner.path(), &["trust-policy", "--example"]);
    assert_eq!(example.code, 0, "{}", example.stderr);
    assert!(example.stdout.contains("repositories = \"REGISTRY/*\"\nkeys = [\"KEY.pub\"]"), "{}", example.stdout);
    let policy = work.path().join("policy.toml");
    std::fs::write(&policy, example.stdout.replace("REGISTRY", &addr).replace("KEY.pub", "team.pub")).unwrap();
    let policy_arg = policy.display().to_string();
    let url = format!("TARGET_URL={}/", target.url);
    let run = |reference: &str, extra: &[&str]| {
        let args = [
            &["run", reference, "--trust-policy", policy_arg.as_str(), "-e", url.as_str()][..],
            &["--allow-host", target.authority.as_str(), "-n", "5", "--summary-json", "summary.json"],
            &["--results", "r.jsonl"],
            extra,
        ]
        .concat();
        loadhost_in(work.path(), runner.path(), &args)
    };

    // Signed by the policy's key: it runs, and says which key signed it.
    let passed = run(&signed, &[]);
    assert_eq!(passed.code, 0, "signed run: {}", passed.stderr);
    assert!(
        passed.stderr.contains(&format!("is signed by {}", work.path().join("team.pub").display())),
        "{}",
        passed.stderr
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["tasks"]["passed"], 5);
    assert_eq!(summary["plugin"]["digest"], digest.as_str());
    // By tag, too (the store records the digest the tag names, for the moved tag below).
    let by_tag = run(&signed_tag, &[]);
    assert_eq!(by_tag.code, 0, "signed run by tag: {}", by_tag.stderr);
    // The verified signature is kept in the store: --pull never verifies against it.
    let offline = run(&signed, &["--pull", "never"]);
    assert_eq!(offline.code, 0, "signed run from the store: {}", offline.stderr);
    // The publisher's store holds the plugin but no verified signature: offline, refused.
    let args = ["inspect", signed.as_str(), "--trust-policy", policy_arg.as_str(), "--pull", "never"];
    let unkept = loadhost_in(work.path(), publisher.path(), &args);
    assert_eq!(unkept.code, 3, "{}", unkept.stderr);
    assert!(unkept.stderr.contains("no signature of it is in the local store (--pull never"), "{}", unkept.stderr);

    // Refused before any load: exit 3, one line naming the repository and the key, no request
    // to the target, no results file.
    let refused = |reference: &str, says: &str| {
        std::fs::remove_file(work.path().join("r.jsonl")).unwrap_or(());
        let before = target.stats()["requests"].as_u64().unwrap();
        let run = run(reference, &[]);
        eprintln!("refused {reference}:\n{}", run.stderr);
        assert_eq!(run.code, 3, "{reference}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
        // HOST:PORT/REPO:TAG@sha256:… → HOST:PORT/REPO
        let unpinned = reference.split('@').next().unwrap();
        let repository = unpinned.rsplit_once(':').map_or(unpinned, |(repo, _)| repo);
        assert!(run.stderr.contains(&format!("the repository {repository} ")), "names {repository}: {}", run.stderr);
        assert!(run.stderr.contains("team.pub") && run.stderr.contains(&policy_arg), "{}", run.stderr);
        assert!(run.stderr.contains(says), "says {says:?}: {}", run.stderr);
        assert!(run.stderr.contains("nothing was loaded"), "{}", run.stderr);
        assert!(!work.path().join("r.jsonl").exists(), "no results file");
        assert_eq!(target.stats()["requests"].as_u64().unwrap(), before + 1, "only /stats reached the target");
    };
    refused(&by_other, "made by another key than");
    refused(&unsigned, "it has no signature");

    // An independent implementation verifies the stored signature (the referrers tag index, the
    // signature manifest, the payload and its annotation, read over HTTP).
    let out = Command::new(crate::receivers::venv_python())
        .args(["-c", PYTHON_CHECK, &addr, "team/signed", &digest, &work.path().join("team.pub").display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "python check: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), format!("verified {digest}"));
    // …and it would notice another key.
    let out = Command::new(crate::receivers::venv_python())
        .args(["-c", PYTHON_CHECK, &addr, "team/signed", &digest, &work.path().join("other.pub").display().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("InvalidSignature"));

    // inspect, find-max and a scenario block are held to the policy too.
    let inspect = loadhost_in(work.path(), runner.path(), &["inspect", &unsigned, "--trust-policy", &policy_arg]);
    assert_eq!(inspect.code, 3, "inspect: {}", inspect.stderr);
    assert!(inspect.stderr.contains("it has no signature") && inspect.stdout.is_empty(), "{}", inspect.stderr);
    let inspect = loadhost_in(work.path(), runner.path(), &["inspect", &signed, "--trust-policy", &policy_arg]);
    assert_eq!(inspect.code, 0, "inspect signed: {}", inspect.stderr);
    let signed_by = format!("  signed: by {} (signature sha256:", work.path().join("team.pub").display());
    assert!(inspect.stdout.contains(&signed_by), "inspect names the key: {}", inspect.stdout);
    let find_max = loadhost_in(
        work.path(),
        runner.path(),
        &["find-max", &by_other, "--trust-policy", &policy_arg, "--slo", "latency_ms:p(99)<5000"],
    );
    assert_eq!(find_max.code, 3, "find-max: {}", find_max.stderr);
    assert!(find_max.stderr.contains("made by another key"), "{}", find_max.stderr);
    std::fs::write(
        work.path().join("blocks.toml"),
        format!("[[scenario]]\nname = \"shared\"\nplugin = \"{unsigned}\"\niterations = 1\n"),
    )
    .unwrap();
    let block = loadhost_in(
        work.path(),
        runner.path(),
        &["run", "-c", "blocks.toml", "--trust-policy", &policy_arg, "--allow-host", &target.authority],
    );
    assert_eq!(block.code, 3, "a scenario block: {}", block.stderr);
    assert!(
        block.stderr.contains("scenario 'shared'") && block.stderr.contains("it has no signature"),
        "{}",
        block.stderr
    );

    // LOADHOST_TRUST_POLICY names the policy as --trust-policy does.
    let out = Command::new(env!("CARGO_BIN_EXE_loadhost"))
        .current_dir(work.path())
        .env("LOADHOST_CACHE_DIR", runner.path())
        .env("LOADHOST_TRUST_POLICY", &policy)
        .args(["inspect", &unsigned])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));

    // `loadhost sign REF --key KEY` signs a plugin already pushed: it runs then.
    let sign = loadhost_in(work.path(), publisher.path(), &["sign", &unsigned, "--key", "team.key"]);
    assert_eq!((sign.code, sign.stdout.trim()), (0, unsigned.as_str()), "sign: {}", sign.stderr);
    let now_signed = run(&unsigned, &[]);
    assert_eq!(now_signed.code, 0, "signed after the push: {}", now_signed.stderr);

    // The manifest changed after signing (an annotation added, put back under the tag) and the
    // old signature copied into the new digest's referrers index: the signature names the old
    // digest, so it is refused.
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.blob_file(&digest)).unwrap()).unwrap();
    manifest["annotations"] = serde_json::json!({ "changed": "after signing" });
    let changed = serde_json::to_vec(&manifest).unwrap();
    let changed_digest = sha256(&changed);
    let put = http(&addr, "PUT", "/v2/team/signed/manifests/1", "application/vnd.oci.image.manifest.v1+json", &changed);
    assert!(put.starts_with("HTTP/1.1 201"), "{put}");
    let old_index = std::fs::read(registry.blob_file(&tag_digest(&registry, "team/signed", &digest))).unwrap();
    let index_path = format!("/v2/team/signed/manifests/{}", changed_digest.replace(':', "-"));
    let put = http(&addr, "PUT", &index_path, "application/vnd.oci.image.index.v1+json", &old_index);
    assert!(put.starts_with("HTTP/1.1 201"), "{put}");
    refused(
        &format!("{signed_tag}@{changed_digest}"),
        &format!("{digest}, another manifest (this one was changed after signing"),
    );

    // The tag moved (it names the changed manifest now): the policy's pin-tags refuses it.
    let moved = run(&signed_tag, &[]);
    eprintln!("moved tag under the policy:\n{}", moved.stderr);
    assert_eq!(moved.code, 3, "moved tag: {}", moved.stderr);
    assert!(moved.stderr.contains("has MOVED") && moved.stderr.contains("pin-tags = true"), "{}", moved.stderr);
    assert!(moved.stderr.contains(&policy_arg), "{}", moved.stderr);

    // A repository no rule covers is refused; a bad policy is a usage error naming the file.
    std::fs::write(&policy, "[[rule]]\nrepositories = \"elsewhere:5000/*\"\nkeys = []\n").unwrap();
    let uncovered = run(&signed, &[]);
    assert_eq!(uncovered.code, 3, "{}", uncovered.stderr);
    assert!(
        uncovered.stderr.contains(&format!("has no rule for the repository {addr}/team/signed")),
        "{}",
        uncovered.stderr
    );
    std::fs::write(&policy, "[[rule]]\nrepositories = \"*\"\nkeys = [\"missing.pub\"]\n").unwrap();
    let bad = run(&signed, &[]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains(&format!("trust policy {policy_arg}")) && bad.stderr.contains("missing.pub"),
        "{}",
        bad.stderr
    );
}

/// The digest of the manifest the registry's tag `sha256-HEX` (the referrers index of `digest`)
/// names, read from its storage.
fn tag_digest(registry: &RegistryProcess, repo: &str, digest: &str) -> String {
    let link = registry
        .blob_file(digest)
        .ancestors()
        .nth(5)
        .unwrap()
        .join(format!("repositories/{repo}/_manifests/tags/{}/current/link", digest.replace(':', "-")));
    std::fs::read_to_string(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display())).trim().to_owned()
}

#[test]
fn a_protected_repository_spelt_otherwise_is_refused_not_let_through_by_the_default_rule() {
    // Issue 41, defect 1: with a rule for 127.0.0.1:PORT/team/* and the documented default rule
    // `*` (no keys), `localhost:PORT/team/evil` and `127.0.0.1:0PORT/team/evil` ran an unsigned
    // plugin from the protected repository: the rules were matched on the spelling.
    let registry = RegistryProcess::start();
    let target = TargetProcess::start(&[]);
    let addr = registry.addr.clone();
    let port = addr.rsplit_once(':').unwrap().1.to_owned();
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    assert_eq!(loadhost_in(work.path(), store.path(), &["keygen", "team"]).code, 0);
    let wasm = plugin(Example::HttpGet).display().to_string();
    for repo in ["team/evil:1", "elsewhere/free:1"] {
        let pushed = loadhost_in(work.path(), store.path(), &["push", &wasm, &format!("{addr}/{repo}")]);
        assert_eq!(pushed.code, 0, "push {repo}: {}", pushed.stderr);
    }
    std::fs::write(
        work.path().join("policy.toml"),
        format!("[[rule]]\nrepositories = \"{addr}/team/*\"\nkeys = [\"team.pub\"]\n\n[[rule]]\nrepositories = \"*\"\nkeys = []\n"),
    )
    .unwrap();
    let url = format!("TARGET_URL={}/", target.url);
    let run = |reference: &str| {
        let args = ["run", reference, "--trust-policy", "policy.toml", "-e", &url, "--allow-host", &target.authority];
        loadhost_in(work.path(), store.path(), &[&args[..], &["-n", "3"]].concat())
    };
    for spelling in [
        format!("localhost:{port}"),
        format!("127.0.0.1:0{port}"),
        format!("LOCALHOST:{port}"),
        format!("127.1:{port}"),
    ] {
        let reference = format!("{spelling}/team/evil:1");
        let before = target.stats()["requests"].as_u64().unwrap();
        let refused = run(&reference);
        eprintln!("{reference}:\n{}", refused.stderr);
        assert_eq!(refused.code, 3, "{reference}: {}", refused.stderr);
        assert_eq!(refused.stderr.lines().count(), 1, "one line: {}", refused.stderr);
        assert!(
            refused.stderr.contains(&format!("names it {addr}"))
                && refused.stderr.contains("nothing was pulled or loaded"),
            "{}",
            refused.stderr
        );
        assert_eq!(target.stats()["requests"].as_u64().unwrap(), before + 1, "only /stats reached the target");
    }
    // As the rule writes it, the unsigned plugin is refused for want of a signature…
    let unsigned = run(&format!("{addr}/team/evil:1"));
    assert_eq!(unsigned.code, 3, "{}", unsigned.stderr);
    assert!(unsigned.stderr.contains("it has no signature"), "{}", unsigned.stderr);
    // …and the default rule still lets through what no other rule names, in any spelling.
    let free = run(&format!("localhost:{port}/elsewhere/free:1"));
    assert_eq!(free.code, 0, "{}", free.stderr);
}
