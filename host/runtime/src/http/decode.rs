//! Decoding a response body as it arrives (`Content-Encoding: gzip`, `deflate`, `br`), for the
//! one-call path's `decompress` option.
//!
//! The decoded bytes go into a buffer that refuses to grow past `--max-response-body`, or past the
//! instance's byte budget: a small compressed body that decodes to gigabytes (a zip bomb) fails
//! with the cap's error once the cap is reached, having held at most the cap, never the whole of it.

use std::io::Write;

use bytes::Bytes;

use crate::budget::{Held, OverBudget};

/// The encodings the host decodes; anything else is handed back as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Gzip,
    Deflate,
    Brotli,
}

impl Encoding {
    /// The encoding a `Content-Encoding` value names, when it is one the host decodes (a list of
    /// several codings is left alone).
    pub(crate) fn from_header(value: &http::HeaderValue) -> Option<Self> {
        let value = value.to_str().ok()?.trim();
        if value.eq_ignore_ascii_case("gzip") || value.eq_ignore_ascii_case("x-gzip") {
            Some(Self::Gzip)
        } else if value.eq_ignore_ascii_case("deflate") {
            Some(Self::Deflate)
        } else if value.eq_ignore_ascii_case("br") {
            Some(Self::Brotli)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Deflate => "deflate",
            Self::Brotli => "br",
        }
    }
}

/// What `Accept-Encoding` asks for when the plugin did not set it.
pub(crate) const ACCEPT: &str = "gzip, deflate, br";

/// Brotli's internal buffer: the size its writer copies out in.
const BROTLI_BUFFER: usize = 32 << 10;

