//! A WebSocket connection's socket with what tungstenite reads from it counted against the
//! instance's byte budget.
//!
//! tungstenite buffers a frame whole (it reserves the announced length at the header) and a
//! fragmented message until its last frame, and hands nothing over before; a peer that announces a
//! large message and sends it slowly, on many connections, would make the host hold all of them.
//! So every frame is counted as its header passes through here, before any of its payload is read:
//! a data frame's bytes stay held until tungstenite hands its whole message over (and then go with
//! the message, to the plugin or to the queue `ping` keeps); a control frame's are given back once
//! it has been read (at most 125 bytes, which tungstenite handles at once). A frame that would pass
//! the budget fails the read, and so the connection, before the host holds it.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::budget::{ByteBudget, Held, OverBudget};

/// `inner`, with the frames read from it counted (see the module's docs).
pub(crate) struct Counted<S> {
    inner: S,
    pub(crate) frames: Frames,
}

impl<S> Counted<S> {
    /// `inner`, whose first bytes are the response to the handshake; frames are counted against
    /// `budget`, except those over `max_frame`, which tungstenite refuses at their header.
    pub(crate) fn new(inner: S, budget: ByteBudget, max_frame: u64) -> Self {
        Self { inner, frames: Frames::new(budget, max_frame) }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.frames.read(&buf.filled()[before..]).map_err(io::Error::other)?;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Where in the byte stream the reader is.
#[derive(Debug)]
enum State {
    /// The handshake's response head (a `101` has no body), until its blank line: how many bytes of
    /// `\r\n\r\n` were just seen.
    Head { matched: usize },
    /// A frame's header: its bytes so far (2 to 14).
    Header { bytes: [u8; 14], have: usize },
    /// A frame's payload: the bytes still to come.
    Payload { left: u64, control: bool, fin: bool },
}

/// The frames read so far, and what they hold of the budget.
#[derive(Debug)]
pub(crate) struct Frames {
    budget: ByteBudget,
    max_frame: u64,
    state: State,
    /// The data message being read: its frames so far.
    message: Held,
    /// Messages read whole that tungstenite has not handed over yet, oldest first.
    whole: VecDeque<Held>,
    /// The control frame being read.
    control: Option<Held>,
}

impl Frames {
    fn new(budget: ByteBudget, max_frame: u64) -> Self {
        let message = budget.none();
        Self { budget, max_frame, state: State::Head { matched: 0 }, message, whole: VecDeque::new(), control: None }
    }

    /// What a data message tungstenite has just handed over holds: its new holder keeps it (or
    /// drops it, giving the bytes back).
    pub(crate) fn handed_over(&mut self) -> Held {
        self.whole.pop_front().unwrap_or_else(|| self.budget.none())
    }

    /// Count `data`, the next bytes read from the socket.
    fn read(&mut self, mut data: &[u8]) -> Result<(), OverBudget> {
        while !data.is_empty() {
            match &mut self.state {
                State::Head { matched } => {
                    const END: &[u8] = b"\r\n\r\n";
                    let byte = data[0];
                    data = &data[1..];
                    *matched = if byte == END[*matched] { *matched + 1 } else { usize::from(byte == END[0]) };
                    if *matched == END.len() {
                        self.state = State::Header { bytes: [0; 14], have: 0 };
                    }
                }
                State::Header { bytes, have } => {
                    let need = header_len(&bytes[..*have]);
                    let take = (need - *have).min(data.len());
                    bytes[*have..*have + take].copy_from_slice(&data[..take]);
                    *have += take;
                    data = &data[take..];
                    if *have == header_len(&bytes[..*have]) {
                        let header = *bytes;
                        self.header(&header)?;
                    }
                }
                State::Payload { left, control, fin } => {
                    let take = (*left).min(data.len() as u64);
                    *left -= take;
                    data = &data[take as usize..];
                    if *left == 0 {
                        let (control, fin) = (*control, *fin);
                        self.frame_read(control, fin);
                    }
                }
            }
        }
        Ok(())
    }

    /// A whole header: hold what its frame will take.
    fn header(&mut self, header: &[u8; 14]) -> Result<(), OverBudget> {
        let fin = header[0] & 0x80 != 0;
        let control = header[0] & 0x08 != 0;
        let len = match header[1] & 0x7f {
            126 => u64::from(u16::from_be_bytes([header[2], header[3]])),
            127 => u64::from_be_bytes([
                header[2], header[3], header[4], header[5], header[6], header[7], header[8], header[9],
            ]),
            short => u64::from(short),
        };
        if len <= self.max_frame {
            let bytes = usize::try_from(len).unwrap_or(usize::MAX);
            if control {
                self.control = Some(self.budget.hold(bytes)?);
            } else {
                self.message.grow(bytes)?;
            }
        }
        self.state = State::Payload { left: len, control, fin };
        if len == 0 {
            self.frame_read(control, fin);
        }
        Ok(())
    }

    /// A frame's last byte was read.
    fn frame_read(&mut self, control: bool, fin: bool) {
        if control {
            self.control = None;
        } else if fin {
            let message = std::mem::replace(&mut self.message, self.budget.none());
            self.whole.push_back(message);
        }
        self.state = State::Header { bytes: [0; 14], have: 0 };
    }
}

/// How long a frame header is, from what has arrived of it (2 bytes until the second is there).
fn header_len(so_far: &[u8]) -> usize {
    let Some(&second) = so_far.get(1) else { return 2 };
    let extended = match second & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    2 + extended + mask
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const HEAD: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";

    /// A server frame (unmasked) with `opcode`, `fin` and a payload of `len` zero bytes.
    fn frame(opcode: u8, fin: bool, len: usize) -> Vec<u8> {
        let mut out = vec![opcode | if fin { 0x80 } else { 0 }];
        match len {
            0..126 => out.push(len as u8),
            126..65_536 => {
                out.push(126);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(127);
                out.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        out.resize(out.len() + len, 0);
        out
    }

    fn frames(budget: &ByteBudget) -> Frames {
        Frames::new(budget.clone(), 1 << 30)
    }

    #[test]
    fn a_frame_is_held_from_its_header_until_its_message_is_handed_over() {
        let budget = ByteBudget::new(1 << 20);
        let mut frames = frames(&budget);
        frames.read(HEAD).unwrap();
        assert_eq!(budget.held(), 0, "the handshake's response is not a frame");
        let wire = frame(0x2, true, 70_000);
        frames.read(&wire[..10]).unwrap();
        assert_eq!(budget.held(), 70_000, "held as soon as the header is read, before its payload");
        frames.read(&wire[10..]).unwrap();
        assert_eq!(budget.held(), 70_000, "held until tungstenite hands the message over");
        let held = frames.handed_over();
        assert_eq!(held.bytes(), 70_000);
        drop(held);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn fragments_add_up_and_control_frames_between_them_are_given_back() {
        let budget = ByteBudget::new(1 << 20);
        let mut frames = frames(&budget);
        let mut wire = HEAD.to_vec();
        wire.extend(frame(0x2, false, 1000));
        wire.extend(frame(0x9, true, 100)); // a ping between fragments
        wire.extend(frame(0x0, false, 2000));
        wire.extend(frame(0xA, true, 0)); // an empty pong
        wire.extend(frame(0x0, true, 3000));
        wire.extend(frame(0x1, true, 5)); // a second message, read in the same chunk
        // One byte at a time: every split of a header or payload is met.
        for byte in &wire {
            frames.read(std::slice::from_ref(byte)).unwrap();
        }
        assert_eq!(budget.held(), 6005);
        assert_eq!(frames.handed_over().bytes(), 6000);
        assert_eq!(budget.held(), 5);
        assert_eq!(frames.handed_over().bytes(), 5);
        assert_eq!(frames.handed_over().bytes(), 0, "nothing more was read whole");
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_frame_over_the_budget_fails_at_its_header() {
        let budget = ByteBudget::new(1 << 20);
        let other = budget.hold(600 << 10).unwrap();
        let mut frames = frames(&budget);
        frames.read(HEAD).unwrap();
        let err = frames.read(&frame(0x2, true, 500 << 10)[..10]).unwrap_err();
        assert_eq!((err.held, err.wanted), (600 << 10, 500 << 10));
        drop(other);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_frame_over_the_message_cap_is_left_to_tungstenite() {
        let budget = ByteBudget::new(1 << 20);
        let mut frames = Frames::new(budget.clone(), 64 << 10);
        frames.read(HEAD).unwrap();
        frames.read(&frame(0x2, true, 100 << 10)[..10]).unwrap();
        assert_eq!(budget.held(), 0, "tungstenite refuses it as too large before reading it");
    }

    #[test]
    fn masked_and_64_bit_headers_are_read_whole() {
        assert_eq!(header_len(&[0x82]), 2);
        assert_eq!(header_len(&[0x82, 0x05]), 2);
        assert_eq!(header_len(&[0x82, 0x85]), 6);
        assert_eq!(header_len(&[0x82, 126]), 4);
        assert_eq!(header_len(&[0x82, 127 | 0x80]), 14);
        let budget = ByteBudget::new(usize::MAX);
        let mut frames = frames(&budget);
        frames.read(HEAD).unwrap();
        let mut header = vec![0x82, 127 | 0x80];
        header.extend_from_slice(&(1u64 << 20).to_be_bytes());
        header.extend_from_slice(&[1, 2, 3, 4]);
        frames.read(&header).unwrap();
        assert_eq!(budget.held(), 1 << 20);
    }
}
