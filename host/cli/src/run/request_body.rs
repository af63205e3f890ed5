//! A request body read from a peer under a cap and a deadline, for the endpoints loadhost serves
//! (the control API's PATCH). The cap is checked while reading, chunk by chunk, so a body past
//! it is refused after at most the cap and one chunk: a 1.2 GiB PATCH used to be read whole
//! (1,239 MiB of RSS) before its JSON was even looked at.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Body;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Longer than the cap (said by its `Content-Length`, or found while reading).
    #[error("the request body is over {cap} bytes, this endpoint's cap")]
    TooLarge {
        /// The cap.
        cap: usize,
    },
    /// Not all there within the deadline.
    #[error("the request body did not arrive within {}s", .limit.as_secs_f64())]
    TooSlow {
        /// The deadline.
        limit: Duration,
    },
    /// The connection failed while reading.
    #[error("reading the request body: {0}")]
    Broken(String),
}

impl BodyError {
    /// The status that answers it.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }
}

/// Read `body` whole if it is at most `cap` bytes and arrives within `limit`. A declared
/// `Content-Length` past the cap is refused before any byte is read.
pub async fn read<B>(headers: &HeaderMap, body: B, cap: usize, limit: Duration) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge { cap });
    }
    match tokio::time::timeout(limit, Limited::new(body, cap).collect()).await {
        Err(_) => Err(BodyError::TooSlow { limit }),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(err)) if err.is::<LengthLimitError>() => Err(BodyError::TooLarge { cap }),
        Ok(Err(err)) => Err(BodyError::Broken(err.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use hyper::body::Frame;
    use rand_core::{Rng as _, SeedableRng as _};

    use super::*;

    /// A body in the chunks given, answering `Pending` (and waking at once) before some of them,
    /// and stalling for ever after its chunks when `stall` (a peer that stops sending).
    struct Paced {
        chunks: VecDeque<(Bytes, bool)>,
        stall: bool,
        /// Bytes handed to the reader so far.
        taken: Arc<AtomicUsize>,
    }

    impl Paced {
        fn new(chunks: VecDeque<(Bytes, bool)>, stall: bool) -> (Self, Arc<AtomicUsize>) {
            let taken = Arc::new(AtomicUsize::new(0));
            (Self { chunks, stall, taken: taken.clone() }, taken)
        }
    }

    impl Body for Paced {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            let stall = self.stall;
            match self.chunks.front_mut() {
                Some((_, wait)) if *wait => {
                    *wait = false;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                Some(_) => {
                    let chunk = self.chunks.pop_front().map(|(chunk, _)| chunk).unwrap_or_default();
                    self.taken.fetch_add(chunk.len(), Ordering::SeqCst);
                    Poll::Ready(Some(Ok(Frame::data(chunk))))
                }
                None if stall => Poll::Pending,
                None => Poll::Ready(None),
            }
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
    }

    const CAP: usize = 16 * 1024;

    /// A size near one of the cap's edges, or anywhere up to a huge one.
    fn size(rng: &mut rand_pcg::Pcg64, cap: usize) -> usize {
        match rng.next_u32() % 8 {
            0 => 0,
            1 => cap - 1,
            2 => cap,
            3 => cap + 1,
            4 => 64 << 20,
            _ => (rng.next_u64() % (3 * cap as u64)) as usize,
        }
    }

    /// Bodies of random and extreme sizes, cut into random chunks (empty ones too) and paced at
    /// random: each is accepted exactly when it is at most the cap, and no more than the cap and
    /// one chunk is ever taken from a body past it. Seeded, so a failure repeats.
    #[test]
    fn a_body_is_accepted_exactly_when_it_is_at_most_the_cap_whatever_its_chunking_and_pacing() {
        let runtime = runtime();
        let mut rng = rand_pcg::Pcg64::seed_from_u64(41);
        // Chunks are slices of one buffer, so a huge body costs no copies.
        let pool = Bytes::from(vec![b'a'; (16 << 20) + 1]);
        for case in 0..300 {
            let total = size(&mut rng, CAP);
            let mut chunks = VecDeque::new();
            let mut left = total;
            // A huge body is cut into few big chunks; the reader must stop early anyway.
            let most = if total > 4 * CAP { total / 4 + 1 } else { CAP + 2 };
            while left > 0 && chunks.len() < 10_000 {
                let n = match rng.next_u32() % 6 {
                    0 => 0,
                    1 => 1,
                    _ => 1 + (rng.next_u64() % most as u64) as usize,
                }
                .min(left);
                chunks.push_back((pool.slice(..n), rng.next_u32() % 3 == 0));
                left -= n;
            }
            let biggest = chunks.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
            let declared = rng.next_u32() % 2 == 0;
            let mut headers = HeaderMap::new();
            if declared {
                headers.insert(header::CONTENT_LENGTH, total.into());
            }
            let (body, taken) = Paced::new(chunks, false);
            let got = runtime.block_on(read(&headers, body, CAP, Duration::from_secs(30)));
            let taken = taken.load(Ordering::SeqCst);
            match got {
                Ok(bytes) => {
                    assert!(total <= CAP, "case {case}: {total} bytes accepted over the cap");
                    assert_eq!(bytes.len(), total, "case {case}");
                }
                Err(BodyError::TooLarge { cap }) => {
                    assert_eq!(cap, CAP);
                    assert!(total > CAP, "case {case}: {total} bytes refused, the cap is {CAP}");
                    // What a body past the cap costs: at most the cap and the chunk that crossed
                    // it; nothing at all when its length said so.
                    let most = if declared { 0 } else { CAP + biggest };
                    assert!(taken <= most, "case {case}: {taken} bytes read of {total} (cap {CAP})");
                }
                Err(err) => panic!("case {case}: {err}"),
            }
        }
    }

    #[test]
    fn a_declared_length_past_the_cap_is_refused_before_reading() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, (CAP + 1).into());
        // A body that would stall for ever: never polled.
        let (body, _) = Paced::new(VecDeque::new(), true);
        let got = runtime().block_on(read(&headers, body, CAP, Duration::from_secs(30)));
        assert!(matches!(got, Err(BodyError::TooLarge { cap: CAP })), "{got:?}");
        assert_eq!(got.unwrap_err().status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn a_body_that_stops_arriving_ends_at_the_deadline() {
        let chunks = VecDeque::from([(Bytes::from_static(b"{\"ra"), true)]);
        let (body, _) = Paced::new(chunks, true);
        let got = runtime().block_on(read(&HeaderMap::new(), body, CAP, Duration::from_millis(50)));
        assert!(matches!(got, Err(BodyError::TooSlow { .. })), "{got:?}");
        assert_eq!(got.unwrap_err().status(), StatusCode::REQUEST_TIMEOUT);
    }
}
