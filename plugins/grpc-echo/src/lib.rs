//! gRPC calls to the echo service of `loadhost target` at `TARGET_URL` (default
//! `http://127.0.0.1:8080`), with a protobuf message encoded by prost in the plugin (the host
//! sees only bytes). `MODE=unary` (the default): one `/loadhost.target.Echo/Unary` call per task;
//! `MODE=stream`: one bidi `/loadhost.target.Echo/Stream` call per task with `MESSAGES` messages
//! (default 100), each echo awaited before the next send. Every echo is checked (check `echo
//! matches`). `GRPC_STATUS=N` asks the target to end each call with status N (metadata
//! `x-loadhost-status`); `GRPC_TRUNCATE=1` asks it to cut each unary echo short (metadata
//! `x-loadhost-truncate`), as a broken server would. Status 14 (UNAVAILABLE) and network failures
//! are retryable, other statuses fail the task.

use std::sync::OnceLock;
use std::time::Duration;

use loadhost_sdk::grpc::{self, Call, GrpcError};
use loadhost_sdk::metrics::check;
use loadhost_sdk::{Doer, Task, TaskError, TaskResult, abort, failed, retryable};
use prost::Message as _;

struct GrpcEcho;

loadhost_sdk::declare_metrics!("echo matches:check");
loadhost_sdk::declare_options!(
    static OPTIONS =
        "TARGET_URL:url=http://127.0.0.1:8080 'the gRPC server'",
        "MODE:string=unary 'unary: one unary call per task; stream: one bidi stream of MESSAGES echoes'",
        "GRPC_STATUS:string 'ask the target to end each call with this status'",
        "GRPC_TRUNCATE:bool=false 'ask the target to cut each unary echo short'",
        "MESSAGES:int=100 'messages per stream (MODE=stream)'",
);

/// `message EchoRequest { string message = 1; }`
#[derive(Clone, PartialEq, prost::Message)]
struct EchoRequest {
    #[prost(string, tag = "1")]
    message: String,
}

const UNARY: &str = "/loadhost.target.Echo/Unary";
const STREAM: &str = "/loadhost.target.Echo/Stream";
const TIMEOUT: Duration = Duration::from_secs(10);

/// What `-e` set, read once per worker.
struct Settings {
    target: String,
    /// `MODE`: `unary` or `stream` (anything else aborts the run).
    mode: String,
    status: Option<String>,
    truncate: bool,
    messages: u32,
}

fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| Settings {
        target: OPTIONS.get("TARGET_URL"),
        mode: OPTIONS.get("MODE"),
        status: OPTIONS.get::<Option<String>>("GRPC_STATUS").filter(|s| !s.is_empty()),
        truncate: OPTIONS.get("GRPC_TRUNCATE"),
        messages: OPTIONS.get("MESSAGES"),
    })
}

fn why(err: GrpcError) -> TaskError {
    match err.code() {
        Some(grpc::code::UNAVAILABLE) => retryable(err.to_string()),
        _ => failed(err.to_string()),
    }
}

/// The call with the metadata that asks the target for a failure, if any.
fn with_status(call: Call) -> Call {
    let call = if settings().truncate { call.metadata("x-loadhost-truncate", "1") } else { call };
    match &settings().status {
        Some(status) => call.metadata("x-loadhost-status", status.as_str()),
        None => call,
    }
}

fn same(sent: &str, echoed: &[u8]) -> bool {
    let echoed = EchoRequest::decode(echoed).map(|m| m.message).unwrap_or_default();
    check("echo matches", echoed == sent, &[])
}

fn unary(task: &Task) -> TaskResult {
    let text = format!("w{}-i{}", task.worker_id, task.iteration);
    let request = EchoRequest { message: text.clone() }.encode_to_vec();
    let call = with_status(grpc::call(&settings().target, UNARY, &request).timeout(TIMEOUT));
    let response = call.send().map_err(why)?;
    if same(&text, &response.message) { Ok(()) } else { Err(failed(format!("the echo of {text:?} differed"))) }
}

fn stream(task: &Task) -> TaskResult {
    let call = with_status(grpc::stream(&settings().target, STREAM).timeout(TIMEOUT));
    let mut stream = call.open().map_err(why)?;
    for k in 0..settings().messages {
        let text = format!("w{}-i{}-m{k}", task.worker_id, task.iteration);
        stream.send(&EchoRequest { message: text.clone() }.encode_to_vec()).map_err(why)?;
        let echoed = stream.receive(Some(TIMEOUT)).map_err(why)?.ok_or_else(|| failed("the stream ended early"))?;
        if !same(&text, &echoed) {
            return Err(failed(format!("the echo of {text:?} differed")));
        }
    }
    stream.close_send().map_err(why)?;
    match stream.receive(Some(TIMEOUT)).map_err(why)? {
        None => Ok(()),
        Some(_) => Err(failed("a message after the last echo")),
    }
}

impl Doer for GrpcEcho {
    fn do_task(task: Task) -> TaskResult {
        match settings().mode.as_str() {
            "unary" => unary(&task),
            "stream" => stream(&task),
            other => Err(abort(format!("MODE={other}: expected unary or stream"))),
        }
    }
}

loadhost_sdk::export!(GrpcEcho);