/// The decoded bytes so far, never more than `limit`, and counted by `held`.
struct Capped {
    out: Vec<u8>,
    limit: usize,
    over: bool,
    held: Held,
    /// The byte budget refused the decoded bytes.
    refused: Option<OverBudget>,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let wanted = self.out.len().saturating_add(data.len());
        if wanted > self.limit {
            self.over = true;
            return Err(std::io::Error::other("over the body cap"));
        }
        if let Err(over) = self.held.grow(data.len()) {
            self.refused = Some(over);
            return Err(std::io::Error::other("over the byte budget"));
        }
        if wanted > self.out.capacity() {
            // Doubling, as a Vec would, but never past the cap.
            let grow = self.out.capacity().saturating_mul(2).max(wanted).min(self.limit);
            self.out.reserve_exact(grow - self.out.len());
        }
        self.out.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Inner {
    /// Deflate waits for its first two bytes: servers send zlib (RFC 9110) or raw deflate.
    Deflate(Capped, Vec<u8>),
    Gzip(flate2::write::GzDecoder<Capped>),
    Zlib(flate2::write::ZlibDecoder<Capped>),
    Raw(flate2::write::DeflateDecoder<Capped>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Capped>>),
}

/// Why a body could not be decoded.
pub(crate) enum DecodeError {
    /// The decoded body is larger than the cap.
    TooLarge,
    /// The decoded body would pass the instance's byte budget.
    OverBudget(OverBudget),
    /// The body is not valid in its encoding.
    Invalid(String),
}

/// A streaming decoder of one body.
pub(crate) struct Decoder {
    encoding: Encoding,
    inner: Inner,
    /// Whether any encoded byte came: a HEAD, 204 or 304 response names an encoding but has none.
    started: bool,
}

impl Decoder {
    /// A decoder of `encoding` whose output may not exceed `limit` bytes, counted by `held`.
    pub(crate) fn new(encoding: Encoding, limit: usize, held: Held) -> Self {
        let out = Capped { out: Vec::new(), limit, over: false, held, refused: None };
        let inner = match encoding {
            Encoding::Gzip => Inner::Gzip(flate2::write::GzDecoder::new(out)),
            Encoding::Deflate => Inner::Deflate(out, Vec::new()),
            Encoding::Brotli => {
                Inner::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(out, BROTLI_BUFFER)))
            }
        };
        Self { encoding, inner, started: false }
    }

    /// Decode the next piece of the body.
    pub(crate) fn push(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        self.started |= !data.is_empty();
        if let Inner::Deflate(_, head) = &mut self.inner {
            head.extend_from_slice(data);
            if head.len() < 2 {
                return Ok(());
            }
            let head = self.start_deflate();
            return self.write(&head);
        }
        self.write(data)
    }

    fn write(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let written = match &mut self.inner {
            Inner::Gzip(d) => d.write_all(data),
            Inner::Zlib(d) => d.write_all(data),
            Inner::Raw(d) => d.write_all(data),
            Inner::Brotli(d) => d.write_all(data),
            Inner::Deflate(..) => Ok(()),
        };
        written.map_err(|err| self.error(&err))
    }

    /// Pick zlib or raw deflate from the first two bytes; returns what came so far, to decode.
    fn start_deflate(&mut self) -> Vec<u8> {
        let placeholder = match &mut self.inner {
            Inner::Deflate(out, _) => Inner::Deflate(out.empty(), Vec::new()),
            _ => return Vec::new(),
        };
        let Inner::Deflate(out, head) = std::mem::replace(&mut self.inner, placeholder) else {
            return Vec::new();
        };
        // A zlib header: compression method 8, and the pair a multiple of 31.
        let zlib = head.len() >= 2 && head[0] & 0x0f == 8 && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
        self.inner = if zlib {
            Inner::Zlib(flate2::write::ZlibDecoder::new(out))
        } else {
            Inner::Raw(flate2::write::DeflateDecoder::new(out))
        };
        head
    }

    fn error(&self, err: &std::io::Error) -> DecodeError {
        let out = self.out();
        match &out.refused {
            Some(over) => DecodeError::OverBudget(over.clone()),
            None if out.over => DecodeError::TooLarge,
            None => DecodeError::Invalid(format!("{}: {err}", self.encoding.name())),
        }
    }

    /// Where the decoded bytes go.
    fn out(&self) -> &Capped {
        match &self.inner {
            Inner::Deflate(out, _) => out,
            Inner::Gzip(d) => d.get_ref(),
            Inner::Zlib(d) => d.get_ref(),
            Inner::Raw(d) => d.get_ref(),
            Inner::Brotli(d) => d.get_ref(),
        }
    }

    /// The whole decoded body, once the encoded one has ended.
    pub(crate) fn finish(mut self) -> Result<Bytes, DecodeError> {
        if !self.started {
            return Ok(Bytes::new());
        }
        if matches!(self.inner, Inner::Deflate(..)) {
            let head = self.start_deflate();
            self.write(&head)?;
        }
        // Flush what the decoder still holds (it may cross the cap), then check it ended whole.
        let flushed = match &mut self.inner {
            Inner::Gzip(d) => d.try_finish(),
            Inner::Zlib(d) => d.try_finish(),
            Inner::Raw(d) => d.try_finish(),
            Inner::Brotli(d) => d.flush(),
            Inner::Deflate(..) => Ok(()),
        };
        flushed.map_err(|err| self.error(&err))?;
        let encoding = self.encoding;
        let out = match self.inner {
            Inner::Deflate(out, _) => Ok(out),
            Inner::Gzip(d) => d.finish(),
            Inner::Zlib(d) => d.finish(),
            Inner::Raw(d) => d.finish(),
            Inner::Brotli(d) => d.into_inner().map_err(|_| std::io::Error::other("the body ended early")),
        };
        out.map(|out| Bytes::from(out.out)).map_err(|err| DecodeError::Invalid(format!("{}: {err}", encoding.name())))
    }
}

