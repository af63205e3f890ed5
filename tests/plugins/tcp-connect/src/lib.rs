//! Opens a raw TCP connection (std::net, which is wasi:sockets on wasm32-wasip2) to `TARGET_ADDR`
//! and sends one HTTP request by hand: the allow-list must govern sockets as it governs HTTP.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::OnceLock;

use loadhost_sdk::{Doer, Task, TaskResult, config::env_or, failed};

struct TcpConnect;

fn addr() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| env_or("TARGET_ADDR", "127.0.0.1:8080".to_owned()))
}

impl Doer for TcpConnect {
    fn do_task(_task: Task) -> TaskResult {
        let mut stream = TcpStream::connect(addr()).map_err(|err| failed(format!("connect {}: {err}", addr())))?;
        let request = format!("GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", addr());
        stream.write_all(request.as_bytes()).map_err(|err| failed(format!("write: {err}")))?;
        let mut response = String::new();
        stream.read_to_string(&mut response).map_err(|err| failed(format!("read: {err}")))?;
        if response.starts_with("HTTP/1.1 200") {
            Ok(())
        } else {
            Err(failed(format!("unexpected answer: {response:?}")))
        }
    }
}

loadhost_sdk::export!(TcpConnect);
