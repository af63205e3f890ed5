//! loadhost's metrics for the systems teams already watch (issue 30).
//!
//! Once per interval, off the run loop, the run's windows become one [`Snapshot`] of labelled
//! series ([`collect`]); each format encodes a snapshot on its own, and the push task delivers
//! the encoded bodies to their receivers without ever holding up the run ([`push`]).
//!
//! # Layout
//! - [`series`]: the model: [`Snapshot`], [`Series`], their values and units.
//! - [`payload`]: an encoded body and the headers it travels with.
//! - [`labels`]: the run's labels and a series' own as one set (a collision renamed `exported_`).
//! - [`collect`]: one window's figures as series (names, units, labels).
//! - [`budget`]: the cardinality budget: URL-like labels dropped, label sets past the caps folded.
//! - [`accumulate`]: [`RunSeries`], the run so far, and the snapshot each interval makes of it.
//! - [`classic`]: the fixed `le` buckets a classic histogram has, in remote write and on scrape.
//! - [`remote_write`]: Prometheus remote write 1.0 (native or classic histograms); its
//!   [`remote_write::messages`] are the protobuf messages.
//! - [`otlp`]: OTLP/HTTP protobuf metrics; its [`otlp::messages`] are the protobuf messages.
//! - [`influx`]: InfluxDB 1.x line protocol, one point per series per interval.
//! - [`formats`]: each receiver's format as the push task encodes it.
//! - [`push`]: the push thread: a bounded queue per receiver, retries, the final flush.
//! - [`reply`]: a receiver's answer judged: 2xx delivered, a redirect not followed, an error's
//!   body read up to a cap.
//! - [`exposition`]: the scrape endpoint's formats (OpenMetrics text with classic histograms,
//!   Prometheus' protobuf with native ones) and their negotiation.
//! - [`scrape`]: [`Scrape`], the latest snapshot, served to `--metrics-addr`'s scrapes.
//! - `sample` (tests only): the hand-built snapshot the formats' tests encode.

pub mod accumulate;
pub mod budget;
pub mod classic;
pub mod collect;
pub mod exposition;
pub mod formats;
pub mod influx;
pub mod labels;
pub mod otlp;
pub mod payload;
pub mod push;
pub mod remote_write;
pub mod reply;
#[cfg(test)]
mod sample;
pub mod scrape;
pub mod series;

pub use accumulate::RunSeries;
pub use budget::Budget;

pub use payload::Payload;
pub use scrape::Scrape;
pub use series::{Distribution, Labels, Series, Snapshot, Unit, Value};
