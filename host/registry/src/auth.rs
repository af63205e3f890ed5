//! Registry credentials: `--registry-user` with a password on standard input, else the Docker
//! credentials file (`$REGISTRY_AUTH_FILE`, `$DOCKER_CONFIG/config.json`, `~/.docker/config.json`),
//! else anonymous. In that file, as Docker does: `credHelpers[HOST]` names the credential helper
//! for the registry, else `credsStore` names the default one; a helper, when there is one, is
//! asked (`docker-credential-NAME get`, on `PATH`) and the `auths` entry is not used; else the
//! `auths` entry.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;

use crate::error::RegistryError;

/// How long a credential helper may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a credential helper may write on stdout (and on stderr).
const HELPER_OUTPUT_LIMIT: usize = 64 * 1024;
/// What a credential helper says when it has nothing for the registry.
const NOT_FOUND: &str = "credentials not found";
/// The user name with which a helper answers an identity token rather than a password.
const TOKEN_USERNAME: &str = "<token>";

/// Where the credentials for a registry came from, as failure messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// No credentials.
    Anonymous,
    /// `--registry-user` and `--registry-password-stdin`.
    CommandLine,
    /// A Docker-style credentials file.
    File(PathBuf),
    /// A credential helper named in a credentials file.
    Helper {
        /// The helper program, `docker-credential-NAME`.
        program: String,
        /// The setting that named it: `credsStore` or `credHelpers`.
        setting: &'static str,
        /// The credentials file.
        config: PathBuf,
        /// Whether it answered credentials (else it had none: anonymous).
        found: bool,
    },
}

impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("none (anonymous; give --registry-user or a docker config.json)"),
            Self::CommandLine => f.write_str("--registry-user"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Helper { program, setting, config, found: true } => {
                write!(f, "{program} (the {setting} of {})", config.display())
            }
            Self::Helper { program, setting, config, found: false } => write!(
                f,
                "none (anonymous: {program}, the {setting} of {}, has no credentials for this registry)",
                config.display()
            ),
        }
    }
}

/// The credentials for one registry.
#[derive(Clone)]
pub struct Credentials {
    pub(crate) auth: RegistryAuth,
    /// Where they came from.
    pub source: CredentialSource,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("source", &self.source).finish_non_exhaustive()
    }
}

impl Credentials {
    /// No credentials.
    pub fn anonymous() -> Self {
        Self { auth: RegistryAuth::Anonymous, source: CredentialSource::Anonymous }
    }

    /// A user and password given on the command line.
    pub fn basic(user: String, password: String) -> Self {
        Self { auth: RegistryAuth::Basic(user, password), source: CredentialSource::CommandLine }
    }

    /// The credentials for `registry` (`HOST[:PORT]` as the reference writes it) from the Docker
    /// credentials file, its credential helper or its `auths`, else anonymous. A file that exists
    /// but cannot be read or parsed is an error naming it; a helper that fails is an error naming
    /// it.
    pub fn from_environment(registry: &str) -> Result<Self, RegistryError> {
        let Some(path) = auth_file() else { return Ok(Self::anonymous()) };
        let text = match loadhost_input::read_to_string(&path, loadhost_input::TEXT) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::anonymous()),
            Err(err) => return Err(RegistryError::Input(format!("{}: {err}", path.display()))),
        };
        match choose(&text, registry, &path)? {
            Choice::Auths(user, password) => {
                Ok(Self { auth: RegistryAuth::Basic(user, password), source: CredentialSource::File(path) })
            }
            Choice::Nothing => Ok(Self::anonymous()),
            Choice::Helper { name, setting } => {
                let program = format!("docker-credential-{name}");
                let source =
                    |found| CredentialSource::Helper { program: program.clone(), setting, config: path.clone(), found };
                tracing::debug!(%program, registry, "asking the credential helper");
                let fail = |why: String| {
                    RegistryError::Input(format!(
                        "{program} (the {setting} of {}) for {registry}: {why}",
                        path.display()
                    ))
                };
                let output = run_helper(Path::new(&program), registry, HELPER_TIMEOUT).map_err(fail)?;
                match parse_helper_answer(&output).map_err(fail)? {
                    Some(auth) => Ok(Self { auth, source: source(true) }),
                    None => Ok(Self { auth: RegistryAuth::Anonymous, source: source(false) }),
                }
            }
        }
    }
}

