//! `loadhost target`: the built-in HTTP target, for demos, tests and benchmarks on loopback.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use loadhost_config::units::Dur;
use loadhost_target::Target;

use crate::exit::Failure;

/// What each route answers, shown after `loadhost target --help`'s options. Routes match on the
/// path alone, whatever the method; `loadhost_target::routes` is the code, and its limits are
/// read from there so the two cannot drift apart.
fn routes_help() -> String {
    use loadhost_target::routes::{MAX_BYTES, MAX_DELAY};
    format!(
        "Routes (any method):
  /                200, body \"ok\\n\"
  /delay?ms=N      200, body \"ok\\n\", after N milliseconds (at most {delay} s)
  /status?code=N   status N (100..=999), body \"status N\\n\"; 400 when N is missing or out of range
  /bytes?n=N       200 with N bytes of 'x', streamed 64 KiB at a time (at most {gib} GiB);
                   &cut=M announces N and closes the connection after M (a body cut short)
  /echo            200 with the request's body and its content-type (text/plain when it has none)
  /headers         200 with the request's headers as a JSON object (lower-case names)
  /redirect?n=N&to=PATH&code=C   N redirects (status C, default 302; N default 1), then to PATH
  /cookies/set?k=v 200 with Set-Cookie: k=v for each pair; /cookies echoes the Cookie header
  /gzip?bytes=N    200, Content-Encoding: gzip, N bytes of text (x-decoded-length says N)
  /gzip-bomb?mb=N  200, Content-Encoding: gzip, a small stream that decodes to N MiB of zeros
  /ws/echo?delay=MS  WebSocket (HTTP/1.1 upgrade): every text or binary message echoed, after MS ms
  /ws/flood?size=BYTES&count=N  WebSocket: N binary messages of BYTES (default 1 MiB, at most {msg} MiB;
                   N unlimited), as fast as the client reads; never answers a ping or a close
  /ws/partial?size=BYTES&sent=BYTES  WebSocket: one binary frame of size BYTES announced (at most
                   {gib} GiB), only the first sent BYTES of it sent; never answers a ping or a close
  gRPC (content-type application/grpc, h2c or h2 under TLS), raw message bytes echoed:
    /loadhost.target.Echo/Unary   one message back
    /loadhost.target.Echo/Stream  bidirectional: each message back as it arrives, status 0 at the end
    metadata x-loadhost-status: N (and x-loadhost-message) ends the call with status N;
    x-loadhost-delay-ms: N waits first; x-loadhost-truncate: 1 cuts a unary echo short (its
    prefix announces the whole message, half of it follows, then status 0); an unknown method
    gets status 12
  /stats           200, JSON {{\"requests\": R, \"connections\": C, \"accept_errors\": E, ...}}: the requests
                   answered (every route, /stats included), the TCP connections accepted and the
                   accepts that failed (out of file descriptors: the target then pauses, 10 ms
                   doubling to 1 s, rather than spin) since the target started; ws_sessions,
                   ws_msgs_received, ws_msgs_sent, grpc_calls, grpc_msgs_received, grpc_msgs_sent
                   and grpc_status (calls by final status code)
  anything else    404, body \"not found\\n\"",
        delay = MAX_DELAY.as_secs(),
        gib = MAX_BYTES >> 30,
        msg = loadhost_target::MAX_MESSAGE >> 20,
    )
}

/// Arguments of `loadhost target`.
#[derive(Debug, Args)]
#[command(after_help = routes_help())]
pub struct TargetArgs {
    /// Where to listen; port 0 picks a free port (the address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    addr: SocketAddr,

    /// Serve https with a fresh self-signed certificate for localhost/127.0.0.1/::1, written (PEM)
    /// to FILE so clients can trust it with --ca-cert FILE.
    #[arg(long, value_name = "FILE")]
    tls_self_signed: Option<PathBuf>,

    /// With --tls-self-signed: refuse clients (at the TLS handshake) without a certificate signed
    /// by a CA in this PEM file (mTLS; loadhost presents one with --client-cert/--client-key).
    #[arg(long, value_name = "CA.pem", requires = "tls_self_signed")]
    require_client_cert: Option<PathBuf>,

    /// Stop after this long (default: run until interrupted).
    #[arg(short = 'd', long, value_name = "DURATION")]
    duration: Option<Dur>,
}

/// Serve until interrupted (or for `--duration`).
pub fn run(args: TargetArgs) -> Result<ExitCode, Failure> {
    let tls = match &args.tls_self_signed {
        Some(path) => {
            let cert = match &args.require_client_cert {
                Some(ca) => loadhost_target::tls::self_signed_requiring_client_cert(ca).map_err(Failure::usage)?,
                None => loadhost_target::tls::self_signed().map_err(Failure::runtime)?,
            };
            std::fs::write(path, &cert.cert_pem)
                .with_context(|| format!("--tls-self-signed {}: cannot write the file", path.display()))
                .map_err(Failure::usage)?;
            Some(cert.config)
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(Failure::runtime)?;
    runtime.block_on(async {
        let target = Target::bind(args.addr, tls).await.map_err(Failure::usage)?;
        let url = target.url().map_err(Failure::runtime)?;
        // The first line on stdout is the URL, so scripts can start a target on port 0 and read it
        // (flushed at once; a reader that has gone away does not stop the target).
        crate::stdout::write(|out| writeln!(out, "listening on {url}"))?;
        let duration = args.duration.map(|d| d.0);
        let stop = async move {
            match duration {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = target.serve(stop) => {}
            _ = tokio::signal::ctrl_c() => {}
            () = terminate() => {}
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// SIGTERM, so `kill` stops the target cleanly.
async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}
