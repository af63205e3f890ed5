//! How a connection failed, in the few kinds a plugin tells apart: one table for the words the
//! one-call path and a proxy's failure put in an error (the stable phrases of docs/http.md, "Errors
//! a plugin sees") and for the code the `wasi:http` pool returns, so the three never drift apart.

use std::io::ErrorKind;

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
}