impl Capped {
    /// A stand-in holding nothing, while the real one changes hands.
    fn empty(&mut self) -> Capped {
        Capped { out: Vec::new(), limit: 0, over: false, held: self.held.split(0), refused: None }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::io::Write as _;

    use super::*;
    use crate::budget::ByteBudget;

    fn compress(encoding: Encoding, data: &[u8]) -> Vec<u8> {
        let level = flate2::Compression::default();
        match encoding {
            Encoding::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Encoding::Deflate => {
                let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Encoding::Brotli => unreachable!("no brotli encoder in the tests"),
        }
    }

    fn decode(encoding: Encoding, wire: &[u8], limit: usize, piece: usize) -> Result<Bytes, DecodeError> {
        decode_within(&ByteBudget::new(usize::MAX), encoding, wire, limit, piece)
    }

    fn decode_within(
        budget: &ByteBudget,
        encoding: Encoding,
        wire: &[u8],
        limit: usize,
        piece: usize,
    ) -> Result<Bytes, DecodeError> {
        let mut decoder = Decoder::new(encoding, limit, budget.none());
        for chunk in wire.chunks(piece) {
            decoder.push(chunk)?;
        }
        decoder.finish()
    }

    #[test]
    fn gzip_and_deflate_decode_in_any_pieces() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        for encoding in [Encoding::Gzip, Encoding::Deflate] {
            let wire = compress(encoding, &data);
            for piece in [1, 7, 4096, wire.len()] {
                let out = decode(encoding, &wire, 1 << 20, piece).ok().unwrap();
                assert_eq!(out.as_ref(), data.as_slice(), "{encoding:?} in pieces of {piece}");
            }
        }
    }

    #[test]
    fn raw_deflate_is_accepted_too() {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"hello hello hello").unwrap();
        let wire = e.finish().unwrap();
        assert_eq!(decode(Encoding::Deflate, &wire, 100, 3).ok().unwrap().as_ref(), b"hello hello hello");
    }

    #[test]
    fn a_bomb_stops_at_the_cap() {
        let wire = compress(Encoding::Gzip, &vec![0u8; 8 << 20]);
        assert!(wire.len() < 64 << 10);
        assert!(matches!(decode(Encoding::Gzip, &wire, 1 << 20, 1024), Err(DecodeError::TooLarge)));
        // Exactly at the cap is fine.
        assert_eq!(decode(Encoding::Gzip, &wire, 8 << 20, 1024).ok().unwrap().len(), 8 << 20);
    }

    #[test]
    fn decoded_bytes_count_against_the_byte_budget_until_the_body_is_whole() {
        let wire = compress(Encoding::Deflate, &vec![0u8; 8 << 20]);
        let budget = ByteBudget::new(6 << 20);
        let other = budget.hold(2 << 20).unwrap();
        match decode_within(&budget, Encoding::Deflate, &wire, 64 << 20, 1024) {
            Err(DecodeError::OverBudget(over)) => {
                assert!(over.held <= 6 << 20 && over.held + over.wanted > 6 << 20, "{over}");
            }
            _ => panic!("expected the byte budget to refuse the decoded body"),
        }
        assert_eq!(budget.held(), 2 << 20, "what the failed body held was given back");
        drop(other);
        let body = decode_within(&budget, Encoding::Deflate, &wire[..], 64 << 20, 1024);
        assert!(matches!(body, Err(DecodeError::OverBudget(_))), "8 MiB is over a 6 MiB budget on its own");
        let small = compress(Encoding::Deflate, &vec![0u8; 1 << 20]);
        assert_eq!(decode_within(&budget, Encoding::Deflate, &small, 64 << 20, 7).ok().unwrap().len(), 1 << 20);
        assert_eq!(budget.held(), 0, "a whole body is the caller's, not the budget's");
    }

    #[test]
    fn brotli_decodes() {
        // "hello" compressed by `brotli -c` (quality 11).
        let wire = [0x0b, 0x02, 0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x03];
        assert_eq!(decode(Encoding::Brotli, &wire, 100, 2).ok().unwrap().as_ref(), b"hello");
    }

    #[test]
    fn an_empty_body_is_empty_whatever_its_encoding() {
        for encoding in [Encoding::Gzip, Encoding::Deflate, Encoding::Brotli] {
            assert!(decode(encoding, b"", 100, 1).ok().unwrap().is_empty(), "{encoding:?}");
        }
    }

    #[test]
    fn garbage_is_invalid() {
        assert!(matches!(decode(Encoding::Gzip, b"not gzip at all", 100, 4), Err(DecodeError::Invalid(_))));
        let wire = compress(Encoding::Gzip, &[7u8; 10_000]);
        let cut = &wire[..wire.len() - 6];
        assert!(matches!(decode(Encoding::Gzip, cut, 1 << 20, 100), Err(DecodeError::Invalid(_))), "a cut body");
    }
}
