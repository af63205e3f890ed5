//! `--control ADDR`: the live control API.
//!
//! - `GET /v1/status`: a JSON snapshot (state, rate, workers resident/idle/max, in flight, the
//!   gate, retries pending, every counter through the last interval).
//! - `PATCH /v1/status` with any of `{"rate": 500, "max_workers": 80, "max_in_flight": 16,
//!   "paused": true}`: applied within 100 ms; answers the status. A `max_workers` above the run's
//!   ceiling (`--max-workers`, what its instances were sized for at start) is refused with 400.
//! - `POST /v1/stop`: stop generating; tasks not yet started end as interrupted (exit 130).
//!
//! It listens on loopback unless `--control-token` is given; with a token every request needs
//! `Authorization: Bearer TOKEN`. A PATCH body is read up to [`BODY_CAP`] (413 past it) and for
//! at most 10 s (408); connections are capped and timed out by `http_serve`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use loadhost_config::RunSettings;
use loadhost_engine::{Changes, Control, ControlError, Plan};

use super::request_body;

/// The largest PATCH body read: a change is a few dozen bytes of JSON. Checked while reading, so
/// a bigger body costs at most this (and a chunk) before it is refused with 413.
pub const BODY_CAP: usize = 16 * 1024;

/// The longest a PATCH body may take to arrive before it is refused with 408.
const BODY_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Bind the API (before any load, so a bad address fails fast): loopback, or anything with a token.
pub fn bind(addr: SocketAddr, token: Option<&str>) -> anyhow::Result<std::net::TcpListener> {
    if !addr.ip().is_loopback() && token.is_none() {
        anyhow::bail!("--control {addr}: not a loopback address; binding elsewhere needs --control-token");
    }
    super::http_serve::bind("control", addr)
}

/// The handle for `run`. Its crew may not grow past the ceiling it was planned with: the instance
/// pool and the dispatch channels were sized for it at start, so growth beyond would fail and show
/// as drops. The refusal names the flag that sets the ceiling.
pub fn handle(run: &RunSettings) -> Control {
    let plans = &run.plans;
    let flag = if plans.iter().any(Plan::is_open) {
        "--max-workers"
    } else if plans.iter().any(|p| p.worker_curve().is_some()) {
        "--stage"
    } else {
        "--workers"
    };
    Control::with_ceiling(run.max_workers, flag)
}

/// Serve `control` on `listener` until the process ends.
pub async fn serve(listener: std::net::TcpListener, control: Arc<Control>, token: Option<String>) {
    let token: Option<Arc<str>> = token.map(Arc::from);
    super::http_serve::serve(listener, "control API", super::http_serve::LIMITS, move |req| {
        answer(req, control.clone(), token.clone())
    })
    .await;
}

fn json(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response<Full<Bytes>> {
    json(status, &serde_json::json!({ "error": message.to_string() }))
}

/// Whether `presented` is `Bearer TOKEN`, compared in constant time, so response times say nothing
/// about how much of a guess was right.
pub(crate) fn authorized(presented: Option<&[u8]>, token: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    let Some(guess) = presented.and_then(|p| p.strip_prefix(b"Bearer ")) else { return false };
    // `ct_eq` on slices of different lengths is false at once; the length is not the secret.
    bool::from(guess.ct_eq(token.as_bytes()))
}

fn status_json(control: &Control) -> serde_json::Value {
    serde_json::to_value(control.status()).unwrap_or_default()
}

async fn answer(
    req: Request<Incoming>,
    control: Arc<Control>,
    token: Option<Arc<str>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if let Some(token) = token
        && !authorized(req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()), &token)
    {
        return Ok(error(StatusCode::UNAUTHORIZED, "missing or wrong Authorization: Bearer token"));
    }
    let response = match (req.method().clone(), req.uri().path()) {
        (Method::GET, "/v1/status") => json(StatusCode::OK, &status_json(&control)),
        (Method::PATCH, "/v1/status") => {
            let (head, body) = req.into_parts();
            let body = match request_body::read(&head.headers, body, BODY_CAP, BODY_TIME).await {
                Ok(body) => body,
                Err(err) => return Ok(error(err.status(), err)),
            };
            match serde_json::from_slice::<Changes>(&body) {
                Err(err) => error(
                    StatusCode::BAD_REQUEST,
                    format!("expected a JSON object with rate, max_workers, max_in_flight or paused: {err}"),
                ),
                Ok(changes) => match control.apply(changes) {
                    Ok(()) => json(StatusCode::OK, &status_json(&control)),
                    Err(ControlError::Over) => error(StatusCode::CONFLICT, ControlError::Over),
                    Err(err) => error(StatusCode::BAD_REQUEST, err),
                },
            }
        }
        (Method::POST, "/v1/stop") => {
            control.request_stop();
            json(StatusCode::ACCEPTED, &serde_json::json!({ "stopping": true }))
        }
        (_, "/v1/status" | "/v1/stop") => {
            error(StatusCode::METHOD_NOT_ALLOWED, "use GET or PATCH /v1/status, POST /v1/stop")
        }
        _ => error(StatusCode::NOT_FOUND, "not found: GET|PATCH /v1/status, POST /v1/stop"),
    };
    Ok(response)
}

#[cfg(test)]
mod tests {
    use loadhost_config::RunOptions;
    use loadhost_config::units::{Dur, Rate};

    use super::*;

    #[test]
    fn the_handle_refuses_growth_past_the_planned_ceiling_naming_its_flag() {
        let options = RunOptions {
            rate: Some(Rate(10.0)),
            duration: Some(Dur(std::time::Duration::from_secs(1))),
            max_workers: Some(100),
            ..RunOptions::default()
        };
        let run = loadhost_config::resolve(options).unwrap();
        let err = handle(&run).apply(Changes { max_workers: Some(500), ..Changes::default() }).unwrap_err();
        assert_eq!(
            err.to_string(),
            "max_workers 500 is above this run's ceiling 100 (set at start with --max-workers)"
        );
        assert!(handle(&run).apply(Changes { max_workers: Some(100), ..Changes::default() }).is_ok());
    }

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        assert!(authorized(Some(b"Bearer s3cret"), "s3cret"));
        for wrong in [&b"Bearer s3cre"[..], b"Bearer s3cretX", b"bearer s3cret", b"s3cret", b""] {
            assert!(!authorized(Some(wrong), "s3cret"), "{}", String::from_utf8_lossy(wrong));
        }
        assert!(!authorized(None, "s3cret"));
    }
}
