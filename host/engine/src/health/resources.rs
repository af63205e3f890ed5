//! The process's resources: its open file descriptors against its soft `RLIMIT_NOFILE`, and its
//! resident memory now and at its peak. Both are read through files opened once, when the sampler
//! starts: a process out of descriptors could not open them again just when the figure matters.
//!
//! Since Linux 6.2 the size of `/proc/self/fd` is the number of open descriptors, counted from the
//! descriptor table's bitmap: measured 18 µs for the whole reading at 20,000 open descriptors.
//! Before, its entries are counted, one `getdents` pass: 19 ms at 20,000 (once per interval, so
//! under 2% of a core at that extreme; microseconds at an ordinary run's few dozen).

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::ptr::NonNull;

/// The process's open file descriptors and its resident memory, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// Open file descriptors.
    pub(crate) fds: Option<u64>,
    /// The soft `RLIMIT_NOFILE` (none when unlimited).
    pub(crate) fd_limit: Option<u64>,
    /// Resident memory (`VmRSS`), in bytes.
    pub(crate) rss: Option<u64>,
    /// The peak resident memory so far (`VmHWM`), in bytes.
    pub(crate) rss_peak: Option<u64>,
}

/// The files the figures are read from, kept open.
#[derive(Debug)]
pub(crate) struct Resources {
    fd_dir: Option<Entries>,
    status: Option<File>,
}

impl Resources {
    /// Open `/proc/self/fd` and `/proc/self/status` (a file that cannot be opened: its figures
    /// are absent).
    pub(crate) fn open() -> Self {
        Self { fd_dir: Entries::open(c"/proc/self/fd"), status: File::open("/proc/self/status").ok() }
    }

    /// The figures now.
    pub(crate) fn read(&mut self) -> Reading {
        let status = self.status.as_mut().and_then(|file| {
            // A `/proc` file read again from its start says what it says now.
            file.seek(SeekFrom::Start(0)).ok()?;
            let mut text = String::new();
            file.read_to_string(&mut text).ok()?;
            Some(text)
        });
        let status = status.as_deref().unwrap_or_default();
        Reading {
            fds: self.fd_dir.as_mut().and_then(|dir| dir.size().or_else(|| dir.count())),
            fd_limit: fd_limit(),
            rss: crate::memory::kib_line(status, "VmRSS"),
            rss_peak: crate::memory::kib_line(status, "VmHWM"),
        }
    }
}

/// The soft `RLIMIT_NOFILE`, read each time (`prlimit` may change it under a running process).
fn fd_limit() -> Option<u64> {
    let mut limit = std::mem::MaybeUninit::<libc::rlimit>::zeroed();
    // SAFETY: getrlimit writes a whole rlimit into the pointer it is given, which is valid.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: it returned 0, so it filled the struct (and zeroed memory is a valid rlimit anyway).
    let limit = unsafe { limit.assume_init() };
    Some(limit.rlim_cur).filter(|&soft| soft != libc::RLIM_INFINITY && soft > 0)
}

/// A directory stream kept open, whose entries are counted again from its start each time.
#[derive(Debug)]
pub(crate) struct Entries(NonNull<libc::DIR>);

// SAFETY: the stream is only used through `&mut self` (one thread at a time) and owns its DIR.
unsafe impl Send for Entries {}

impl Entries {
    /// Open the directory `path`.
    pub(crate) fn open(path: &CStr) -> Option<Self> {
        // SAFETY: `path` is a valid C string; opendir returns null or a stream we now own.
        NonNull::new(unsafe { libc::opendir(path.as_ptr()) }).map(Self)
    }

    /// The directory's size, when not 0 (for `/proc/self/fd`, since Linux 6.2, its entries).
    pub(crate) fn size(&self) -> Option<u64> {
        let mut stat = std::mem::MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: the stream is open, so its descriptor is; fstat writes a whole stat into `stat`.
        let rc = unsafe { libc::fstat(libc::dirfd(self.0.as_ptr()), stat.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: it returned 0, so it filled the struct (and zeroed memory is a valid stat anyway).
        let stat = unsafe { stat.assume_init() };
        u64::try_from(stat.st_size).ok().filter(|&size| size > 0)
    }

    /// Its entries now, `.` and `..` aside (for `/proc/self/fd`, the stream's own among them).
    pub(crate) fn count(&mut self) -> Option<u64> {
        let dir = self.0.as_ptr();
        // SAFETY: `dir` is the open stream this owns.
        unsafe { libc::rewinddir(dir) };
        let mut count = 0;
        loop {
            // SAFETY: errno is this thread's; zeroed so a null from readdir tells the end from an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `dir` is open; the entry it returns is valid until the next call on it.
            let entry = unsafe { libc::readdir(dir) };
            if entry.is_null() {
                // SAFETY: as above.
                return (unsafe { *libc::__errno_location() } == 0).then_some(count);
            }
            // SAFETY: readdir's entry holds a NUL-terminated name.
            let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
            if !matches!(name.to_bytes(), b"." | b"..") {
                count += 1;
            }
        }
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        // SAFETY: the stream is open and owned by this value alone.
        unsafe { libc::closedir(self.0.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;

    #[test]
    fn a_kept_directory_counts_its_entries_as_they_are_now() {
        let dir = tempfile::tempdir().unwrap();
        let path = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
        let mut entries = Entries::open(&path).unwrap();
        assert_eq!(entries.count(), Some(0), "`.` and `..` are not counted");
        for i in 0..1000 {
            File::create(dir.path().join(i.to_string())).unwrap();
        }
        assert_eq!(entries.count(), Some(1000), "read again from its start");
        std::fs::remove_file(dir.path().join("7")).unwrap();
        assert_eq!(entries.count(), Some(999));
        assert!(Entries::open(c"/no/such/dir").is_none());
    }

    #[test]
    fn this_process_has_descriptors_under_its_limit_and_resident_memory() {
        let mut resources = Resources::open();
        let before = resources.read();
        let held: Vec<File> = (0..10).map(|_| File::open("/proc/self/status").unwrap()).collect();
        let after = resources.read();
        let (Some(fds), Some(more)) = (before.fds, after.fds) else { panic!("{before:?} {after:?}") };
        // Other tests of this process open and close files meanwhile: at least ours are seen.
        assert!(fds >= 3 && more >= 10, "{before:?} {after:?}");
        let dir = resources.fd_dir.as_mut().unwrap();
        let (size, count) = (dir.size(), dir.count());
        assert!(
            size.is_none_or(|n| n >= 10) && count.is_some_and(|n| n >= 10),
            "before Linux 6.2, no size: {size:?} {count:?}"
        );
        drop(held);
        assert!(before.fd_limit.is_none_or(|limit| limit >= fds), "{before:?}");
        let (Some(rss), Some(peak)) = (after.rss, after.rss_peak) else { panic!("{after:?}") };
        assert!(rss > 0 && peak >= rss, "{after:?}");
    }
}
