//! Output files as `run` and `merge` handle them: every file asked for is created before anything
//! is written (a path that cannot be written is a usage error that leaves no other file behind),
//! and a write that fails later is reported by the flag the user typed and never stops the others.
//!
//! Two kinds, because a full disk must never leave a file that looks whole:
//! - **end-of-run files** (summary JSON, HTML, JUnit, Markdown; all of `merge`'s and `compare`'s) are written whole
//!   or not at all ([`write_whole`]): into a temporary file beside the output, synced, then renamed
//!   over it. One that fails leaves no file at all.
//! - **streaming files** (CSV, JSON lines, results, `--plugin-output file=`) are written as the
//!   run goes, so what they hold must survive a run that dies ([`FileOutput`]). One that fails
//!   stops there, cut back to its last whole line: it keeps what was written before, and has no
//!   end (the CSV's `# end` footer, the JSON lines' `end` line, the results file's end line), which
//!   is how every reader tells a cut-off file.
//!
//! Either way the failure is said as it happens, by flag and path, every other output is still written, the
//! terminal summary is still printed, and the exit code is [`crate::exit::OUTPUT_FAILED`].

use std::fs::File;
use std::io::{Seek as _, Write};
use std::path::{Path, PathBuf};

use crate::exit::Failure;

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
    flag: &'static str,
    created: Created,
    make: impl FnOnce(File) -> std::io::Result<W>,
) -> Result<Option<FileOutput<W>>, Failure> {
    let Some((path, file)) = created else { return Ok(None) };
    let cannot = |err: std::io::Error| {
        Failure::usage(anyhow::Error::new(err).context(format!("{}: cannot write the file", flag_path(flag, &path))))
    };
    // The same open file (and offset) as the writer's, to cut it back when a write fails.
    let handle = file.try_clone().map_err(cannot)?;
    let writer = make(file).map_err(cannot)?;
    let mut file = Streamed { flag, path, handle, whole: 0, error: None };
    file.mark();
    Ok(Some(FileOutput { writer, file }))
}

/// A file written as the run goes, and the first error writing it met. The error is said when it
/// happens and noted for the exit code at the end, so a full disk never stops the measuring.
/// After an error nothing more is written, and the file is cut back to the end of the last write
/// that succeeded: every write hands the file whole lines (each is flushed), so it never ends
/// inside one.
pub struct FileOutput<W> {
    /// The writer.
    pub writer: W,
    /// Where it writes, and how far it got.
    pub file: Streamed,
}

/// A streaming file's place and state.
pub struct Streamed {
    /// Its flag (`csv`, `out json=`), for messages.
    pub flag: &'static str,
    /// Where it writes, for messages.
    pub path: PathBuf,
    handle: File,
    /// Where the last write that succeeded ended.
    whole: u64,
    /// The first write error.
    pub error: Option<std::io::Error>,
}

impl<W> FileOutput<W> {
    /// A streaming output over `handle`'s open file (a clone of the one `writer` writes).
    #[cfg(test)]
    pub(crate) fn new(writer: W, flag: &'static str, path: PathBuf, handle: File) -> Self {
        Self { writer, file: Streamed { flag, path, handle, whole: 0, error: None } }
    }

    /// Write whole lines with `write` (which must flush them), unless a write already failed.
    pub(crate) fn write(&mut self, write: impl FnOnce(&mut W) -> std::io::Result<()>) {
        if self.file.error.is_some() {
            return;
        }
        match write(&mut self.writer) {
            Ok(()) => self.file.mark(),
            Err(err) => self.file.fail(err),
        }
    }

    /// Write the end with `finish` (which flushes); note in `failed` a file that could not be
    /// written whole.
    pub(crate) fn finish(self, finish: impl FnOnce(W) -> std::io::Result<()>, failed: &mut Failed) {
        let FileOutput { writer, mut file } = self;
        if file.error.is_none()
            && let Err(err) = finish(writer)
        {
            file.fail(err);
        }
        if file.error.is_some() {
            failed.0.push(flag_path(file.flag, &file.path));
        }
    }
}

impl Streamed {
    fn mark(&mut self) {
        if let Ok(at) = self.handle.stream_position() {
            self.whole = at;
        }
    }

    /// Keep the first error, say it, and cut what a failed write left of a line.
    fn fail(&mut self, err: std::io::Error) {
        let _ = self.handle.set_len(self.whole);
        say_failed(&flag_path(self.flag, &self.path), &err, true);
        self.error = Some(err);
    }
}

/// Say (once) that an output failed, and what is left of it.
fn say_failed(named: &str, err: &std::io::Error, streamed: bool) {
    if streamed {
        tracing::error!(
            "{named}: writing failed: {err}; the file keeps the whole lines written before, without its end"
        );
    } else {
        tracing::error!("{named}: writing failed: {err}; no file is left");
    }
}

/// The outputs that could not be written, each said once as it failed.
#[derive(Debug, Default)]
pub(crate) struct Failed(Vec<String>);

impl Failed {
    /// Note (and say) an output whose writing failed with `error`; nothing when it is `None`.
    /// `streamed`: it was written as the run went, and keeps what was written before.
    pub(crate) fn note(&mut self, flag: &str, path: &Path, error: Option<std::io::Error>, streamed: bool) {
        let Some(err) = error else { return };
        let named = flag_path(flag, path);
        say_failed(&named, &err, streamed);
        self.0.push(named);
    }

