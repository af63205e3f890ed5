//! A plain HTTP/1.1 client over `TcpStream`, enough to talk to the receivers: one request per
//! connection (`Connection: close`), a bounded wait for the answer, chunked bodies decoded.

use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// How long an answer may take before the request fails (a receiver that hangs fails the test).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// An answer: its status, its header lines and its (de-chunked) body.
pub struct Response {
    pub status: u16,
    /// The header lines, after the status line.
    head: String,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The value of the header `name` (any case), when it is there.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("a JSON body was expected ({e}), got {}: {}", self.status, self.text()))
    }
}

/// `method target` on `addr`, with `body` of `content_type` when the body is not empty.
pub fn request(addr: SocketAddr, method: &str, target: &str, content_type: &str, body: &[u8]) -> io::Result<Response> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(ANSWER_WITHIN))?;
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Type: {content_type}\r\nContent-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse(&raw)
}

pub fn get(addr: SocketAddr, target: &str) -> io::Result<Response> {
    request(addr, "GET", target, "", b"")
}

pub fn post(addr: SocketAddr, target: &str, content_type: &str, body: &[u8]) -> io::Result<Response> {
    request(addr, "POST", target, content_type, body)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn parse(raw: &[u8]) -> io::Result<Response> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| invalid("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let (status_line, head) = head.split_once("\r\n").unwrap_or((&head, ""));
    let status =
        status_line.split(' ').nth(1).and_then(|code| code.parse().ok()).ok_or_else(|| invalid("no status code"))?;
    let rest = &raw[end + 4..];
    let mut response = Response { status, head: head.to_owned(), body: Vec::new() };
    let chunked = response.header("transfer-encoding").is_some_and(|coding| coding.eq_ignore_ascii_case("chunked"));
    response.body = if chunked { dechunk(rest)? } else { rest.to_vec() };
    Ok(response)
}

/// A chunked body's bytes: each chunk is `SIZE-IN-HEX\r\nBYTES\r\n`, until a chunk of size 0.
fn dechunk(mut rest: &[u8]) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or_else(|| invalid("a chunk without its size"))?;
        let size = String::from_utf8_lossy(&rest[..line_end]);
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid("a chunk size that is not hex"))?;
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(line_end + 2..line_end + 2 + size).ok_or_else(|| invalid("a chunk cut short"))?;
        body.extend_from_slice(chunk);
        rest = rest.get(line_end + 4 + size..).ok_or_else(|| invalid("a chunk cut short"))?;
    }
}

/// `text` percent-encoded for a query string or a form (`application/x-www-form-urlencoded`).
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
