//! k6's `handleSummary`: once the run's outputs are written, a plugin that exports
//! `summary.handle-summary` (the JavaScript runner, for a k6 script that defines `handleSummary`)
//! gets the run's summary and returns files, which are written here. A script's files stay inside
//! the working directory: an absolute path or one with `..` is refused, naming it (k6 writes
//! anywhere; a script from a stranger must not). What the plugin returns is bounded by its
//! instance's memory (`--max-memory`), and the call by `--lifecycle-timeout`, as `teardown` is.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use loadhost_runtime::WasmWorkerFactory;

use crate::outputs::Failed;

/// The plugin that may handle the summary, and the runtime to call it on.
pub(super) struct Summarizer<'a> {
    pub(super) factory: WasmWorkerFactory,
    pub(super) tokio: &'a tokio::runtime::Runtime,
    /// How long the call may take (the run's `--lifecycle-timeout`).
    pub(super) limit: std::time::Duration,
}

/// What became of the summary.
pub(super) enum Handled {
    /// The plugin has nothing to do with it (or failed): the host prints its own.
    No,
    /// The plugin wrote its files; `stdout` is what it asked to print in place of the host's.
    Yes { stdout: Option<Vec<u8>> },
}

impl Summarizer<'_> {
    /// Hand `summary` (the `--summary-json` text) to the plugin and write what it returns.
    pub(super) fn handle(&self, summary: &[u8], failed: &mut Failed) -> Handled {
        let text = String::from_utf8_lossy(summary);
        // The timer is made inside the runtime it runs on.
        let call = async { tokio::time::timeout(self.limit, self.factory.handle_summary(&text)).await };
        let files = match self.tokio.block_on(call) {
            Ok(Ok(Some(files))) => files,
            Ok(Ok(None)) => return Handled::No,
            Ok(Err(err)) => {
                tracing::error!("handleSummary: {err}; the host's own summary follows");
                return Handled::No;
            }
            Err(_) => {
                tracing::error!(
                    "handleSummary did not return within {:?} (--lifecycle-timeout); the host's own summary follows",
                    self.limit
                );
                return Handled::No;
            }
        };
        let mut stdout = None;
        for (name, contents) in files {
            match name.as_str() {
                "stdout" => stdout = Some(contents),
                "stderr" => {
                    let _ = std::io::stderr().write_all(&contents);
                }
                _ => match inside(&name) {
                    Some(path) => {
                        let written = std::fs::write(&path, &contents);
                        if written.is_ok() {
                            tracing::info!("handleSummary wrote {} ({} bytes)", path.display(), contents.len());
                        }
                        failed.note("handleSummary", &path, written.err(), false);
                    }
                    None => tracing::error!(
                        "handleSummary: '{name}' was not written: a script's files go inside the working \
                         directory (a relative path without `..`)"
                    ),
                },
            }
        }
        Handled::Yes { stdout }
    }
}

/// `name` as a path inside the working directory: relative, without `..`, not empty.
fn inside(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    let plain = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (plain && path.components().any(|c| matches!(c, Component::Normal(_)))).then(|| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::inside;

    #[test]
    fn only_relative_paths_inside_the_working_directory_are_written() {
        for ok in ["summary.json", "./out/summary.html", "reports/junit.xml"] {
            assert!(inside(ok).is_some(), "{ok}");
        }
        for refused in ["/etc/passwd", "../up.json", "a/../../b", "", ".", "/tmp/x.json"] {
            assert_eq!(inside(refused), None, "{refused}");
        }
    }
}
