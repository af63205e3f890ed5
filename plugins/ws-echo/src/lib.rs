//! One WebSocket connection per worker, opened by its first task and kept by the next ones (a
//! worker is its own instance, so a `thread_local!` is per worker). Each task sends `MESSAGES`
//! text messages (default 10) to `TARGET_URL` (default `ws://127.0.0.1:8080/ws/echo`) and checks
//! that each comes back as sent (check `echo matches`). A lost or closed connection is forgotten,
//! so the next task connects again, and the task is retryable; a denied host fails it.

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::Duration;

use loadhost_sdk::metrics::check;
use loadhost_sdk::ws::{self, Connection, Message, WsError};
use loadhost_sdk::{Doer, Task, TaskError, TaskResult, failed, retryable};

struct WsEcho;

loadhost_sdk::declare_metrics!("echo matches:check");
loadhost_sdk::declare_options!(
    static OPTIONS =
        "TARGET_URL:url=ws://127.0.0.1:8080/ws/echo 'the WebSocket echo server'",
        "MESSAGES:int=10 'messages sent and awaited per task'",
);

/// How long one echo may take before the task gives up on the connection.
const ECHO_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    static CONNECTION: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| OPTIONS.get("TARGET_URL"))
}

fn messages() -> u32 {
    static MESSAGES: OnceLock<u32> = OnceLock::new();
    *MESSAGES.get_or_init(|| OPTIONS.get("MESSAGES"))
}

fn why(err: &WsError) -> TaskError {
    match err {
        WsError::Denied(_) | WsError::InvalidRequest(_) => failed(err.to_string()),
        _ => retryable(err.to_string()),
    }
}

fn echo(conn: &mut Connection, text: &str) -> Result<bool, WsError> {
    conn.send_text(text)?;
    match conn.receive(Some(ECHO_TIMEOUT))? {
        // The peer ended the session: connect again next time.
        Message::Close { .. } => Err(WsError::Closed),
        message => Ok(message == Message::Text(text.to_owned())),
    }
}

impl Doer for WsEcho {
    fn do_task(task: Task) -> TaskResult {
        CONNECTION.with_borrow_mut(|slot| {
            if slot.is_none() {
                *slot = Some(ws::connect(url()).map_err(|err| why(&err))?);
            }
            let conn = slot.as_mut().ok_or_else(|| failed("no connection"))?;
            for k in 0..messages() {
                let text = format!("w{}-i{}-m{k}", task.worker_id, task.iteration);
                match echo(conn, &text) {
                    Ok(same) if check("echo matches", same, &[]) => {}
                    Ok(_) => return Err(failed(format!("the echo of {text:?} differed"))),
                    Err(err) => {
                        // Timeouts included: an echo that is late leaves the stream out of step.
                        *slot = None;
                        return Err(why(&err));
                    }
                }
            }
            Ok(())
        })
    }
}

loadhost_sdk::export!(WsEcho);
