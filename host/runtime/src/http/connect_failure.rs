//! How a connection failed, in the few kinds a plugin tells apart: one table for the words the
//! one-call path and a proxy's failure put in an error (the stable phrases of docs/http.md, "Errors
//! a plugin sees") and for the code the `wasi:http` pool returns, so the three never drift apart.
//! And the connects that failed for want of the generator's own resources (a local port, a file
//! descriptor): counted for the generator's health, and said so in the error.

use std::io::{self, ErrorKind};

use loadhost_metrics::{EXHAUSTED, Exhausted};
use wasmtime_wasi_http::Error as HttpError;

/// A connection the peer refused, that timed out, or that the peer reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConnectFailure {
    Refused,
    TimedOut,
    Reset,
}

impl ConnectFailure {
    /// The failure an I/O error of `kind` is, or None for one told in its own words.
    pub(super) fn of(kind: ErrorKind) -> Option<Self> {
        match kind {
            ErrorKind::ConnectionRefused => Some(Self::Refused),
            ErrorKind::TimedOut => Some(Self::TimedOut),
            // A write to a peer that already closed: the same reset, seen from the sending side.
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => Some(Self::Reset),
            _ => None,
        }
    }

    /// What a plugin reads (after the URL, or after `proxy HOST:PORT: `).
    pub(super) fn words(self) -> &'static str {
        match self {
            Self::Refused => "connection refused",
            Self::TimedOut => "connect timed out",
            Self::Reset => "connection reset",
        }
    }

    /// The `wasi:http` error code of the same failure.
    pub(super) fn code(self) -> HttpError {
        match self {
            Self::Refused => HttpError::ConnectionRefused,
            Self::TimedOut => HttpError::ConnectionTimeout,
            Self::Reset => HttpError::ConnectionTerminated,
        }
    }
}

/// The resource a failed connect found exhausted, from its errno: the generator's failure, not
/// the target's.
pub(super) fn exhausted(err: &io::Error) -> Option<Exhausted> {
    match err.raw_os_error()? {
        libc::EADDRNOTAVAIL => Some(Exhausted::Ports),
        libc::EMFILE | libc::ENFILE => Some(Exhausted::Fds),
        _ => None,
    }
}

/// What a plugin reads before the system's own words (after `connect failed: `).
fn exhausted_words(what: Exhausted) -> &'static str {
    match what {
        Exhausted::Ports => "the generator is out of local ports",
        Exhausted::Fds => "the generator is out of file descriptors",
    }
}

/// A connect that failed: counted in the process's [`EXHAUSTED`] and said so (keeping its kind)
/// when it was for want of the generator's own port or descriptor; otherwise as it was.
pub(super) fn count_exhausted(err: io::Error) -> io::Error {
    let Some(what) = exhausted(&err) else { return err };
    EXHAUSTED.count(what);
    io::Error::new(err.kind(), format!("{}: {err}", exhausted_words(what)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_as_docs_http_names_it_and_maps_to_its_wasi_code() {
        let table = [
            (ErrorKind::ConnectionRefused, "connection refused"),
            (ErrorKind::TimedOut, "connect timed out"),
            (ErrorKind::ConnectionReset, "connection reset"),
            (ErrorKind::BrokenPipe, "connection reset"),
        ];
        for (kind, words) in table {
            assert_eq!(ConnectFailure::of(kind).map(ConnectFailure::words), Some(words), "{kind:?}");
        }
        assert!(matches!(ConnectFailure::Refused.code(), HttpError::ConnectionRefused));
        assert!(matches!(ConnectFailure::TimedOut.code(), HttpError::ConnectionTimeout));
        assert!(matches!(ConnectFailure::Reset.code(), HttpError::ConnectionTerminated));
        assert_eq!(ConnectFailure::of(ErrorKind::AddrNotAvailable), None, "told in its own words");
    }

    #[test]
    fn the_generators_own_exhaustion_is_told_by_errno_and_others_are_left_alone() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(exhausted(&os(libc::EADDRNOTAVAIL)), Some(Exhausted::Ports));
        assert_eq!(exhausted(&os(libc::EMFILE)), Some(Exhausted::Fds));
        assert_eq!(exhausted(&os(libc::ENFILE)), Some(Exhausted::Fds));
        assert_eq!(exhausted(&os(libc::ECONNREFUSED)), None, "the target's failure");
        assert_eq!(exhausted(&io::Error::other("no errno")), None);

        let before = EXHAUSTED.totals();
        let told = count_exhausted(os(libc::EMFILE));
        assert!(told.to_string().starts_with("the generator is out of file descriptors: "), "{told}");
        let told = count_exhausted(os(libc::EADDRNOTAVAIL));
        assert_eq!(told.kind(), ErrorKind::AddrNotAvailable, "its kind is kept");
        assert!(told.to_string().starts_with("the generator is out of local ports: "), "{told}");
        let refused = count_exhausted(os(libc::ECONNREFUSED));
        assert_eq!(refused.raw_os_error(), Some(libc::ECONNREFUSED), "left as it was");
        // Other tests may count too (the counts are the process's): at least these two.
        let counted = EXHAUSTED.totals().since(before);
        assert!(counted.ports >= 1 && counted.fds >= 1, "{counted:?}");
    }
}
