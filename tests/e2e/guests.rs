//! The plugins a test runs, as names the compiler knows: [`Example`] (a folder of `plugins/`) and
//! [`Fixture`] (a folder of `tests/plugins/`), both read from their folders when tests/guests
//! builds. A test naming a plugin that is not there fails to compile; so does a fixture folder
//! without its variant here, a variant whose folder is gone, and (main.rs denies dead code in
//! this module) a fixture no test runs.

pub use loadhost_test_guests::Example;

/// A test fixture: a folder of `tests/plugins/`, built to `target/test-plugins/NAME.wasm` by
/// `cargo xtask plugins`. Spelt out here rather than generated, so that the compiler can say when
/// one is never used (it says nothing of names that come from another crate's macro); checked
/// against the folders by [`Fixture::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixture {
    Abort,
    AsyncFlood,
    BadImport,
    #[allow(dead_code, reason = "run by the capacity searches (tests/capacity), a test binary of its own")]
    Burn,
    Endpoints,
    EnvProbe,
    FeedSum,
    Hostile,
    HttpFeatures,
    Lifecycle,
    Metrics,
    NoDoer,
    Options,
    TcpConnect,
    WsHoard,
}

/// `Fixture::name`, one arm per folder of `tests/plugins/` (tests/guests lists them): a folder
/// without a variant is an unknown variant here, a variant without a folder a missing arm.
macro_rules! fixture_names {
    ($($variant:ident $folder:literal),* $(,)?) => {
        impl Fixture {
            /// Its folder's name, which is also its built file's (`NAME.wasm`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $folder,)*
                }
            }
        }
    };
}
loadhost_test_guests::foreach_fixture!(fixture_names);

impl std::fmt::Display for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
