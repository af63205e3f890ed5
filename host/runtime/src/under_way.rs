//! The host call a worker's task is in now (a request, a WebSocket receive, a gRPC call), so a task
//! cut short by its timeout or by the end of a run says where it was: `waiting 58.2 s for GET
//! http://…/delay`. Each call sets it on entry and a guard clears it on exit, however the call
//! ends (a dropped future included); reading it is rare, so a plain mutex does.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::plugin_text::PluginText;

/// The call and since when; `since` is `None` outside the host's calls. The text's buffer is kept
/// from call to call, so entering a call on the per-request path allocates nothing.
#[derive(Default)]
struct Call {
    what: String,
    since: Option<Instant>,
}

/// One worker's current host call.
#[derive(Clone, Default)]
pub(crate) struct UnderWay(Arc<Mutex<Call>>);

/// Clears the call when it ends.
pub(crate) struct Entered(Arc<Mutex<Call>>);

impl UnderWay {
    /// The task enters the call `what` (`GET http://…`).
    pub(crate) fn enter(&self, what: std::fmt::Arguments<'_>) -> Entered {
        let mut call = self.0.lock().unwrap_or_else(|p| p.into_inner());
        call.what.clear();
        // Writing into a String cannot fail.
        let _ = call.what.write_fmt(what);
        call.since = Some(Instant::now());
        drop(call);
        Entered(self.0.clone())
    }

    /// `waiting 2.9 s for WHAT`, its secrets redacted; `None` outside the host's calls.
    pub(crate) fn describe(&self, text: &PluginText) -> Option<String> {
        let call = self.0.lock().unwrap_or_else(|p| p.into_inner());
        call.since
            .map(|since| format!("waiting {:.1} s for {}", since.elapsed().as_secs_f64(), text.redact(&call.what)))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).since = None;
    }
}
