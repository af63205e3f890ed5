//! What the user grants a plugin: its environment (`-e`), the directories it may read (`--dir`), and
//! the network through the process's HTTP settings and allow-list (`--allow-host`).

use std::sync::Arc;

use crate::http::{HttpClient, HttpOptions};
use crate::plugin_text::PluginText;

/// What the user grants a plugin: its whole environment (`-e`), the directories it may read
/// (`--dir`), and the network through the run's HTTP client and its allow-list (`--allow-host`).
#[derive(Clone)]
pub struct Grants {
    /// `KEY=VALUE` pairs.
    pub env: Vec<(String, String)>,
    /// Host directories, read-only, and where the plugin sees each.
    pub dirs: Vec<(std::path::PathBuf, String)>,
    /// The run's HTTP client; its allow-list also governs wasi:sockets.
    pub http: Arc<HttpClient>,
    /// The run's secrets (the environment's values and the tokens), kept out of everything the
    /// plugin says that reaches an output.
    pub text: Arc<PluginText>,
}

impl Grants {
    /// No environment, no files and no network.
    pub fn none() -> anyhow::Result<Self> {
        let http = HttpClient::new(&HttpOptions::default())?;
        Ok(Self { env: Vec::new(), dirs: Vec::new(), http, text: Arc::default() })
    }
}
