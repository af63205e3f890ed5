//! loadhost's metrics for the systems teams already watch (issue 30).
//!
//! Once per interval, off the run loop, the run's windows become one [`Snapshot`] of labelled
//! series ([`collect`]); each format encodes a snapshot on its own, and the push task delivers
//! the encoded bodies to their receivers without ever holding up the run ([`push`]).
//!
//! # Layout
//! - [`series`]: the model: [`Snapshot`], [`Series`], their values and units.
//! - [`payload`]: an encoded body and the headers it travels with.
//! - [`collect`]: one window's figures as series (names, units, labels).
//! - [`budget`]: the cardinality budget: URL-like labels dropped, label sets past the caps folded.
//! - [`accumulate`]: [`RunSeries`], the run so far, and the snapshot each interval makes of it.
//! - [`push`]: the push thread: a bounded queue per receiver, retries, the final flush.
//! - [`classic`]: classic histogram buckets (`le`) from the exponential ones.
//! - [`exposition`]: the scrape endpoint's formats (OpenMetrics text, Prometheus' protobuf) and
//!   their negotiation.
//! - [`scrape`]: the latest snapshot, served to `--metrics-addr`'s scrapes.

pub mod accumulate;
pub mod budget;
pub mod classic;
pub mod collect;
pub mod exposition;
pub mod payload;
pub mod push;
pub mod scrape;
pub mod series;

pub use accumulate::RunSeries;
pub use budget::Budget;

pub use payload::Payload;
pub use scrape::Scrape;
pub use series::{Distribution, Labels, Series, Snapshot, Unit, Value};
