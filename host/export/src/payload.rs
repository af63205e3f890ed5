//! What a format hands the push task: a body and how to label it on the wire.

/// An encoded snapshot, ready to POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// Other headers the receiver needs (`Content-Encoding`, a protocol version).
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body.
    pub body: Vec<u8>,
}
