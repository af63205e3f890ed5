//! The control API and the OpenMetrics endpoint, bound before any load.

use std::net::TcpListener;

use loadhost_config::RunSettings;
use loadhost_runtime::Grants;

use super::{control_api, metrics_api};
use crate::exit::Failure;

/// The control API and the OpenMetrics endpoint, bound before any load so a bad or busy address
/// fails fast (exit 2) and leaves no output files behind.
pub(super) struct Endpoints {
    /// `--control`.
    pub(super) control: Option<TcpListener>,
    /// `--metrics-addr`.
    pub(super) metrics: Option<TcpListener>,
}

impl Endpoints {
    pub(super) fn bind(settings: &RunSettings, grants: &Grants) -> Result<Self, Failure> {
        let control = match settings.options.control {
            Some(addr) => {
                let listener =
                    control_api::bind(addr, settings.options.control_token.as_deref()).map_err(Failure::usage)?;
                tracing::info!("control API on http://{addr}/v1/status");
                Some(listener)
            }
            None => None,
        };
        let metrics = match settings.options.metrics_addr {
            Some(addr) => {
                let listener =
                    metrics_api::bind(addr, settings.options.metrics_token.as_deref()).map_err(Failure::usage)?;
                tracing::info!("OpenMetrics on http://{addr}/metrics");
                Some(listener)
            }
            None => None,
        };
        // Whatever the allow-list says, the plugin may not reach the host's own listeners.
        for (listener, flag) in [(&control, "--control"), (&metrics, "--metrics-addr")] {
            if let Some(addr) = listener.as_ref().and_then(|l| l.local_addr().ok()) {
                grants.http.refuse_listener(addr, flag);
            }
        }
        Ok(Self { control, metrics })
    }
}
