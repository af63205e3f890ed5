//! Results files (`loadhost run --results FILE`) and their merge (`loadhost merge`): everything a
//! run measured, exactly (counters, full HDR histograms, plugin metrics), so that the processes of
//! a distributed run (`--segment I/N`) add up to the run one machine would have reported.
//!
//! - [`format`](mod@format): the file: [`RunResults`], [`ResultsWriter`] (as the run goes), [`read`] and
//!   [`read_for_merge`] (intervals kept encoded until needed; a file cut off before its end, as
//!   [`CutFiles`] says), and its errors.
//! - [`merge`](mod@merge): refusing parts that are not one run's, and building the merged run and its rows.
//!   The rules by which measurements add up are the merge policy, in `loadhost_metrics::combine`
//!   (why there: see [`merge`](mod@merge)).

pub mod format;
pub mod merge;
#[cfg(test)]
mod properties;
#[cfg(test)]
pub(crate) mod testkit;

pub use format::{
    CutFiles, FORMAT_VERSION, IntervalRecord, MAGIC, OLDEST_VERSION, PlannedScenario, ResultsError, ResultsFile,
    ResultsWriter, RunResults, RunStart, read, read_for_merge, segment_name, write,
};
pub use loadhost_engine::Segment;
pub use merge::{MergeError, Merged, PER_PROCESS_KEYS, merge, merge_files, merge_labelled};
