//! The run's metrics for other systems (`--out prometheus-rw=URL`, `otlp=URL`, `influxdb=URL`):
//! on the outputs' thread, each interval is folded into the run's series ([`RunSeries`]) and the
//! snapshot handed to the push thread; at the end the final snapshot (the thresholds' verdicts
//! in) is pushed and the run waits for it, for at most [`FLUSH_LIMIT`].

use std::time::{Duration, SystemTime};

use loadhost_config::RunSettings;
use loadhost_config::criteria::{HistogramsArg, OutSpec, PushKind, redact_url};
use loadhost_export::formats::Format;
use loadhost_export::push::{Pusher, Receiver};
use loadhost_export::remote_write::HistogramStyle;
use loadhost_export::{Budget, Labels, RunSeries};
use loadhost_metrics::{IntervalRow, ThresholdResult, Window};
use loadhost_output::summary::{ExportReceiver, Exports as ExportsSummary};

use crate::exit::Failure;

/// The longest the run waits at its end for the receivers to take the final push.
pub const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// The run's series and the push thread.
pub struct Exports {
    series: RunSeries,
    pusher: Pusher,
    run_id: String,
}

impl Exports {
    /// Start pushing to the run's `--out` receivers; `None` when it has none.
    pub fn start(settings: &RunSettings, run_id: Option<String>) -> Result<Option<Self>, Failure> {
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
        if receivers.is_empty() {
            return Ok(None);
        }
        let run_id = run_id.unwrap_or_else(generated_run_id);
        tracing::info!(
            "pushing metrics to {} as run_id {run_id}{}",
            receivers.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "),
            if o.run_id.is_some() { "" } else { " (--run-id names it)" }
        );
        let interval = settings.interval();
        let every = o.out_interval.map_or(1, |d| (d.0.as_nanos() / interval.as_nanos().max(1)) as u64);
        let pusher = Pusher::start(receivers, every, o.out_token.clone())
            .map_err(|err| Failure::runtime(anyhow::anyhow!("starting the push thread: {err}")))?;
        let series = RunSeries::new(run_labels(settings, &run_id), SystemTime::now(), Budget::new(o.out_url_labels));
        Ok(Some(Self { series, pusher, run_id }))
    }

    /// A scenario's load started.
    pub fn started(&mut self, scenario: &str, at: SystemTime) {
        self.series.started(scenario, at);
    }

    /// One interval: folded in, and its snapshot handed to the push thread.
    pub fn interval(&mut self, row: &IntervalRow, window: &Window) {
        let snapshot = self.series.fold(row, window);
        self.pusher.offer(&snapshot);
    }

    /// A threshold's standing on the run so far.
    pub fn threshold(&mut self, expr: &str, passing: bool) {
        self.series.threshold(expr, passing);
    }

    /// The final push, with the run's verdicts on its thresholds; what each receiver got.
    pub fn finish(mut self, thresholds: &[ThresholdResult]) -> ExportsSummary {
        for t in thresholds {
            self.series.threshold(&t.expr, t.passed);
        }
        let last = self.series.finish();
        let folded_series = self.series.folded();
        let receivers = self
            .pusher
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
        ExportsSummary { run_id: self.run_id, folded_series, receivers }
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
