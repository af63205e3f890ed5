//! The example plugins (`plugins/*`) and the test fixtures (`tests/plugins/*`) as names the
//! compiler knows, read from their folders when this crate builds, so a test naming one that does
//! not exist fails to compile instead of failing at run time (wasmtime's test programs work the
//! same way: a build script lists them as a `foreach_…!` macro).
//!
//! - [`Example`]: one variant per example. Examples serve docs, benches and the demo too, so one
//!   that no test runs is fine.
//! - [`foreach_fixture!`]: the fixtures, handed to a macro of the test crate's, which declares its
//!   own `Fixture` enum and checks it against the folders: the e2e suite's `guests` module. A
//!   fixture is there for a test only, so the suite denies one no test uses; that lint sees only
//!   names spelt in the suite itself (the compiler is silent on items whose names come from
//!   another crate's macro), hence the enum there, not here.
//!
//! # Layout
//!
//! - `build.rs`: reads the two folders and writes the enum and the macro into `OUT_DIR`, at every
//!   build that finds a folder added, removed or changed (never a committed copy to go stale).

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
