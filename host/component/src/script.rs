//! Scripts: a Python or JavaScript file run by a prebuilt runner component (`loadhost run
//! journey.py`), and the standalone component `loadhost build` makes of one.
//!
//! A script is its entry file and the files of its folder ([`collect`]): everything the runner may
//! import or read, and nothing else. A **script component** is the runner's bytes, unchanged, with
//! the script's files after them in a `loadhost:script` custom section ([`bundle`]). Keeping the
//! runner's bytes whole is what lets a script start fast: the compile cache is keyed by the
//! runner ([`split`] gives its bytes back), so an edited script, or a built one, never compiles
//! anything. The section's layout is deterministic (files sorted, no times or owners), so the
//! same runner and files always make the same bytes.
//!
//! The section holds a header of `KEY VALUE` lines, then each file as a `file PATH LENGTH` line
//! and its bytes:
//!
//! ```text
//! loadhost-script 1
//! language python
//! entry journey.py
//! runner-bytes 19132116
//! file helpers/db.py 1234
//! <1234 bytes>…
//! ```

use std::fmt;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// The custom section's name.
pub const SECTION: &str = "loadhost:script";

/// The most files a script's folder may hold: the whole folder is granted to the script.
pub const MAX_FILES: usize = 1_000;

/// The most bytes a script's folder may hold.
pub const MAX_BYTES: u64 = 64 << 20;

/// Folders never taken along: caches, dependencies and version control, which a script does not
/// read and which would make its digest change with every run of a tool.
const SKIPPED_DIRS: [&str; 4] = ["__pycache__", "node_modules", "target", "venv"];

/// Files at the top of a folder that `loadhost new` made: the SDK copy (`lib/`, holding the file
/// named here) and the WIT (`wit/`) a build needs. The runner carries its own SDK and imports the
/// script's `loadhost` from it, so the copy would only be dead weight in the digest (and its own
/// `declare_metrics(…)` definitions would read as declarations).
fn sdk_copy(folder: &Path, language: Language) -> [Option<&'static str>; 2] {
    let marker = match language {
        Language::Python => "lib/loadhost_entry.py",
        Language::JavaScript => "lib/loadhost.js",
    };
    let lib = folder.join(marker).is_file().then_some("lib");
    let wit = folder.join("wit/plugin.wit").is_file().then_some("wit");
    [lib, wit]
}

/// The language a runner interprets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// CPython, in the Python runner.
    Python,
    /// JavaScript (StarlingMonkey), in the JavaScript runner.
    JavaScript,
}

impl Language {
    /// The language of a script file, by its extension (`.py`; `.js` or `.mjs`).
    pub fn of(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()? {
            "py" => Some(Self::Python),
            "js" | "mjs" => Some(Self::JavaScript),
            _ => None,
        }
    }

    /// `python` or `js`: the section's and the runner's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::JavaScript => "js",
        }
    }

    /// `Python` or `JavaScript`, for people.
    pub fn title(self) -> &'static str {
        match self {
            Self::Python => "Python",
            Self::JavaScript => "JavaScript",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "python" => Some(Self::Python),
            "js" => Some(Self::JavaScript),
            _ => None,
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// A script: its language, its entry file and every file of its folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The runner it needs.
    pub language: Language,
    /// The entry file, relative to the folder (`journey.py`).
    pub entry: String,
    /// Each file (a relative path with `/` separators) and its bytes, sorted by path.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Script {
    /// How many bytes its files hold.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// Write its files under `dir` (which must exist and be empty), as the runner will see them.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        for (path, bytes) in &self.files {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(file, bytes)?;
        }
        Ok(())
    }
}

/// Why a script cannot be taken or read back.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The entry is not a file of a known language.
    #[error("{}: not a script (loadhost runs .py and .js files, and .wasm components)", .0.display())]
    NotScript(PathBuf),
    /// A file or folder could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The folder holds too much to grant to a script.
    #[error(
        "{}: the script's folder holds more than {what}; everything in it is granted to the script \
         (read-only), so put the script in a folder of its own",
        folder.display()
    )]
    TooMuch {
        /// The folder.
        folder: PathBuf,
        /// `1000 files` or `64 MiB`.
        what: String,
    },
    /// A `loadhost:script` section that does not read back.
    #[error("its {SECTION} section is malformed: {0}")]
    Malformed(String),
}

