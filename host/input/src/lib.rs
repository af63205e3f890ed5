//! Reading what comes from outside: the start of a peer's error body ([`Prefix`], [`one_line`]),
//! and the files a user names — a config, a plugin, a data feed, an `--env-file`, a token, a
//! certificate, a results file, a summary JSON, a request body or a targets file — through one
//! gate, so none of them can make loadhost hang or read without end:
//!
//! - **regular files only** (after symlinks): a directory, a device (`/dev/zero`, `/dev/stdin`
//!   when it is a terminal), a FIFO or a socket is refused with what it is. A FIFO is opened
//!   without waiting for a writer, so naming one never hangs.
//! - **never more than a stated size** ([`Cap`]): a file larger than its kind may be is refused
//!   before it is read (by its size), and a read stops there even if the file grows meanwhile.
//!
//! Errors are [`std::io::Error`]s whose text says what is wrong (`it is a character device, not a
//! regular file`, `it is 4.0 GiB, more than a config file may be (4 MiB)`), for callers to put
//! after the flag and the path as they already do for a file that cannot be read.

#![deny(missing_docs)]

mod peer;

pub use peer::{Prefix, one_line};

use std::fs::{File, Metadata};
use std::io::{self, BufRead, Read};
use std::path::Path;

/// How large a kind of file may be, and what to call it in an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The most bytes.
    pub bytes: u64,
    /// The kind of file, as a sentence names it ("a config file").
    pub what: &'static str,
    /// How to allow more, when there is a way ("--max-plugin-size raises it").
    pub raise: Option<&'static str>,
}

impl Cap {
    /// `what` may be at most `bytes` long.
    pub const fn new(bytes: u64, what: &'static str) -> Self {
        Self { bytes, what, raise: None }
    }

    /// The same kind, at most `bytes` (a limit the user set), and how they set it.
    pub const fn raised(self, bytes: u64, raise: &'static str) -> Self {
        Self { bytes, raise: Some(raise), ..self }
    }

    fn too_large(&self, size: u64) -> io::Error {
        let raise = self.raise.map(|r| format!("; {r}")).unwrap_or_default();
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("it is {}, more than {} may be ({}{raise})", bytes(size), self.what, bytes(self.bytes)),
        )
    }
}

/// A TOML config (`-c`, a bundle's TOML).
pub const CONFIG: Cap = Cap::new(4 << 20, "a config file");
/// A plugin (a component or a core module), unless `--max-plugin-size` says otherwise.
pub const PLUGIN: Cap = Cap::new(256 << 20, "a plugin");
/// A data feed (`--data`): every row is held in memory for the run.
pub const DATA: Cap = Cap::new(1 << 30, "a data file");
/// A small text file: an `--env-file`, a token file, a registry credentials file.
pub const TEXT: Cap = Cap::new(1 << 20, "such a file");
/// A PEM file: a CA bundle, a client certificate or key.
pub const PEM: Cap = Cap::new(16 << 20, "a PEM file");
/// A summary JSON read back (`loadhost compare`).
pub const SUMMARY: Cap = Cap::new(256 << 20, "a summary JSON");
/// A targets file (`loadhost http --targets`).
pub const TARGETS: Cap = Cap::new(64 << 20, "a targets file");
/// One line of a results file (which is read line by line, so the file itself has no cap).
pub const RESULTS_LINE: Cap = Cap::new(256 << 20, "a results file's line");

/// Open `path` for reading: it must be a regular file (after symlinks). A FIFO is opened without
/// waiting for a writer, then refused.
pub fn open(path: &Path) -> io::Result<File> {
    // Told before it is opened: opening a FIFO for reading would wait for a writer.
    regular(&std::fs::metadata(path)?)?;
    let file = open_now(path)?;
    // What was opened, in case the path changed in between.
    regular(&file.metadata()?)?;
    Ok(file)
}

