//! Samples, HDR histograms, counters and per-interval rows: everything loadhost measures, and
//! nothing about how it is shown (that is `loadhost-output`) or when tasks run (`loadhost-engine`).
//!
//! # Layout
//! - [`catalogue`]: every built-in metric, one entry each: name, kind, unit, tags, where its value
//!   is kept. Adding a built-in metric is an entry there and the line that records it.
//! - [`reading`]: the one reader of a metric's value (thresholds, `compare` over results files and
//!   summary JSON), over what each source keeps ([`reading::Figures`]).
//! - [`outcome`]: how a task ends: its terminal state, each attempt's end and the kind of failure,
//!   and the task and attempt counts that must add up.
//! - [`histogram`]: microsecond HDR histograms (3 significant digits) and their percentile summary.
//! - [`window`]: what one interval accumulates; windows merge into the run's totals.
//! - [`recorder`]: the striped, lock-light sink that workers and the pacer record into.
//! - [`http`]: the built-in HTTP metrics, recorded by the host for every plugin request.
//! - [`phases`]: where an HTTP request's time went (k6's phases: blocked, connecting, TLS,
//!   sending, waiting, receiving), from the instants the host reads, one histogram per phase.
//! - [`protocol`]: the built-in WebSocket and gRPC metrics (k6's names), recorded as plugin series.
//! - [`endpoint`]: per-endpoint HTTP figures: the request's name (default: method and folded
//!   path), interned per thread so recording allocates nothing.
//! - [`errors`]: the errors table: failed, retried, trapped, timed-out and aborted attempts grouped
//!   by their normalized message.
//! - [`limit`]: what limited a run (emitter, crew, gate, target), from its measurements.
//! - [`cardinality`]: the run-wide bound on plugin series.
//! - [`plugin`]: counters, gauges, trends and checks recorded by plugins, per name and tag set.
//! - [`checks`]: which checks a `checks{check:NAME,tag:value}` selector picks, and the names of
//!   groups (k6's steps): `group_duration`, the `group` tag.
//! - [`threshold`]: k6-style threshold expressions, evaluated against a run.
//! - [`generator`]: the generator's health per interval (its CPU, its event loops' run-queue delay,
//!   throttling, steal, timer overshoot; its file descriptors and memory), and its exhausted
//!   resources.
//! - [`generator_verdict`]: the generator's verdict on each interval (healthy, degraded,
//!   saturated), its rules, and the sentence a person acts on.
//! - [`exponential`]: a latency histogram in exponential buckets (Prometheus' native histograms,
//!   OTLP's exponential histograms), for the push outputs and the scrape endpoint.
//! - [`exhausted`]: connections the generator could not open for want of a local port or a file
//!   descriptor, counted by the runtime for the engine's health sampler.
//! - [`report`]: the per-interval row and the end-of-run report that outputs render.
//! - [`count`]: how counts add up without wrapping (checked, at most 2^53), so a damaged or crafted
//!   results file is refused rather than wrapped round.
//! - [`combine`]: how reports that ran side by side (scenarios, segments) add up to one run, and
//!   where intervals of several processes land on one timeline: the merge policy.
//! - [`serial`]: how windows and reports serialize (serde), exactly, for results files.
//! - `nonfinite`: `f64` fields that may not be finite, written as `"NaN"`/`"inf"` so files round-trip.
//! - [`compare`]: `loadhost compare`'s `--fail-on` rules and the test that tells a real change from noise.

#![deny(missing_docs)]

pub mod cardinality;
pub mod catalogue;
pub mod checks;
pub mod combine;
pub mod compare;
pub mod count;
pub mod endpoint;
pub mod errors;
pub mod exhausted;
pub mod exponential;
pub mod generator;
pub mod generator_verdict;
pub mod histogram;
pub mod http;
pub mod limit;
mod nonfinite;
pub mod outcome;
pub mod phases;
pub mod plugin;
pub mod protocol;
pub mod reading;
pub mod recorder;
pub mod report;
pub mod serial;
pub mod threshold;
pub mod window;

pub use catalogue::MetricKind;
pub use combine::Timeline;
pub use count::{MAX_COUNT, Overflow};
pub use errors::{ErrorGroup, ErrorTable};
pub use exhausted::{EXHAUSTED, Exhausted, ExhaustedCounts, ExhaustedTotals};
pub use generator::GeneratorHealth;
pub use generator_verdict::{GeneratorTally, GeneratorVerdict, Judgement};
pub use histogram::{LatencyHistogram, Percentiles};
pub use http::{ExpectedStatuses, HttpSample, HttpStats};
pub use outcome::{AttemptEnd, Attempts, Counts, ErrorKind, Outcome};
pub use plugin::{PluginMetrics, Series, SeriesKey, SeriesSummary, SeriesValue, TrendStats};
pub use recorder::{AttemptRecord, PacerTally, Recorder, TaskTiming};
pub use report::{Gauges, GeneratorReport, IntervalRow, MeasuredInterval, RunReport, WorkerStats};
pub use threshold::{Threshold, ThresholdError, ThresholdResult, Verdict};
pub use window::Window;
