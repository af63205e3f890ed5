//! Results files (`loadhost run --results FILE`) and their merge (`loadhost merge`): everything a
//! run measured, exactly (counters, full HDR histograms, plugin metrics), so that the processes of
//! a distributed run (`--segment I/N`) add up to the run one machine would have reported.
//!
//! - [`format`](mod@format): the file's shape: its lines and what they hold ([`RunStart`],
//!   [`IntervalRecord`], [`RunResults`]).
//! - `write`: [`ResultsWriter`] (as the run goes) and [`write`] (a measured run in one go).
//! - `read`: [`read`] and [`read_for_merge`] (intervals kept encoded until needed; a file cut off
//!   before its end, as [`CutFiles`] says).
//! - `cut`: a file cut off before its end: its reports rebuilt from the intervals it completed.
//! - `error`: why a file could not be read ([`ResultsError`]).
//! - `generator`: each part's generator for a merge ([`PartGenerator`]), from its intervals' figures.
//! - `one_run`: refusing parts that are not one run's (plugin, plan, row interval, segment split).
//! - [`merge`](mod@merge): building the merged run and its rows.
//!   The rules by which measurements add up are the merge policy, in `loadhost_metrics::combine`
//!   (why there: see [`merge`](mod@merge)).

mod cut;
mod error;
pub mod format;
mod generator;
pub mod merge;
mod one_run;
#[cfg(test)]
mod properties;
mod read;
#[cfg(test)]
pub(crate) mod testkit;
mod write;

pub use error::ResultsError;
pub use format::{
    FORMAT_VERSION, IntervalRecord, MAGIC, OLDEST_VERSION, PlannedScenario, RunResults, RunStart, segment_name,
};
pub use generator::PartGenerator;
pub use loadhost_engine::Segment;
pub use merge::{MergeError, Merged, Windows, merge, merge_files, merge_files_with, merge_labelled};
pub use one_run::PER_PROCESS_KEYS;
pub use read::{CutFiles, ResultsFile, read, read_for_merge};
pub use write::{ResultsWriter, write, write_merged};
