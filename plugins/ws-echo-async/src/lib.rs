//! The async twin of `ws-echo`: many tasks in flight in one instance, each awaiting its
//! connection rather than holding the instance. Each task sends `MESSAGES` text messages (default
//! 10) to `TARGET_URL` (default `ws://127.0.0.1:8080/ws/echo`) and checks that each comes back as
//! sent (check `echo matches`). A lost or closed connection is forgotten, so the worker's next task
//! connects again, and the task is retryable; a denied host fails it.
//!
//! One connection per worker, kept across its tasks: the instance is shared by many workers, so
//! the connections are kept in a map keyed by `task.worker_id`. A task takes its worker's
//! connection out of the map and puts it back when done; no borrow of the map is held across an
//! `.await` (another task would find it borrowed and panic).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use loadhost_sdk::metrics::check;
use loadhost_sdk::ws::nonblocking::{self, Connection};
use loadhost_sdk::ws::{Message, WsError};
use loadhost_sdk::{AsyncDoer, Task, TaskError, TaskResult, failed, retryable};

struct WsEchoAsync;

loadhost_sdk::declare_metrics!("echo matches:check");
loadhost_sdk::declare_options!(
    static OPTIONS =
        "TARGET_URL:url=ws://127.0.0.1:8080/ws/echo 'the WebSocket echo server'",
        "MESSAGES:int=10 'messages sent and awaited per task'",
);

/// How long one echo may take before the task gives up on the connection.
const ECHO_TIMEOUT: Duration = Duration::from_secs(10);

thread_local! {
    /// Each worker's connection while none of its tasks runs (a running task holds its own). A
    /// `BTreeMap`: a `HashMap`'s random seed would make the plugin import `wasi:random` for it.
    static CONNECTIONS: RefCell<BTreeMap<u32, Connection>> = const { RefCell::new(BTreeMap::new()) };
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

async fn echo(conn: &mut Connection, text: &str) -> Result<bool, WsError> {
    conn.send_text(text).await?;
    match conn.receive(Some(ECHO_TIMEOUT)).await? {
        // The peer ended the session: connect again next time.
        Message::Close { .. } => Err(WsError::Closed),
        message => Ok(message == Message::Text(text.to_owned())),
    }
}

/// The worker's kept connection, or a new one.
async fn take_connection(worker_id: u32) -> Result<Connection, TaskError> {
    // The borrow ends with this statement, before any `.await`.
    let kept = CONNECTIONS.with_borrow_mut(|connections| connections.remove(&worker_id));
    match kept {
        Some(conn) => Ok(conn),
        None => nonblocking::connect(url()).await.map_err(|err| why(&err)),
    }
}

/// Keep `conn` for the worker's next task.
fn put_back(worker_id: u32, conn: Connection) {
    CONNECTIONS.with_borrow_mut(|connections| connections.insert(worker_id, conn));
}

impl AsyncDoer for WsEchoAsync {
    async fn do_task(task: Task) -> TaskResult {
        let mut conn = take_connection(task.worker_id).await?;
        for k in 0..messages() {
            let text = format!("w{}-i{}-m{k}", task.worker_id, task.iteration);
            match echo(&mut conn, &text).await {
                Ok(same) if check("echo matches", same, &[]) => {}
                Ok(_) => {
                    // The stream is still in step: the connection stays the worker's.
                    put_back(task.worker_id, conn);
                    return Err(failed(format!("the echo of {text:?} differed")));
                }
                // Timeouts included: an echo that is late leaves the stream out of step, so the
                // connection is dropped here (forgotten) and the next task connects again.
                Err(err) => return Err(why(&err)),
            }
        }
        put_back(task.worker_id, conn);
        Ok(())
    }
}

loadhost_sdk::export_async!(WsEchoAsync);