/// The script whose entry file is `entry`: the file and every regular file of its folder, at any
/// depth, but hidden ones (`.git`), caches and dependencies (`__pycache__`, `node_modules`,
/// `target`, `venv`), components (`*.wasm`) and symbolic links.
pub fn collect(entry: &Path) -> Result<Script, ScriptError> {
    let language = Language::of(entry).ok_or_else(|| ScriptError::NotScript(entry.to_owned()))?;
    // Through the input gate: a FIFO or a device named `app.py` is refused, never waited on or read.
    loadhost_input::open(entry).map_err(|error| ScriptError::Read {
        path: entry.to_owned(),
        error: std::io::Error::new(error.kind(), format!("cannot read the script: {error}")),
    })?;
    let folder = match entry.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut files = Vec::new();
    let mut total = 0;
    let skipped = sdk_copy(&folder, language);
    walk(&folder, "", &mut files, &mut total, &folder, &skipped)?;
    files.sort();
    Ok(Script { language, entry: name, files })
}

fn walk(
    dir: &Path,
    prefix: &str,
    files: &mut Vec<(String, Vec<u8>)>,
    total: &mut u64,
    folder: &Path,
    top_skipped: &[Option<&str>],
) -> Result<(), ScriptError> {
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).map_err(read(dir))?.collect::<Result<_, _>>().map_err(read(dir))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let kind = entry.file_type().map_err(read(&path))?;
        if name.starts_with('.') || kind.is_symlink() {
            continue;
        }
        let relative = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        if kind.is_dir() {
            let sdk = prefix.is_empty() && top_skipped.contains(&Some(name.as_str()));
            if !SKIPPED_DIRS.contains(&name.as_str()) && !sdk {
                walk(&path, &relative, files, total, folder, &[])?;
            }
            continue;
        }
        if !kind.is_file() || name.ends_with(".wasm") || name.ends_with(".cwasm") {
            continue;
        }
        let too_much = |what: String| ScriptError::TooMuch { folder: folder.to_owned(), what };
        if files.len() >= MAX_FILES {
            return Err(too_much(format!("{MAX_FILES} files")));
        }
        let size = entry.metadata().map_err(read(&path))?.len();
        *total += size;
        if *total > MAX_BYTES {
            return Err(too_much(format!("{} MiB", MAX_BYTES >> 20)));
        }
        // Read no more than was counted: a file that grows meanwhile cannot pass the cap.
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        std::fs::File::open(&path).and_then(|f| f.take(size).read_to_end(&mut bytes)).map_err(read(&path))?;
        files.push((relative, bytes));
    }
    Ok(())
}

/// How an I/O error on `path` reads.
fn read(path: &Path) -> impl FnOnce(std::io::Error) -> ScriptError + '_ {
    move |error| ScriptError::Read { path: path.to_owned(), error }
}