#[cfg(unix)]
fn open_now(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // O_NONBLOCK only changes how a FIFO or a device opens; reading a regular file is the same.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_now(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Open `path` (as [`open`]) for a reader that fails once more than `cap` bytes were read: for
/// parsers that stream (CSV, PEM). A file larger than `cap` is refused at once.
pub fn reader(path: &Path, cap: Cap) -> io::Result<Capped<File>> {
    let file = open(path)?;
    let size = file.metadata()?.len();
    if size > cap.bytes {
        return Err(cap.too_large(size));
    }
    Ok(Capped::new(file, cap))
}

/// Read all of `path` (as [`open`]), at most `cap` bytes.
pub fn read(path: &Path, cap: Cap) -> io::Result<Vec<u8>> {
    let mut reader = reader(path, cap)?;
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Read all of `path` (as [`read`]) as UTF-8 text.
pub fn read_to_string(path: &Path, cap: Cap) -> io::Result<String> {
    String::from_utf8(read(path, cap)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Read all of `reader` (standard input, say), at most `cap` bytes.
pub fn read_all(reader: impl Read, cap: Cap) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    Capped::new(reader, cap).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Read one line (up to and with its `\n`) into `line`, which is cleared first: at most `cap`
/// bytes, so a file of one endless line (`/dev/zero` renamed, a damaged file) is refused rather
/// than held whole. The bytes read; 0 at the end.
pub fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: Cap) -> io::Result<usize> {
    line.clear();
    let n = reader.take(cap.bytes.saturating_add(1)).read_until(b'\n', line)?;
    if n as u64 > cap.bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is at most {}; this one is longer", cap.what, bytes(cap.bytes)),
        ));
    }
    Ok(n)
}

/// A reader that fails once more than its cap was read (a file that grew while it was read).
#[derive(Debug)]
pub struct Capped<R> {
    inner: R,
    cap: Cap,
    read: u64,
}

impl<R: Read> Capped<R> {
    /// `inner`, at most `cap` bytes of it.
    pub fn new(inner: R, cap: Cap) -> Self {
        Self { inner, cap, read: 0 }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the cap is read, so a file of exactly the cap is not taken for a larger one.
        let room = usize::try_from(self.cap.bytes.saturating_add(1).saturating_sub(self.read)).unwrap_or(usize::MAX);
        let len = buf.len().min(room);
        let n = self.inner.read(&mut buf[..len])?;
        self.read += n as u64;
        if self.read > self.cap.bytes {
            return Err(self.cap.too_large(self.read));
        }
        Ok(n)
    }
}

/// A regular file, or what it is instead.
fn regular(meta: &Metadata) -> io::Result<()> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() { "a directory" } else { special(&kind) };
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}, not a regular file")))
}

#[cfg(unix)]
fn special(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO (a pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn special(_: &std::fs::FileType) -> &'static str {
    "not a file"
}

/// A size for people: `512 bytes`, `1.5 KiB`, `4.0 GiB` (caps are whole: `4 MiB`).
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let (mut value, mut unit) = (n as f64 / 1024.0, 0);
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 { format!("{value:.0} {}", UNITS[unit]) } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = read(dir.path(), CONFIG).unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
        let err = read(Path::new("/dev/zero"), CONFIG).unwrap_err();
        assert_eq!(err.to_string(), "it is a character device, not a regular file");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path and a mode; no memory is shared.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert_eq!(read(&fifo, CONFIG).unwrap_err().to_string(), "it is a FIFO (a pipe), not a regular file");
        // A symlink to a regular file is that file.
        let file = dir.path().join("run.toml");
        std::fs::write(&file, "rate = 5\n").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_to_string(&link, CONFIG).unwrap(), "rate = 5\n");
        assert_eq!(read(&dir.path().join("nope"), CONFIG).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_file_past_its_cap_is_refused_by_its_size_and_while_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.wasm");
        let cap = Cap::new(1024, "a test file");
        std::fs::write(&path, vec![7u8; 1024]).unwrap();
        assert_eq!(read(&path, cap).unwrap().len(), 1024, "exactly the cap is read");
        std::fs::write(&path, vec![7u8; 1025]).unwrap();
        let err = read(&path, cap).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(err.to_string(), "it is 1.0 KiB, more than a test file may be (1 KiB)");
        let raised = PLUGIN.raised(1000, "--max-plugin-size raises it");
        let err = read(&path, raised).unwrap_err().to_string();
        assert_eq!(err, "it is 1.0 KiB, more than a plugin may be (1000 bytes; --max-plugin-size raises it)");
        // A stream past its cap (a file that grows, standard input) fails while it is read.
        let err = read_all(std::io::repeat(0).take(5000), cap).unwrap_err();
        assert!(err.to_string().starts_with("it is 1.0 KiB, more than a test file may be"), "{err}");
        assert_eq!(read_all(&b"abc"[..], cap).unwrap(), b"abc");
        assert_eq!(bytes(4 << 30), "4 GiB");
        let mut line = Vec::new();
        let mut text = std::io::BufReader::new(&b"ab\ncdefgh\n"[..]);
        assert_eq!(read_line(&mut text, &mut line, Cap::new(4, "a test line")).unwrap(), 3);
        let err = read_line(&mut text, &mut line, Cap::new(4, "a test line")).unwrap_err();
        assert_eq!(err.to_string(), "a test line is at most 4 bytes; this one is longer");
        assert_eq!(bytes(500 * 1000 * 1000), "476.8 MiB");
    }
}
