//! What loadhost accepts from a registry (docs/sharing.md, "What loadhost accepts from a
//! registry"): every body read from a peer has a cap, checked while it is read, and every registry
//! operation a deadline. A registry is a peer like any other: a manifest that never ends, a layer
//! that claims 63 KB and streams 512 MiB, or an error page without end must cost a bounded amount
//! of memory and time, and end in one line saying what was refused.

use std::time::Duration;

/// A manifest or an image index (a referrers index, the referrers tag schema's index). The OCI
/// distribution spec asks registries to accept manifests of at least 4 MiB, so none larger is
/// one anybody can push everywhere; loadhost's own are a few KiB.
pub const MANIFEST_CAP: u64 = 4 << 20;
/// One page of a repository's tag list (`GET /v2/REPO/tags/list?n=1000`): a thousand tags of
/// at most 128 characters each is 130 KiB, so 4 MiB is room to spare.
pub const TAG_LIST_CAP: u64 = 4 << 20;
/// A token service's answer: a JSON object with a token (a JWT of a few KiB).
pub const TOKEN_CAP: u64 = 1 << 20;
/// The part of a non-2xx answer's body that is read, for the error message (an OCI error
/// envelope is a few hundred bytes); the rest is never read.
pub const ERROR_BODY_CAP: u64 = 8 << 10;
/// A blob that is not one of a plugin's named layers (a wasm artifact's config, a signature's
/// config): small JSON, as a manifest.
pub const SMALL_BLOB_CAP: u64 = MANIFEST_CAP;
/// How long one registry operation (a pull with all its blobs, a push, a signature check, a
/// prune's look-up or delete, a results pull) may take in all, unless `LOADHOST_REGISTRY_DEADLINE`
/// says otherwise. The per-read timeout does not bound a peer that drips one byte a second.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);

/// A body that went past its cap: `read` is how much had come (or the `Content-Length` the peer
/// declared) when reading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Over {
    /// The cap.
    pub cap: u64,
    /// What the peer declared or had sent when reading stopped; always more than `cap`.
    pub read: u64,
    /// Whether `read` is the declared `Content-Length` (nothing was read).
    pub declared: bool,
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cap = size(self.cap);
        if self.declared {
            write!(f, "it declares {} bytes, more than the cap of {cap}; nothing was read", self.read)
        } else {
            write!(f, "more than the cap of {cap} came ({} bytes when reading stopped)", self.read)
        }
    }
}

/// A body being read, at most `cap` bytes of it: every chunk is pushed as it arrives and the
/// first byte past the cap ends it, so memory never holds more than `cap`.
#[derive(Debug)]
pub(crate) struct Capped {
    cap: u64,
    bytes: Vec<u8>,
}

/// The most memory reserved up front: a peer's `Content-Length` is only a claim.
const RESERVE_MAX: u64 = 1 << 20;

impl Capped {
    /// An empty body of at most `cap` bytes; `declared` is the `Content-Length`, when there is
    /// one, refused at once when it is past the cap.
    pub fn new(cap: u64, declared: Option<u64>) -> Result<Self, Over> {
        if let Some(declared) = declared.filter(|d| *d > cap) {
            return Err(Over { cap, read: declared, declared: true });
        }
        let reserve = declared.unwrap_or(0).min(RESERVE_MAX).min(cap);
        Ok(Self { cap, bytes: Vec::with_capacity(usize::try_from(reserve).unwrap_or(0)) })
    }