/// The section's payload (the part after its name).
fn payload(script: &Script, runner_bytes: usize) -> Vec<u8> {
    let mut out = format!(
        "loadhost-script 1\nlanguage {}\nentry {}\nrunner-bytes {runner_bytes}\n",
        script.language.name(),
        script.entry
    )
    .into_bytes();
    for (path, bytes) in &script.files {
        out.extend_from_slice(format!("file {path} {}\n", bytes.len()).as_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// What follows a runner of `runner_bytes` bytes in a script component: the metrics and the
/// options the script declares as `loadhost:metrics` and `loadhost:options` sections (so
/// `inspect`, thresholds and a run's option checks read them as from any plugin), then the
/// `loadhost:script` section, always last.
pub fn tail(script: &Script, runner_bytes: usize) -> Result<Vec<u8>, ScriptError> {
    let mut out = Vec::new();
    for (section, declared) in
        [(crate::declared::SECTION, declarations(script)?), (crate::options::SECTION, option_declarations(script)?)]
    {
        if !declared.is_empty() {
            let lines: String = declared.iter().map(|d| format!("{d}\n")).collect();
            out.extend_from_slice(&custom_section(section, lines.as_bytes()));
        }
    }
    out.extend_from_slice(&custom_section(SECTION, &payload(script, runner_bytes)));
    Ok(out)
}

/// A custom section: id 0, its size, its name and `data`.
fn custom_section(name: &str, data: &[u8]) -> Vec<u8> {
    let mut body = leb(name.len() as u64);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    let mut out = vec![0];
    out.extend_from_slice(&leb(body.len() as u64));
    out.extend_from_slice(&body);
    out
}

/// A standalone component of `script`: the runner's bytes, whole, then its [`tail`].
pub fn bundle(runner: &[u8], script: &Script) -> Result<Vec<u8>, ScriptError> {
    let mut out = runner.to_vec();
    out.extend_from_slice(&tail(script, runner.len())?);
    Ok(out)
}

/// The metrics a script declares: the string literals of its `declare_metrics(…)` calls (Python)
/// or `declareMetrics(…)` calls (JavaScript), in every file of its language, read without running
/// it (as the SDKs' build scripts read them).
pub fn declarations(script: &Script) -> Result<Vec<String>, ScriptError> {
    let mut all = literal_calls(script, "declare_metrics(", "declareMetrics(")?;
    if script.language == Language::JavaScript {
        for line in k6_metrics(script) {
            // The same metric made in two places (or also declared) is one declaration.
            if !all.contains(&line) {
                all.push(line);
            }
        }
    }
    Ok(all)
}

/// k6's custom metrics a JavaScript script makes, `new Trend('name')` (or `Rate`, `Counter`,
/// `Gauge`, with a literal name), as declarations, so a threshold on one (`errors: ['rate<0.1']`)
/// needs no `--metric`, as in k6. A name that is not a literal is left to `--metric`.
fn k6_metrics(script: &Script) -> Vec<String> {
    const KINDS: [(&str, &str); 4] = [("Trend", "trend"), ("Rate", "rate"), ("Counter", "counter"), ("Gauge", "gauge")];
    let mut found = Vec::new();
    for (path, bytes) in &script.files {
        if !(path.ends_with(".js") || path.ends_with(".mjs")) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else { continue };
        for (class, kind) in KINDS {
            let call = format!("new {class}(");
            for (at, _) in text.match_indices(&call) {
                let rest = text[at + call.len()..].trim_start();
                let Some(quote) = rest.chars().next().filter(|c| matches!(c, '\'' | '"' | '`')) else { continue };
                let Some(name) = rest[1..].split(quote).next() else { continue };
                // A name with `${…}` is computed; one over a line is no name.
                if !name.is_empty() && !name.contains("${") && !name.contains('\n') {
                    found.push(format!("{name}:{kind}"));
                }
            }
        }
    }
    found
}

/// The options a script declares: the string literals of its `declare_options(…)` calls (Python)
/// or `declareOptions(…)` calls (JavaScript), read as [`declarations`] reads metrics. Each is a
/// line of a `loadhost:options` section ([`crate::options`]).
pub fn option_declarations(script: &Script) -> Result<Vec<String>, ScriptError> {
    literal_calls(script, "declare_options(", "declareOptions(")
}

/// Where the script `entry` sets k6's `options` (`export const options = …` in JavaScript, a
/// module-level `options = …` in Python), as `FILE:LINE`: loadhost does not read it, so its load,
/// thresholds and scenarios would be ignored without a word. Only the entry file is read (through
/// the input gate, at most [`MAX_BYTES`]), not the folder.
pub fn k6_options(entry: &Path) -> Option<String> {
    let language = Language::of(entry)?;
    let cap = loadhost_input::Cap::new(MAX_BYTES, "a script");
    let text = loadhost_input::read_to_string(entry, cap).ok()?;
    let name = entry.file_name()?.to_string_lossy();
    k6_options_in(language, &name, &text)
}

/// [`k6_options`] of the entry file `name`'s `text`.
fn k6_options_in(language: Language, name: &str, text: &str) -> Option<String> {
    let sets_options = |line: &str| -> bool {
        let rest = match language {
            Language::JavaScript => {
                let Some(rest) = line.trim_start().strip_prefix("export") else { return false };
                let rest = rest.trim_start();
                if let Some(named) = rest.strip_prefix('{') {
                    return named.split([',', '}']).any(|n| n.trim() == "options");
                }
                ["const", "let", "var"].iter().find_map(|kw| rest.strip_prefix(kw)).map(str::trim_start)
            }
            // Module level only: an indented `options =` belongs to a function or class.
            Language::Python => Some(line),
        };
        rest.and_then(|r| r.strip_prefix("options")).is_some_and(|r| {
            matches!(r.trim_start().chars().next(), Some('=' | ':')) && !r.trim_start().starts_with("==")
        })
    };
    let line = text.lines().position(sets_options)? + 1;
    Some(format!("{name}:{line}"))
}

/// The string literals of every call of `python` (`declare_metrics(`) or `javascript` in the
/// script's files of its language.
fn literal_calls(script: &Script, python: &str, javascript: &str) -> Result<Vec<String>, ScriptError> {
    let (call, extensions): (&str, &[&str]) = match script.language {
        Language::Python => (python, &[".py"]),
        Language::JavaScript => (javascript, &[".js", ".mjs"]),
    };
    let mut found = Vec::new();
    for (path, bytes) in &script.files {
        if !extensions.iter().any(|e| path.ends_with(e)) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(bytes) else { continue };
        // The line of a call, counted on from the last one: counting from the start at every
        // call made a 1 MiB script of calls take 19 s.
        let (mut counted_to, mut line) = (0, 1);
        for (at, _) in text.match_indices(call) {
            // `def declare_metrics(` (the SDK's own definition) or `x.my_declare_metrics(` are not calls.
            let before = text[..at].trim_end_matches([' ', '\t']);
            if before.ends_with("def")
                || before.ends_with("function")
                || text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            line += text.as_bytes()[counted_to..at].iter().filter(|&&b| b == b'\n').count();
            counted_to = at;
            let args = literals(&text[at + call.len()..]).ok_or_else(|| {
                ScriptError::Malformed(format!(
                    "{path}:{line}: {}…) takes string literals (loadhost reads them without running the script)",
                    call
                ))
            })?;
            found.extend(args);
        }
    }
    Ok(found)
}

/// The string literals separated by commas up to the closing parenthesis; `None` when something
/// else is there.
fn literals(mut rest: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.starts_with(')') {
            return Some(out);
        }
        let quote = rest.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
        let body = &rest[1..];
        let mut value = String::new();
        let mut chars = body.char_indices();
        let end = loop {
            match chars.next()? {
                (i, c) if c == quote => break i,
                (_, '\\') => value.push(chars.next()?.1),
                (_, '\n') => return None,
                (_, c) => value.push(c),
            }
        };
        out.push(value.trim().to_owned());
        rest = body[end + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn leb(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        out.push(if n == 0 { byte } else { byte | 0x80 });
        if n == 0 {
            return out;
        }
    }
}

/// A script component's runner bytes and script; `None` for any other component.
pub fn split(bytes: &[u8]) -> Result<Option<(&[u8], Script)>, ScriptError> {
    let mut found = None;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|err| ScriptError::Malformed(err.to_string()))?;
        // The script's section is the component's last: one anywhere else (inside a nested
        // module, say) is not loadhost's.
        if let wasmparser::Payload::CustomSection(reader) = payload
            && reader.name() == SECTION
            && reader.data_offset() + reader.data().len() == bytes.len()
        {
            found = Some(reader.data().to_vec());
        }
    }
    let Some(data) = found else { return Ok(None) };
    let (runner_bytes, script) = read_payload(&data)?;
    let runner = bytes.get(..runner_bytes).ok_or_else(|| ScriptError::Malformed("runner-bytes past the end".into()))?;
    Ok(Some((runner, script)))
}

/// The section's payload: the runner's length and the script.
fn read_payload(data: &[u8]) -> Result<(usize, Script), ScriptError> {
    let bad = |why: &str| ScriptError::Malformed(why.to_owned());
    let mut rest = data;
    let mut line = || -> Result<String, ScriptError> {
        let end = rest.iter().position(|&b| b == b'\n').ok_or_else(|| bad("a line without its end"))?;
        let text = std::str::from_utf8(&rest[..end]).map_err(|_| bad("a line that is not UTF-8"))?.to_owned();
        rest = &rest[end + 1..];
        Ok(text)
    };
    if line()? != "loadhost-script 1" {
        return Err(bad("not version 1 (a newer loadhost made it?)"));
    }
    let mut value = |key: &str| -> Result<String, ScriptError> {
        let text = line()?;
        text.strip_prefix(key)
            .and_then(|v| v.strip_prefix(' '))
            .map(str::to_owned)
            .ok_or_else(|| ScriptError::Malformed(format!("expected `{key} …`, found `{text}`")))
    };
    let language = Language::parse(&value("language")?).ok_or_else(|| bad("an unknown language"))?;
    let entry = value("entry")?;
    let runner_bytes = value("runner-bytes")?.parse().map_err(|_| bad("runner-bytes is not a number"))?;
    let mut files = Vec::new();
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| b == b'\n').ok_or_else(|| bad("a file line without its end"))?;
        let header = std::str::from_utf8(&rest[..end]).map_err(|_| bad("a file line that is not UTF-8"))?;
        let (path, len) = header
            .strip_prefix("file ")
            .and_then(|h| h.rsplit_once(' '))
            .ok_or_else(|| ScriptError::Malformed(format!("expected `file PATH LENGTH`, found `{header}`")))?;
        let len: usize = len.parse().map_err(|_| bad("a file length that is not a number"))?;
        check_path(path)?;
        rest = &rest[end + 1..];
        let bytes = rest.get(..len).ok_or_else(|| bad("a file cut short"))?;
        files.push((path.to_owned(), bytes.to_vec()));
        rest = &rest[len..];
        if files.len() > MAX_FILES {
            return Err(bad("too many files"));
        }
    }
    check_path(&entry)?;
    if !files.iter().any(|(p, _)| *p == entry) {
        return Err(ScriptError::Malformed(format!("its entry {entry} is not among its files")));
    }
    Ok((runner_bytes, Script { language, entry, files }))
}

