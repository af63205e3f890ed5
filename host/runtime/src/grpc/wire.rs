//! gRPC over HTTP/2 as the wire has it: length-prefixed messages, metadata (`-bin` values in
//! base64), and the status in `grpc-status`/`grpc-message` (percent-encoded).

use base64::Engine as _;
use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};

use crate::budget::{ByteBudget, Held, HeldBytes, OverBudget};

/// A metadata list as the WIT carries it: names, and raw values.
pub(crate) type Metadata = Vec<(String, Vec<u8>)>;

/// gRPC status codes the host produces itself.
pub(crate) mod code {
    /// The call ended well.
    pub(crate) const OK: u32 = 0;
    /// The caller went away before the end (a stream dropped unfinished).
    pub(crate) const CANCELLED: u32 = 1;
    /// The server gave no status a client could read.
    pub(crate) const UNKNOWN: u32 = 2;
    /// The deadline (`timeout-ms`) passed.
    pub(crate) const DEADLINE_EXCEEDED: u32 = 4;
    /// A message larger than the cap.
    pub(crate) const RESOURCE_EXHAUSTED: u32 = 8;
    /// The server does not have the method.
    pub(crate) const UNIMPLEMENTED: u32 = 12;
    /// The server broke the protocol (no trailers, a malformed message).
    pub(crate) const INTERNAL: u32 = 13;
    /// The connection failed, as gRPC clients report it.
    pub(crate) const UNAVAILABLE: u32 = 14;
    /// The server wanted credentials.
    pub(crate) const UNAUTHENTICATED: u32 = 16;
    /// The server refused them.
    pub(crate) const PERMISSION_DENIED: u32 = 7;
}

/// One message with its 5-byte prefix (not compressed).
pub(crate) fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

/// Why the response's body could not be read as messages.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DeframeError {
    /// A message over the cap (its declared length).
    TooLarge(u64),
    /// The compressed flag is set: the host asks for no compression and decodes none.
    Compressed,
}

/// Messages cut out of the response body's data frames as they arrive; what it holds counts
/// against the instance's byte budget, and each message takes its part with it.
#[derive(Debug)]
pub(crate) struct Deframer {
    buf: BytesMut,
    max: u64,
    held: Held,
}

impl Deframer {
    /// A deframer refusing messages over `max` bytes, holding what it reads against `budget`.
    pub(crate) fn new(max: u64, budget: &ByteBudget) -> Self {
        Self { buf: BytesMut::new(), max, held: budget.none() }
    }

    /// Add a data frame's bytes, unless the budget refuses them.
    pub(crate) fn push(&mut self, data: &[u8]) -> Result<(), OverBudget> {
        self.held.grow(data.len())?;
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// The next whole message, if one has arrived, with what it holds of the budget.
    pub(crate) fn next_message(&mut self) -> Result<Option<HeldBytes>, DeframeError> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let compressed = self.buf[0] != 0;
        let len = u64::from(u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]));
        if compressed {
            return Err(DeframeError::Compressed);
        }
        if len > self.max {
            return Err(DeframeError::TooLarge(len));
        }
        let len = usize::try_from(len).map_err(|_| DeframeError::TooLarge(len))?;
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        self.buf.advance(5);
        drop(self.held.split(5));
        let held = self.held.split(len);
        Ok(Some(HeldBytes::new(self.buf.split_to(len).freeze(), held)))
    }

    /// The largest message it takes.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// What is left of an unfinished message, if anything: the bytes that came, and how many its
    /// prefix announced (`None` while the prefix itself is cut).
    pub(crate) fn partial(&self) -> Option<(usize, Option<u64>)> {
        if self.buf.is_empty() {
            return None;
        }
        let announced = (self.buf.len() >= 5)
            .then(|| u64::from(u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])));
        Some((self.buf.len().saturating_sub(5), announced))
    }
}

/// Why a response that ended inside a message is refused, for its status message.
pub(crate) fn truncated((came, announced): (usize, Option<u64>)) -> String {
    match announced {
        Some(len) => format!("a truncated message: its prefix announced {len} bytes and only {came} came"),
        None => "a truncated message: the response ended inside a message's 5-byte prefix".to_owned(),
    }
}

/// Request metadata as HTTP/2 headers: a `-bin` value goes in base64, others must be valid
/// header values; reserved names (`:…`, `grpc-…`, `content-type`, `te`) are refused.
pub(crate) fn to_headers(metadata: &Metadata, headers: &mut http::HeaderMap) -> Result<(), String> {
    for (name, value) in metadata {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with(':') || lower.starts_with("grpc-") || lower == "content-type" || lower == "te" {
            return Err(format!("metadata {name:?} is reserved for the host"));
        }
        let header =
            http::HeaderName::from_bytes(lower.as_bytes()).map_err(|err| format!("metadata {name:?}: {err}"))?;
        let value = if lower.ends_with("-bin") {
            http::HeaderValue::from_str(&base64::engine::general_purpose::STANDARD_NO_PAD.encode(value))
        } else {
            http::HeaderValue::from_bytes(value)
        }
        .map_err(|err| format!("metadata {name:?}: {err}"))?;
        headers.append(header, value);
    }
    Ok(())
}