    /// Add a chunk; an error, and nothing kept of it, when it would take the body past the cap.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), Over> {
        let read = self.bytes.len() as u64 + chunk.len() as u64;
        if read > self.cap {
            return Err(Over { cap: self.cap, read, declared: false });
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The body.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Read `response`'s body, at most `cap` bytes (its `Content-Length` checked first).
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    cap: u64,
) -> Result<Result<Vec<u8>, Over>, reqwest::Error> {
    let mut body = match Capped::new(cap, response.content_length()) {
        Ok(body) => body,
        Err(over) => return Ok(Err(over)),
    };
    while let Some(chunk) = response.chunk().await? {
        if let Err(over) = body.push(&chunk) {
            return Ok(Err(over));
        }
    }
    Ok(Ok(body.into_bytes()))
}

/// The start of a non-2xx answer's body, at most [`ERROR_BODY_CAP`] bytes, as one line of at
/// most 300 characters; what does not fit is never read (the connection is dropped).
pub(crate) async fn error_body(mut response: reqwest::Response) -> String {
    let mut kept = loadhost_input::Prefix::new(usize::try_from(ERROR_BODY_CAP).unwrap_or(usize::MAX));
    while let Ok(Some(chunk)) = response.chunk().await {
        if kept.push(&chunk).is_break() {
            break;
        }
    }
    one_line(&String::from_utf8_lossy(kept.bytes()))
}

/// A size as the caps are stated: whole MiB or KiB when it is one, else bytes.
pub(crate) fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// A body as one short line: at most 300 characters, `(no body)` for none.
pub(crate) fn one_line(body: &str) -> String {
    let (line, _) = loadhost_input::one_line(body, 300);
    if line.is_empty() { "(no body)".to_owned() } else { line }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feed `size` bytes in chunks of `chunk` bytes (the last one shorter) to a body capped at
    /// `cap`, never holding more than one chunk besides the body; the body, or where it stopped.
    fn feed(cap: u64, size: u64, chunk: u64, declared: Option<u64>) -> Result<Vec<u8>, Over> {
        let mut body = Capped::new(cap, declared)?;
        let piece = vec![7u8; usize::try_from(chunk.min(size).max(1)).expect("a chunk fits")];
        let mut sent = 0;
        while sent < size {
            let n = chunk.min(size - sent);
            body.push(&piece[..usize::try_from(n).expect("fits")])?;
            sent += n;
            assert!(body.bytes.len() as u64 <= cap, "never more than the cap in memory");
        }
        Ok(body.into_bytes())
    }

    #[test]
    fn a_body_stops_at_the_first_byte_past_its_cap() {
        let cap = 4 << 20;
        for size in [0, 1, cap - 1, cap] {
            assert_eq!(feed(cap, size, 64 << 10, None).expect("within the cap").len() as u64, size);
        }
        let over = feed(cap, cap + 1, 1 << 20, None).expect_err("one byte past");
        assert_eq!((over.cap, over.declared), (cap, false));
        assert!(over.read > cap && over.read <= cap + (1 << 20), "stops within one chunk: {over:?}");
        // 64 MiB streamed at a 4 MiB cap: reading ends at the first chunk past it.
        let over = feed(cap, 64 << 20, 1 << 20, None).expect_err("64 MiB");
        assert_eq!(over.read, cap + (1 << 20));
        assert!(over.to_string().contains("more than the cap of 4 MiB"), "{over}");
        // A declared length past the cap is refused before anything is read.
        let over = feed(cap, 0, 1, Some(1 << 40)).expect_err("declared");
        assert!(over.declared && over.read == 1 << 40, "{over:?}");
        assert!(over.to_string().contains("nothing was read"), "{over}");
        // A zero cap takes only the empty body.
        assert!(feed(0, 0, 1, Some(0)).is_ok() && feed(0, 1, 1, None).is_err());
    }

    /// Sizes around the caps and far past them, and chunkings from one byte to megabytes.
    fn size_around(cap: u64) -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0),
            Just(cap.saturating_sub(1)),
            Just(cap),
            Just(cap + 1),
            Just(cap.saturating_mul(16)),
            0..=cap.saturating_mul(2),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn a_body_is_accepted_exactly_when_it_is_within_its_cap(
            cap in prop_oneof![Just(0u64), Just(1u64), 1u64..=(64 << 10), Just(ERROR_BODY_CAP), Just(1u64 << 20)],
            pick in any::<prop::sample::Index>(),
            chunk in prop_oneof![Just(1u64), 1u64..=4096, Just(64u64 << 10), Just(4u64 << 20)],
            claims in prop_oneof![Just(None), Just(Some(0u64)), any::<u64>().prop_map(Some)],
        ) {
            // The size depends on the cap: around it, or far past it.
            let sizes = [0, cap.saturating_sub(1), cap, cap + 1, cap.saturating_mul(16) + 1, cap / 2];
            let size = sizes[pick.index(sizes.len())];
            // A peer's Content-Length may be true or any lie; a claim within the cap is not
            // believed, the bytes are counted.
            let declared = claims.map(|c| if c % 2 == 0 { size } else { c });
            let fed = feed(cap, size, chunk, declared);
            let declared_over = declared.is_some_and(|d| d > cap);
            prop_assert_eq!(fed.is_ok(), size <= cap && !declared_over, "size {} cap {} declared {:?}", size, cap, declared);
            if let Ok(body) = fed {
                prop_assert_eq!(body.len() as u64, size);
            }
        }

        #[test]
        fn any_size_and_chunking_within_the_manifest_cap_is_read_whole(
            size in size_around(MANIFEST_CAP),
            chunk in prop_oneof![Just(1u64 << 20), 512u64..=(2 << 20)],
        ) {
            let fed = feed(MANIFEST_CAP, size, chunk, None);
            prop_assert_eq!(fed.is_ok(), size <= MANIFEST_CAP);
        }
    }
}
