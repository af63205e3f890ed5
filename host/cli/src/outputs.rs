//! Output files as `run` and `merge` handle them: every file asked for is created before anything
//! is written (a path that cannot be written is a usage error that leaves no other file behind),
//! and a write that fails later is reported by the flag the user typed.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::exit::Failure;
use crate::observe::FileOutput;

/// An output file, created, and where it is.
pub(crate) type Created = Option<(PathBuf, File)>;

/// A file flag as the user typed it: `--csv rows.csv`, `--out json=run.jsonl`.
pub(crate) fn flag_path(flag: &str, path: &Path) -> String {
    let gap = if flag.ends_with('=') { "" } else { " " };
    format!("--{flag}{gap}{}", path.display())
}

/// Create each `(flag, path)` asked for, in order; when one cannot be created, remove the ones
/// already made and fail with the flag and path (exit 2).
pub(crate) fn create_all<const N: usize>(wanted: [(&str, Option<&Path>); N]) -> Result<[Created; N], Failure> {
    let mut created: [Created; N] = std::array::from_fn(|_| None);
    for (i, (flag, path)) in wanted.into_iter().enumerate() {
        let Some(path) = path else { continue };
        match File::create(path) {
            Ok(file) => created[i] = Some((path.to_owned(), file)),
            Err(err) => {
                remove(created.iter().flatten().map(|(p, _)| p.as_path()));
                return Err(Failure::usage(
                    anyhow::Error::new(err).context(format!("{}: cannot write the file", flag_path(flag, path))),
                ));
            }
        }
    }
    Ok(created)
}

/// Remove files made for a run that never started.
pub(crate) fn remove<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}

/// A streaming output over a created file: its writer, made by `make` (which writes a header).
pub(crate) fn streaming<W>(
    flag: &str,
    created: Created,
    make: impl FnOnce(File) -> std::io::Result<W>,
) -> Result<Option<FileOutput<W>>, Failure> {
    let Some((path, file)) = created else { return Ok(None) };
    let writer = make(file)
        .with_context(|| format!("{}: cannot write the file", flag_path(flag, &path)))
        .map_err(Failure::usage)?;
    Ok(Some(FileOutput { writer, path, error: None }))
}

/// Log a write that failed once the measuring was done (the other outputs are still written).
pub(crate) fn report_write_error(flag: &str, path: &Path, error: Option<std::io::Error>) {
    if let Some(err) = error {
        tracing::error!("{}: writing failed: {err}", flag_path(flag, path));
    }
}

/// Write the whole file and make it durable.
pub(crate) fn write_all(mut file: File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.sync_all()
}

/// The CI reports of a finished run or merge: `--junit` (a check fails under `check_rate`) and
/// `--markdown`; with `$GITHUB_STEP_SUMMARY` set, the Markdown is also appended to that file (a
/// GitHub Actions job summary), said once on stderr. A write that fails is reported, not fatal:
/// the measurements are already written.
pub(crate) fn write_ci_reports(
    summary: &loadhost_output::summary::Summary,
    junit: Created,
    markdown: Created,
    check_rate: f64,
) {
    if let Some((path, file)) = junit {
        let written =
            loadhost_output::junit::to_string(summary, check_rate).and_then(|xml| write_all(file, xml.as_bytes()));
        report_write_error("junit", &path, written.err());
    }
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()).map(PathBuf::from);
    if markdown.is_none() && step_summary.is_none() {
        return;
    }
    let text = loadhost_output::markdown::render(summary);
    if let Some((path, file)) = markdown {
        report_write_error("markdown", &path, write_all(file, text.as_bytes()).err());
    }
    if let Some(path) = step_summary {
        let appended = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut file| file.write_all(format!("{text}\n").as_bytes()));
        match appended {
            Ok(()) => tracing::info!("appended the Markdown summary to $GITHUB_STEP_SUMMARY ({})", path.display()),
            Err(err) => {
                tracing::error!("$GITHUB_STEP_SUMMARY {}: appending the Markdown summary failed: {err}", path.display())
            }
        }
    }
}
