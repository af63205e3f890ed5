//! One module per subcommand, named after it (`loadhost find-max` is [`find_max`]); each has its
//! clap arguments and the function `main` calls.
//!
//! # Layout
//! - [`run`]: `loadhost run`'s arguments; the run is [`crate::run`]'s pipeline.
//! - [`http`]: `loadhost http`, a URL or a targets file ([`http::targets`]) load-tested with the
//!   built-in plugin through `run`'s pipeline.
//! - [`find_max`]: `loadhost find-max`, the highest rate that meets the SLOs.
//! - [`merge`]: `loadhost merge`, a distributed run's results files made into one run's outputs.
//! - [`compare`]: `loadhost compare`, two runs metric by metric.
//! - [`target`]: `loadhost target`, the built-in HTTP target.
//! - [`inspect`]: `loadhost inspect`, what a plugin is and what it asks for.
//! - [`locust`]: `loadhost locust`, Locust's command line for a locustfile, as `run`'s flags.
//! - [`new`]: `loadhost new`, a plugin project.
//! - [`build`]: `loadhost build`, a script made a standalone component.
//! - [`componentize`]: `loadhost componentize`, a core module wrapped into a plugin component.
//! - [`registry`]: `loadhost push`, `loadhost pin` and `loadhost pull`.
//! - [`registry_prune`]: `loadhost registry prune`, a results repository's old runs deleted.
//! - [`cache`]: `loadhost cache`, the compiled-plugin cache.

pub mod build;
pub mod cache;
pub mod compare;
pub mod componentize;
pub mod find_max;
pub mod http;
pub mod inspect;
pub mod locust;
pub mod merge;
pub mod new;
pub mod registry;
pub mod registry_prune;
pub mod run;
pub mod target;
