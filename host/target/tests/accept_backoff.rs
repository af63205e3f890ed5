//! The accept loop out of file descriptors (`EMFILE`): it pauses instead of spinning, and serves
//! the waiting connection once descriptors are free again. Its own test binary, because it lowers
//! the whole process's descriptor limit.

#![allow(clippy::unwrap_used, reason = "a test that cannot set up must fail loudly")]

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use loadhost_target::Target;

/// `EMFILE`: this process has no descriptor left.
const EMFILE: i32 = 24;

/// Lower this process's descriptor limit, so running out takes a few hundred files, not 20,000.
fn lower_nofile(limit: u32) {
    let status = Command::new("prlimit")
        .args(["--pid", &std::process::id().to_string(), &format!("--nofile={limit}:{limit}")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit --nofile={limit}: {status}");
}

#[test]
fn an_accept_out_of_descriptors_backs_off_then_serves_the_connection() {
    lower_nofile(256);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let target = runtime.block_on(Target::bind("127.0.0.1:0".parse().unwrap(), None)).unwrap();
    let (addr, stats) = (target.local_addr().unwrap(), target.stats());
    runtime.spawn(target.serve(std::future::pending()));

    // Hold every free descriptor but one; the client's socket takes that one, so the target's
    // accept of it fails with EMFILE for as long as the files are held (bounded: 256 at most).
    let mut held = Vec::new();
    for _ in 0..256 {
        match File::open("/dev/null") {
            Ok(file) => held.push(file),
            Err(err) if err.raw_os_error() == Some(EMFILE) => break,
            Err(err) => panic!("opening /dev/null: {err}"),
        }
    }
    held.pop();
    let mut client = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // Pauses of 10, 20, 40, … ms: about 7 attempts in 0.7 s, where a spinning loop makes thousands.
    let errors = stats.accept_errors.load(Ordering::Relaxed);
    assert!((2..=12).contains(&errors), "{errors} failed accepts in 0.7 s");

    drop(held);
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    client.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    client.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200") && response.ends_with("ok\n"), "{response}");
    assert_eq!(stats.connections.load(Ordering::Relaxed), 1);
}