/// Headers or trailers as metadata: `-bin` values decoded, the status and framing headers left
/// out (they are the status's, or the protocol's).
pub(crate) fn from_headers(headers: &http::HeaderMap) -> Metadata {
    headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "grpc-status" | "grpc-message" | "content-type"))
        .map(|(name, value)| {
            let raw = value.as_bytes();
            let value = if name.as_str().ends_with("-bin") {
                let engine = base64::engine::general_purpose::STANDARD_NO_PAD;
                engine
                    .decode(raw.strip_suffix(b"==").or(raw.strip_suffix(b"=")).unwrap_or(raw))
                    .unwrap_or_else(|_| raw.to_vec())
            } else {
                raw.to_vec()
            };
            (name.as_str().to_owned(), value)
        })
        .collect()
}

/// The status `grpc-status`/`grpc-message` in `headers` carry, if they carry one.
pub(crate) fn status_in(headers: &http::HeaderMap) -> Option<(u32, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.trim().parse().unwrap_or(code::UNKNOWN);
    let message = headers
        .get("grpc-message")
        .map(|m| percent_encoding::percent_decode(m.as_bytes()).decode_utf8_lossy().into_owned())
        .unwrap_or_default();
    Some((code, message))
}

/// The status an HTTP error status stands for, by the gRPC spec's table.
pub(crate) fn status_of_http(status: http::StatusCode) -> u32 {
    match status.as_u16() {
        400 => code::INTERNAL,
        401 => code::UNAUTHENTICATED,
        403 => code::PERMISSION_DENIED,
        404 => code::UNIMPLEMENTED,
        429 | 502..=504 => code::UNAVAILABLE,
        _ => code::UNKNOWN,
    }
}

/// `timeout` as a `grpc-timeout` value (milliseconds, at most 8 digits as the spec allows).
pub(crate) fn timeout_header(ms: u32) -> http::HeaderValue {
    let value = if ms < 100_000_000 { format!("{ms}m") } else { format!("{}S", (ms / 1000).min(99_999_999)) };
    http::HeaderValue::from_str(&value).unwrap_or(http::HeaderValue::from_static("99999999S"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn messages_split_across_frames_come_out_whole() {
        let mut wire = frame(b"hello").to_vec();
        wire.extend_from_slice(&frame(b""));
        wire.extend_from_slice(&frame(&[7; 300]));
        let budget = ByteBudget::new(1 << 20);
        let mut deframer = Deframer::new(1024, &budget);
        let mut out = Vec::new();
        for chunk in wire.chunks(3) {
            deframer.push(chunk).unwrap();
            while let Some(message) = deframer.next_message().unwrap() {
                out.push(message);
            }
        }
        let bytes: Vec<&[u8]> = out.iter().map(HeldBytes::as_bytes).collect();
        assert_eq!(bytes, vec![&b"hello"[..], b"", &[7; 300]]);
        assert_eq!(deframer.partial(), None);
        assert_eq!(budget.held(), 305, "the messages hold their bytes, the prefixes none");
        drop(out);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_message_cut_short_is_told_as_truncated_and_the_budget_bounds_what_is_held() {
        let budget = ByteBudget::new(100);
        let mut deframer = Deframer::new(1024, &budget);
        deframer.push(&frame(&[1; 80])[..50]).unwrap();
        assert!(deframer.next_message().unwrap().is_none());
        let partial = deframer.partial().unwrap();
        assert_eq!(partial, (45, Some(80)));
        assert_eq!(truncated(partial), "a truncated message: its prefix announced 80 bytes and only 45 came");
        let err = deframer.push(&[1; 51]).unwrap_err();
        assert_eq!((err.held, err.wanted), (50, 51));
        let mut cut = Deframer::new(1024, &budget);
        cut.push(&[0, 0]).unwrap();
        assert_eq!(cut.partial(), Some((0, None)));
    }

    #[test]
    fn a_message_over_the_cap_or_compressed_is_refused() {
        let budget = ByteBudget::new(1 << 20);
        let mut deframer = Deframer::new(4, &budget);
        deframer.push(&frame(b"hello")).unwrap();
        assert_eq!(deframer.next_message().unwrap_err(), DeframeError::TooLarge(5));
        let mut deframer = Deframer::new(100, &budget);
        deframer.push(&[1, 0, 0, 0, 1, 9]).unwrap();
        assert_eq!(deframer.next_message().unwrap_err(), DeframeError::Compressed);
    }

    #[test]
    fn binary_metadata_goes_in_base64_and_comes_back_raw() {
        let mut headers = http::HeaderMap::new();
        to_headers(&vec![("Trace-Bin".into(), vec![0, 255, 1]), ("user".into(), b"ann".to_vec())], &mut headers)
            .unwrap();
        assert_eq!(headers["trace-bin"], "AP8B");
        let back = from_headers(&headers);
        assert!(back.contains(&("trace-bin".to_owned(), vec![0, 255, 1])));
        assert!(to_headers(&vec![("grpc-status".into(), b"0".to_vec())], &mut headers).is_err());
    }

    #[test]
    fn the_status_message_is_percent_decoded() {
        let mut headers = http::HeaderMap::new();
        headers.insert("grpc-status", "14".parse().unwrap());
        headers.insert("grpc-message", "no%20backend%3A%20down".parse().unwrap());
        assert_eq!(status_in(&headers), Some((14, "no backend: down".to_owned())));
        assert_eq!(status_of_http(http::StatusCode::SERVICE_UNAVAILABLE), code::UNAVAILABLE);
        assert_eq!(timeout_header(1500), "1500m");
    }
}