    /// Whether the output of `flag` failed.
    pub(crate) fn has(&self, flag: &str, path: &Path) -> bool {
        self.0.contains(&flag_path(flag, path))
    }

    /// Exit [`crate::exit::OUTPUT_FAILED`] naming every output that failed, or nothing.
    pub(crate) fn check(self) -> Result<(), Failure> {
        if self.0.is_empty() {
            return Ok(());
        }
        Err(Failure::output(anyhow::anyhow!(
            "{} could not be written: {} (every other output is written)",
            if self.0.len() == 1 { "an output" } else { "outputs" },
            self.0.join(", ")
        )))
    }
}

/// Write an end-of-run output whole, or leave no file: `write` fills a temporary file beside
/// `path`, which is synced (a full disk may only say so then) and renamed over the file created
/// before the run; through a symlink, over the file it names. When anything fails, the temporary
/// file and the one created before the run are both removed. A path that is not a regular file
/// (`/dev/stdout`, a pipe) is written in place, and so is a file in a folder where no temporary
/// file can be made (one the user may write but not add to): removed if that fails.
pub(crate) fn write_whole(
    path: &Path,
    created: File,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let regular = created.metadata().is_ok_and(|m| m.is_file());
    let linked = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if linked { std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()) } else { path.to_owned() };
    let beside = if regular { temp_beside(&target, &created).ok() } else { None };
    let written = match beside {
        Some(temp) => fill_and_rename(temp, &target, write),
        None => {
            let mut out = std::io::BufWriter::new(&created);
            write(&mut out).and_then(|()| out.flush()).and_then(|()| if regular { created.sync_all() } else { Ok(()) })
        }
    };
    if written.is_err() && regular {
        let _ = std::fs::remove_file(&target);
    }
    written
}

/// A temporary file beside `target`, with the mode `created` has (the umask's, or an existing
/// file's), not the temporary one's. Dropped, it is removed.
fn temp_beside(target: &Path, created: &File) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir)?;
    temp.as_file().set_permissions(created.metadata()?.permissions())?;
    Ok(temp)
}

fn fill_and_rename(
    temp: tempfile::NamedTempFile,
    target: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    // Through the plain file, whose errors do not name the temporary path.
    let mut out = std::io::BufWriter::new(temp.as_file());
    write(&mut out)?;
    out.flush()?;
    drop(out);
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|err| err.error)?;
    Ok(())
}

/// The CI reports of a finished run or merge: `--junit` (a check fails under `check_rate`) and
/// `--markdown`; with `$GITHUB_STEP_SUMMARY` set, the Markdown is also appended to that file (a
/// GitHub Actions job summary), said once on stderr. A write that fails is noted in `failed`:
/// the measurements are already written.
pub(crate) fn write_ci_reports(
    summary: &loadhost_output::summary::Summary,
    junit: Created,
    markdown: Created,
    check_rate: f64,
    failed: &mut Failed,
) {
    if let Some((path, file)) = junit {
        let written = loadhost_output::junit::to_string(summary, check_rate)
            .and_then(|xml| write_whole(&path, file, |out| out.write_all(xml.as_bytes())));
        failed.note("junit", &path, written.err(), false);
    }
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()).map(PathBuf::from);
    if markdown.is_none() && step_summary.is_none() {
        return;
    }
    let text = loadhost_output::markdown::render(summary);
    if let Some((path, file)) = markdown {
        let written = write_whole(&path, file, |out| out.write_all(text.as_bytes()));
        failed.note("markdown", &path, written.err(), false);
    }
    if step_summary.is_some() {
        append_step_summary(&text, "the Markdown summary", failed);
    }
}

/// Append `text` (`what` it is, for messages) to `$GITHUB_STEP_SUMMARY` when that is set: a
/// GitHub Actions job's summary page. Said once on stderr; a failure is noted in `failed`.
pub(crate) fn append_step_summary(text: &str, what: &str, failed: &mut Failed) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()).map(PathBuf::from) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{text}\n").as_bytes()));
    match appended {
        Ok(()) => tracing::info!("appended {what} to $GITHUB_STEP_SUMMARY ({})", path.display()),
        Err(err) => {
            tracing::error!("$GITHUB_STEP_SUMMARY {}: appending {what} failed: {err}", path.display());
            failed.0.push(format!("$GITHUB_STEP_SUMMARY {}", path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(path: &Path) -> File {
        File::create(path).unwrap()
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn an_end_of_run_file_is_whole_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_whole(&path, created(&path), |out| out.write_all(b"{}\n")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        // A write that fails half-way leaves neither the file nor the temporary one.
        let failed = write_whole(&path, created(&path), |out| {
            out.write_all(b"{\"half\":")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    }

    #[test]
    fn through_a_symlink_the_file_it_names_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("latest.html");
        let link = dir.path().join("report.html");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_whole(&link, created(&link), |out| out.write_all(b"<html>")).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read(&target).unwrap(), b"<html>");
    }

    #[test]
    fn a_device_is_written_in_place_and_never_removed() {
        // /dev/full: every write fails with ENOSPC, as a full disk's does.
        let full = Path::new("/dev/full");
        let err = write_whole(full, std::fs::OpenOptions::new().write(true).open(full).unwrap(), |out| {
            out.write_all(&[b'x'; 100_000])
        })
        .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        assert!(full.exists());
    }
}