/// `$REGISTRY_AUTH_FILE`, else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
fn auth_file() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("REGISTRY_AUTH_FILE") {
        return Some(PathBuf::from(file));
    }
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

/// What a credentials file says to use for one registry.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    /// Ask the helper `docker-credential-NAME`, named by `setting` (`credHelpers` or `credsStore`).
    Helper { name: String, setting: &'static str },
    /// The user and password of its `auths` entry.
    Auths(String, String),
    /// Nothing: anonymous.
    Nothing,
}

/// A key of `auths` or `credHelpers` without its scheme and trailing slash.
fn host_of(key: &str) -> &str {
    key.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/')
}

/// Docker's precedence for `registry` in a config.json: `credHelpers[registry]`, else
/// `credsStore`, else the `auths` entry. A helper, when one applies, answers alone (its "not
/// found" is anonymous, not the `auths` entry), as Docker's native store does.
fn choose(text: &str, registry: &str, path: &Path) -> Result<Choice, RegistryError> {
    let bad = |why: &str| RegistryError::Input(format!("{}: {why}", path.display()));
    let json: serde_json::Value = serde_json::from_str(text).map_err(|err| bad(&err.to_string()))?;
    let helper_name = |setting: &str, name: &str| -> Result<(), RegistryError> {
        if name.contains('/') || name.trim() != name || name.chars().any(char::is_control) {
            return Err(bad(&format!("{setting}: {name:?} is not a credential helper name (docker-credential-NAME)")));
        }
        Ok(())
    };
    let per_host = json.get("credHelpers").and_then(|h| h.as_object()).and_then(|helpers| {
        helpers.iter().find(|(key, _)| host_of(key) == registry).and_then(|(_, name)| name.as_str())
    });
    if let Some(name) = per_host.filter(|name| !name.is_empty()) {
        helper_name("credHelpers", name)?;
        return Ok(Choice::Helper { name: name.to_owned(), setting: "credHelpers" });
    }
    if let Some(name) = json.get("credsStore").and_then(|s| s.as_str()).filter(|name| !name.is_empty()) {
        helper_name("credsStore", name)?;
        return Ok(Choice::Helper { name: name.to_owned(), setting: "credsStore" });
    }
    let Some(auths) = json.get("auths").and_then(|a| a.as_object()) else { return Ok(Choice::Nothing) };
    let Some((_, entry)) = auths.iter().find(|(key, _)| host_of(key) == registry) else {
        return Ok(Choice::Nothing);
    };
    if let Some(encoded) = entry.get("auth").and_then(|a| a.as_str()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| bad(&format!("auths.{registry}.auth is not base64")))?;
        let decoded = String::from_utf8(decoded).map_err(|_| bad(&format!("auths.{registry}.auth is not UTF-8")))?;
        let (user, password) =
            decoded.split_once(':').ok_or_else(|| bad(&format!("auths.{registry}.auth is not USER:PASSWORD")))?;
        return Ok(Choice::Auths(user.to_owned(), password.to_owned()));
    }
    let field = |name: &str| entry.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    Ok(field("username").zip(field("password")).map_or(Choice::Nothing, |(u, p)| Choice::Auths(u, p)))
}

/// What a credential helper did.
#[derive(Debug)]
struct HelperOutput {
    success: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Run `program get` with `address` and a newline on its stdin, for at most `timeout`, keeping at
/// most [`HELPER_OUTPUT_LIMIT`] of each output. Errors are one line and never quote the output.
fn run_helper(program: &Path, address: &str, timeout: Duration) -> Result<HelperOutput, String> {
    let mut child = Command::new(program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => "not found on PATH".to_owned(),
            _ => format!("cannot be run: {err}"),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading its input closes the pipe: not an error here, its
        // exit status says what happened.
        let _ = stdin.write_all(format!("{address}\n").as_bytes());
    }
    let (sender, receiver) = mpsc::channel();
    let readers: [(bool, Option<Box<dyn std::io::Read + Send>>); 2] = [
        (true, child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)),
        (false, child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)),
    ];
    for (is_stdout, reader) in readers {
        let Some(reader) = reader else { continue };
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut reader = reader;
            let read = (&mut reader).take(HELPER_OUTPUT_LIMIT as u64 + 1).read_to_end(&mut kept);
            // Drain the rest so the helper is not blocked writing; it is refused below.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
            let _ = sender.send((is_stdout, read.map(|_| kept)));
        });
    }
    drop(sender);
    let began = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if began.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not answer within {} s", timeout.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(err) => return Err(format!("cannot be waited for: {err}")),
        }
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        // A process the helper left behind may hold its output open: wait no longer than the rest
        // of the timeout.
        let left = timeout.saturating_sub(began.elapsed());
        let Ok((is_stdout, read)) = receiver.recv_timeout(left) else {
            return Err(format!("its output was not closed within {} s", timeout.as_secs_f64()));
        };
        let bytes = read.map_err(|err| format!("its output cannot be read: {err}"))?;
        if bytes.len() > HELPER_OUTPUT_LIMIT {
            return Err(format!("it wrote more than {} KiB", HELPER_OUTPUT_LIMIT / 1024));
        }
        if is_stdout {
            stdout = bytes;
        } else {
            stderr = bytes;
        }
    }
    Ok(HelperOutput { success: status.success(), stdout, stderr })
}

