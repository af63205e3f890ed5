//! The built-in target as a child process, for tests that need a real HTTP server.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// A `loadhost target` child process, killed on drop.
pub struct TargetProcess {
    child: Child,
    /// `http://127.0.0.1:PORT` (or https).
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub authority: String,
}

impl TargetProcess {
    pub fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadhost"))
            .args(["target", "--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the target starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the target prints its URL");
        let url = line.trim().strip_prefix("listening on ").expect("'listening on URL'").to_owned();
        let authority = url.split_once("://").map(|(_, a)| a.to_owned()).expect("a URL");
        Self { child, url, authority }
    }

    /// The target's own counts of requests and connections.
    pub fn stats(&self) -> Value {
        let mut stream = TcpStream::connect(&self.authority).expect("connect to the target");
        write!(stream, "GET /stats HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.authority).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b).expect("a body");
        serde_json::from_str(body).expect("JSON stats")
    }
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
