//! The run's metrics for other systems (`--out prometheus-rw=URL`, `otlp=URL`, `influxdb=URL`,
//! and the scrapes of `--metrics-addr`): on the outputs' thread, each interval is folded into the
//! run's series ([`RunSeries`]) and the snapshot handed to the push thread and published to the
//! scrape endpoint; at the end the final snapshot (the thresholds' verdicts in) is published as
//! final and pushed, and the run waits for the push, for at most [`FLUSH_LIMIT`].

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use loadhost_config::RunSettings;
use loadhost_config::criteria::{HistogramsArg, OutSpec, PushKind, redact_url};
use loadhost_export::formats::Format;
use loadhost_export::push::{Pusher, Receiver};
use loadhost_export::remote_write::HistogramStyle;
use loadhost_export::{Budget, Labels, RunSeries, Scrape};
use loadhost_metrics::{IntervalRow, ThresholdResult, Window};
use loadhost_output::summary::{ExportReceiver, Exports as ExportsSummary};

use crate::exit::Failure;

/// The longest the run waits at its end for the receivers to take the final push.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// The run's series, the push thread and the scrape endpoint's state.
pub struct Exports {
    series: RunSeries,
    /// The push thread, when the run has `--out` receivers.
    pusher: Option<Pusher>,
    /// What `--metrics-addr` serves, when it is given.
    scrape: Option<Arc<Scrape>>,
    run_id: String,
}

impl Exports {
    /// Start pushing to the run's `--out` receivers and publishing to `scrape`; `None` when it has
    /// neither.
    pub fn start(
        settings: &RunSettings,
        run_id: Option<String>,
        scrape: Option<Arc<Scrape>>,
    ) -> Result<Option<Self>, Failure> {
        let o = &settings.options;
        let style = match o.out_histograms.unwrap_or_default() {
            HistogramsArg::Native => HistogramStyle::Native,
            HistogramsArg::Classic => HistogramStyle::Classic,
        };
        let receivers: Vec<Receiver> = o
            .out
            .iter()
            .filter_map(|out| match out {
                OutSpec::Push(kind, url) => Some((*kind, url)),
                OutSpec::Json(_) => None,
            })
            .map(|(kind, url)| Receiver {
                name: format!("{}={}", kind.name(), redact_url(url)),
                url: url.clone(),
                encode: Box::new(match kind {
                    PushKind::PrometheusRw => Format::RemoteWrite(style),
                    PushKind::Otlp => Format::Otlp,
                    PushKind::Influxdb => Format::Influx,
                }),
            })
            .collect();
        if receivers.is_empty() && scrape.is_none() {
            return Ok(None);
        }
        let run_id = run_id.unwrap_or_else(generated_run_id);
        let named = if o.run_id.is_some() { "" } else { " (--run-id names it)" };
        let pusher = if receivers.is_empty() {
            tracing::info!("metrics endpoint: the run's series are labelled run_id {run_id}{named}");
            None
        } else {
            tracing::info!(
                "pushing metrics to {} as run_id {run_id}{named}",
                receivers.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "),
            );
            let interval = settings.interval();
            let every = o.out_interval.map_or(1, |d| (d.0.as_nanos() / interval.as_nanos().max(1)) as u64);
            let pusher = Pusher::start(receivers, every, o.out_token.clone())
                .map_err(|err| Failure::runtime(anyhow::anyhow!("starting the push thread: {err}")))?;
            Some(pusher)
        };
        let series = RunSeries::new(run_labels(settings, &run_id), SystemTime::now(), Budget::new(o.out_url_labels));
        Ok(Some(Self { series, pusher, scrape, run_id }))
    }

    /// A scenario's load started.
    pub fn started(&mut self, scenario: &str, at: SystemTime) {
        self.series.started(scenario, at);
    }

    /// One interval: folded in, and its snapshot handed to the push thread and the scrape
    /// endpoint.
    pub fn interval(&mut self, row: &IntervalRow, window: &Window) {
        let snapshot = self.series.fold(row, window);
        if let Some(pusher) = self.pusher.as_mut() {
            pusher.offer(&snapshot);
        }
        if let Some(scrape) = &self.scrape {
            scrape.publish(snapshot);
        }
    }

    /// A threshold's standing on the run so far.
    pub fn threshold(&mut self, expr: &str, passing: bool) {
        self.series.threshold(expr, passing);
    }

    /// The final snapshot, with the run's verdicts on its thresholds: the scrape endpoint's final
    /// figures, and the final push; what each receiver got (`None` without receivers).
    pub fn finish(mut self, thresholds: &[ThresholdResult]) -> Option<ExportsSummary> {
        for t in thresholds {
            self.series.threshold(&t.expr, t.passed);
        }
        let last = self.series.finish();
        let folded_series = self.series.folded();
        if let Some(scrape) = &self.scrape {
            // A scrape from now on reads the run's verdicts, and the run may linger for one.
            scrape.publish(last.clone());
            scrape.mark_final();
        }
        let receivers = self
            .pusher?
            .finish(&last, FLUSH_LIMIT)
            .into_iter()
            .map(|d| ExportReceiver {
                out: d.name,
                sent: d.sent,
                dropped: d.dropped,
                superseded: d.superseded,
                final_delivered: d.final_delivered,
                last_error: d.last_error,
            })
            .collect();
        Some(ExportsSummary { run_id: self.run_id, folded_series, receivers })
    }
}

/// The labels on every series: `run_id`, `segment` (I/N) when split, and each `--tag`.
fn run_labels(settings: &RunSettings, run_id: &str) -> Labels {
    let mut labels = vec![("run_id".to_owned(), run_id.to_owned())];
    if let Some(segment) = settings.segment {
        labels.push(("segment".to_owned(), format!("{}/{}", segment.index(), segment.count())));
    }
    for tag in &settings.options.tag {
        labels.push((loadhost_export::collect::label_name(&tag.key), tag.value.clone()));
    }
    labels
}

/// A run id for a run without `--run-id`: its start time (UTC, to the second) and the process
/// id, so two runs on one machine never share one.
fn generated_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = now.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("{}-{}", stamp.to_lowercase(), std::process::id())
}
