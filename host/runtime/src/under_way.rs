//! The host call a worker's task is in now (a request, a WebSocket receive, a gRPC call), so a task
//! cut short by its timeout or by the end of a run says where it was: `waiting 58.2 s for GET
//! http://…/delay`. Each call sets it on entry and a guard clears it on exit, however the call
//! ends (a dropped future included); reading it is rare, so a plain mutex does.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::plugin_text::PluginText;

/// One worker's current host call.
#[derive(Clone, Default)]
pub(crate) struct UnderWay(Arc<Mutex<Option<(String, Instant)>>>);

/// Clears the call when it ends.
pub(crate) struct Entered(Arc<Mutex<Option<(String, Instant)>>>);

impl UnderWay {
    /// The task enters the call `what` (`GET http://…`).
    pub(crate) fn enter(&self, what: String) -> Entered {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((what, Instant::now()));
        Entered(self.0.clone())
    }

    /// `waiting 2.9 s for WHAT`, its secrets redacted; `None` outside the host's calls.
    pub(crate) fn describe(&self, text: &PluginText) -> Option<String> {
        let now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        now.as_ref()
            .map(|(what, since)| format!("waiting {:.1} s for {}", since.elapsed().as_secs_f64(), text.redact(what)))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}