/// A path read back from a section stays inside the folder it is written to.
fn check_path(path: &str) -> Result<(), ScriptError> {
    let fine = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains(['\\', '\0'])
        && path.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
    if fine { Ok(()) } else { Err(ScriptError::Malformed(format!("a file path that leaves its folder: {path:?}"))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k6_metrics_a_script_makes_are_declared_once_each() {
        let script = Script {
            language: Language::JavaScript,
            entry: "s.js".into(),
            files: vec![
                (
                    "lib.js".into(),
                    b"export const t = new Trend('page_time', true);\nexport const g = new Gauge(`${x}_g`);\n".to_vec(),
                ),
                (
                    "s.js".into(),
                    b"const e = new Rate(\"errors\");\nconst c = new Counter('pages');\nnew Trend('page_time');\n\
                      declareMetrics('orders:counter');\n"
                        .to_vec(),
                ),
            ],
        };
        let all = declarations(&script).expect("read");
        assert_eq!(all, ["orders:counter", "page_time:trend", "errors:rate", "pages:counter"]);
    }

    /// The smallest component there is, as a runner stand-in.
    fn runner() -> Vec<u8> {
        wat::parse_str("(component)").unwrap()
    }

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("journey.py"), "import helpers\n").unwrap();
        std::fs::create_dir_all(dir.path().join("helpers")).unwrap();
        std::fs::write(dir.path().join("helpers/__init__.py"), "X = 1\n").unwrap();
        std::fs::create_dir_all(dir.path().join("__pycache__")).unwrap();
        std::fs::write(dir.path().join("__pycache__/journey.cpython-312.pyc"), "junk").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]").unwrap();
        std::fs::write(dir.path().join("built.wasm"), "\0asm").unwrap();
        dir
    }

    fn script(language: Language, entry: &str, text: &str) -> Script {
        Script { language, entry: entry.into(), files: vec![(entry.into(), text.as_bytes().to_vec())] }
    }

    #[test]
    fn k6_options_in_the_entry_file_are_found_with_their_line() {
        let js = |text: &str| k6_options_in(Language::JavaScript, "app.js", text);
        assert_eq!(
            js("import http from 'k6/http';\nexport const options = { vus: 10 };\n").as_deref(),
            Some("app.js:2")
        );
        assert_eq!(js("export let options={};").as_deref(), Some("app.js:1"));
        assert_eq!(js("const options = {};\nexport { options, other };").as_deref(), Some("app.js:2"));
        assert_eq!(js("export const optionsFor = 1;\nconst options = {};\n"), None);
        let py = |text: &str| k6_options_in(Language::Python, "app.py", text);
        assert_eq!(py("import x\noptions = {'vus': 10}\n").as_deref(), Some("app.py:2"));
        assert_eq!(py("options: dict = {}\n").as_deref(), Some("app.py:1"));
        assert_eq!(py("def f():\n    options = 1\nif options == 2: pass\n"), None);
    }

    #[test]
    fn a_declarations_line_is_counted_on_from_the_last_call() {
        // 2 MiB of calls, each on its own line: counting lines from the start at every call made
        // this quadratic (a 1 MiB script took 19 s); the line of the last one is still right.
        let mut text = "declare_metrics('a counter')\n".repeat(70_000);
        text.push_str("declare_metrics(oops)\n");
        let script = script(Language::Python, "app.py", &text);
        let err = declarations(&script).expect_err("not a literal").to_string();
        assert!(err.contains("app.py:70001:"), "{err}");
    }

    #[test]
    fn a_script_is_its_folder_without_caches_hidden_files_or_components() {
        let dir = folder();
        let script = collect(&dir.path().join("journey.py")).unwrap();
        assert_eq!(script.language, Language::Python);
        assert_eq!(script.entry, "journey.py");
        let paths: Vec<&str> = script.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["helpers/__init__.py", "journey.py"]);
    }

    #[test]
    fn the_sdk_copy_and_wit_of_a_new_project_are_left_out_but_a_users_lib_is_not() {
        let dir = folder();
        for (path, text) in [
            ("lib/loadhost_entry.py", "import app\n"),
            ("lib/loadhost/metrics.py", "def declare_metrics(*d):\n    call = f'declare_metrics({d!r})'\n"),
            ("wit/plugin.wit", "package loadhost:plugin;\n"),
            ("helpers/wit/notes.txt", "kept: not at the top\n"),
        ] {
            std::fs::create_dir_all(dir.path().join(path).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(path), text).unwrap();
        }
        let script = collect(&dir.path().join("journey.py")).unwrap();
        let paths: Vec<&str> = script.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["helpers/__init__.py", "helpers/wit/notes.txt", "journey.py"]);
        assert!(declarations(&script).unwrap().is_empty());
        // A lib/ of the user's own (no SDK in it) goes with the script.
        std::fs::remove_file(dir.path().join("lib/loadhost_entry.py")).unwrap();
        let script = collect(&dir.path().join("journey.py")).unwrap();
        assert!(script.files.iter().any(|(p, _)| p == "lib/loadhost/metrics.py"));
    }

    #[test]
    fn a_bundle_keeps_the_runner_whole_and_reads_back_the_same_script() {
        let dir = folder();
        let script = collect(&dir.path().join("journey.py")).unwrap();
        let runner = runner();
        let bundled = bundle(&runner, &script).unwrap();
        assert_eq!(bundle(&runner, &script).unwrap(), bundled, "the same inputs make the same bytes");
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(&bundled).unwrap();
        let (back, read) = split(&bundled).unwrap().unwrap();
        assert_eq!(back, &runner[..]);
        assert_eq!(read, script);
        assert!(split(&runner).unwrap().is_none(), "a plain component is no script");
    }

    #[test]
    fn a_crafted_section_cannot_name_a_path_outside_its_folder() {
        let mut script =
            Script { language: Language::Python, entry: "a.py".into(), files: vec![("a.py".into(), vec![])] };
        for evil in ["../x", "/etc/x", "a/../../x", "a\\b", ""] {
            script.files = vec![("a.py".into(), vec![]), (evil.into(), b"x".to_vec())];
            let err = split(&bundle(&runner(), &script).unwrap()).unwrap_err().to_string();
            assert!(err.contains("leaves its folder"), "{evil:?}: {err}");
        }
    }

    #[test]
    fn declared_metrics_are_read_from_the_sources_literals() {
        let file = |p: &str, t: &str| (p.to_owned(), t.as_bytes().to_vec());
        let mut script = Script {
            language: Language::Python,
            entry: "a.py".into(),
            files: vec![
                file(
                    "a.py",
                    "from loadhost import declare_metrics\ndeclare_metrics(\n  \"orders{tier}:counter\",\n  'status is 200:check',\n)\n",
                ),
                file("lib/x.py", "def declare_metrics(*decls):\n    pass\n"),
                file("notes.txt", "declare_metrics(\"ignored:counter\")"),
            ],
        };
        assert_eq!(declarations(&script).unwrap(), ["orders{tier}:counter", "status is 200:check"]);
        let bundled = bundle(&runner(), &script).unwrap();
        let read = crate::declared::declared_metrics(&bundled).unwrap();
        assert_eq!(
            read.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["orders{tier}:counter", "status is 200:rate"]
        );
        script.files[0] = file("a.py", "declare_metrics(NAME)\n");
        let err = declarations(&script).unwrap_err().to_string();
        assert!(err.contains("a.py:1: declare_metrics(…) takes string literals"), "{err}");
    }

    #[test]
    fn declared_options_are_read_from_the_sources_literals_into_their_section() {
        let file = |p: &str, t: &str| (p.to_owned(), t.as_bytes().to_vec());
        let mut script = Script {
            language: Language::JavaScript,
            entry: "journey.js".into(),
            files: vec![
                file(
                    "journey.js",
                    "import { declareOptions } from 'loadhost';\ndeclareOptions(\n  'TARGET_URL:url=http://127.0.0.1:8080/ \"the page to GET\"',\n  \"USERS:int! 'how many users'\",\n);\n",
                ),
                file("lib/sdk.js", "export function declareOptions(...declarations) {}\n"),
                file("app.py", "declare_options('IGNORED:int')\n"),
            ],
        };
        assert_eq!(
            option_declarations(&script).unwrap(),
            ["TARGET_URL:url=http://127.0.0.1:8080/ \"the page to GET\"", "USERS:int! 'how many users'"]
        );
        let bundled = bundle(&runner(), &script).unwrap();
        let read = crate::options::declared_options(&bundled).unwrap();
        assert_eq!(
            read.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["TARGET_URL:url=http://127.0.0.1:8080/ \"the page to GET\"", "USERS:int! \"how many users\""]
        );
        assert!(crate::declared::declared_metrics(&bundled).unwrap().is_empty(), "no metrics section of options");
        assert_eq!(split(&bundled).unwrap().unwrap().1, script, "the script section stays last");
        script.files[0] = file("journey.js", "declareOptions(`USERS:int`)\n");
        let err = option_declarations(&script).unwrap_err().to_string();
        assert!(err.contains("journey.js:1: declareOptions(…) takes string literals"), "{err}");
    }

    #[test]
    fn a_folder_too_big_to_grant_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_FILES {
            std::fs::write(dir.path().join(format!("f{i}.py")), "").unwrap();
        }
        let err = collect(&dir.path().join("f0.py")).unwrap_err().to_string();
        assert!(err.contains("more than 1000 files") && err.contains("a folder of its own"), "{err}");
    }
}