/// The first non-empty line of `bytes`, trimmed and cut to 200 characters.
fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    Some(line.chars().take(200).collect())
}

/// The credentials a helper answered: None when it has none for the registry ("credentials not
/// found", as the docker-credential-helpers write it), else `{ServerURL, Username, Secret}` as
/// basic auth. A failure is one line; a successful answer is never quoted (it holds the secret).
fn parse_helper_answer(output: &HelperOutput) -> Result<Option<RegistryAuth>, String> {
    if !output.success {
        let said = first_line(&output.stdout).or_else(|| first_line(&output.stderr));
        return match said {
            Some(line) if line.to_ascii_lowercase().contains(NOT_FOUND) => Ok(None),
            Some(line) => Err(format!("failed: {line}")),
            None => Err("failed without saying why".to_owned()),
        };
    }
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|err| format!("did not answer JSON {{\"ServerURL\", \"Username\", \"Secret\"}} ({err})"))?;
    let field = |name: &str| -> Result<String, String> {
        match json.get(name) {
            Some(serde_json::Value::String(value)) => Ok(value.clone()),
            None | Some(serde_json::Value::Null) => Ok(String::new()),
            Some(_) => Err(format!("answered a {name} that is not a string")),
        }
    };
    let (user, secret) = (field("Username")?, field("Secret")?);
    if user == TOKEN_USERNAME {
        return Err(format!(
            "answered an identity token (Username {TOKEN_USERNAME}), which loadhost cannot use: its registry client has no OAuth2 refresh-token exchange; store a user name and password in the helper, or give --registry-user"
        ));
    }
    if user.is_empty() && secret.is_empty() {
        return Ok(None);
    }
    Ok(Some(RegistryAuth::Basic(user, secret)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auths(user: &str, password: &str) -> Choice {
        Choice::Auths(user.into(), password.into())
    }

    fn helper(name: &str, setting: &'static str) -> Choice {
        Choice::Helper { name: name.into(), setting }
    }

    #[test]
    fn reads_docker_config_entries() {
        let path = Path::new("config.json");
        let text = r#"{"auths":{"http://127.0.0.1:5000/":{"auth":"dTpw"},"b:1":{"username":"x","password":"y"}}}"#;
        assert_eq!(choose(text, "127.0.0.1:5000", path).expect("ok"), auths("u", "p"));
        assert_eq!(choose(text, "b:1", path).expect("ok"), auths("x", "y"));
        assert_eq!(choose(text, "c", path).expect("ok"), Choice::Nothing);
        assert!(choose("{", "c", path).is_err());
    }

    #[test]
    fn cred_helpers_then_creds_store_then_auths() {
        let path = Path::new("config.json");
        let text = r#"{"auths":{"a:1":{"auth":"dTpw"},"b:1":{"auth":"dTpw"}},
            "credHelpers":{"a:1":"pass","https://c:1/":"ecr","d:1":""},"credsStore":"desktop"}"#;
        // credHelpers for the host wins over credsStore and over the host's auths entry.
        assert_eq!(choose(text, "a:1", path).expect("ok"), helper("pass", "credHelpers"));
        assert_eq!(choose(text, "c:1", path).expect("ok"), helper("ecr", "credHelpers"));
        // credsStore wins over auths (Docker's native store answers alone), and covers any host.
        assert_eq!(choose(text, "b:1", path).expect("ok"), helper("desktop", "credsStore"));
        assert_eq!(choose(text, "d:1", path).expect("ok"), helper("desktop", "credsStore"));
        assert_eq!(choose(text, "z", path).expect("ok"), helper("desktop", "credsStore"));
        // Without credsStore: credHelpers for its hosts, auths for the rest.
        let text =
            r#"{"auths":{"a:1":{"auth":"dTpw"},"b:1":{"auth":"dTpw"}},"credHelpers":{"a:1":"pass"},"credsStore":""}"#;
        assert_eq!(choose(text, "a:1", path).expect("ok"), helper("pass", "credHelpers"));
        assert_eq!(choose(text, "b:1", path).expect("ok"), auths("u", "p"));
        assert_eq!(choose(text, "z", path).expect("ok"), Choice::Nothing);
        // A helper name that is a path is refused, naming the file and setting.
        let err = choose(r#"{"credsStore":"../x"}"#, "a", path).expect_err("refused").to_string();
        assert!(err.contains("config.json") && err.contains("credsStore"), "{err}");
    }

    fn output(success: bool, stdout: &str, stderr: &str) -> HelperOutput {
        HelperOutput { success, stdout: stdout.into(), stderr: stderr.into() }
    }

    #[test]
    fn parses_helper_answers() {
        let ok = output(true, r#"{"ServerURL":"a:1","Username":"tester","Secret":"s3cret"}"#, "");
        match parse_helper_answer(&ok) {
            Ok(Some(RegistryAuth::Basic(user, secret))) => {
                assert_eq!((user.as_str(), secret.as_str()), ("tester", "s3cret"))
            }
            other => panic!("basic auth, got {other:?}"),
        }
        let none = output(false, "credentials not found in native keychain\n", "");
        assert!(matches!(parse_helper_answer(&none), Ok(None)));
        let none = output(false, "", "Credentials not found\n");
        assert!(matches!(parse_helper_answer(&none), Ok(None)));
        let failed = output(false, "\n  keychain locked  \nmore\n", "");
        assert_eq!(parse_helper_answer(&failed).expect_err("failed"), "failed: keychain locked");
        let silent = output(false, "", "");
        assert!(parse_helper_answer(&silent).is_err());
        // A token is refused; a bad answer is refused without quoting it (it may hold the secret).
        let token = output(true, r#"{"ServerURL":"a","Username":"<token>","Secret":"s3cret"}"#, "");
        let err = parse_helper_answer(&token).expect_err("token");
        assert!(err.contains("identity token") && !err.contains("s3cret"), "{err}");
        let bad = output(true, r#"{"Username":"u","Secret":5}"#, "");
        assert!(parse_helper_answer(&bad).is_err());
        let bad = output(true, "s3cret", "");
        let err = parse_helper_answer(&bad).expect_err("not JSON");
        assert!(!err.contains("s3cret"), "{err}");
        let empty = output(true, r#"{"ServerURL":"a","Username":"","Secret":""}"#, "");
        assert!(matches!(parse_helper_answer(&empty), Ok(None)));
    }

    fn script(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("docker-credential-unit");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn runs_a_helper_with_the_address_on_stdin_bounded_in_time_and_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let echo =
            script(dir.path(), r#"read -r addr; [ "$1" = get ] && printf '{"Username":"u","Secret":"%s"}' "$addr""#);
        let out = run_helper(&echo, "a:1", Duration::from_secs(10)).expect("runs");
        assert!(out.success);
        assert!(matches!(parse_helper_answer(&out), Ok(Some(RegistryAuth::Basic(u, s))) if u == "u" && s == "a:1"));
        let slow = script(dir.path(), "exec sleep 5");
        let began = Instant::now();
        let err = run_helper(&slow, "a:1", Duration::from_millis(300)).expect_err("timeout");
        assert!(err.contains("did not answer within"), "{err}");
        assert!(began.elapsed() < Duration::from_secs(3));
        let big = script(
            dir.path(),
            "i=0; while [ $i -lt 3000 ]; do echo 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done",
        );
        let err = run_helper(&big, "a:1", Duration::from_secs(10)).expect_err("too big");
        assert!(err.contains("more than 64 KiB"), "{err}");
        let err =
            run_helper(Path::new("docker-credential-no-such-helper-here"), "a", HELPER_TIMEOUT).expect_err("missing");
        assert_eq!(err, "not found on PATH");
    }
}
