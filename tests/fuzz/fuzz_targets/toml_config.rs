//! TOML config files: any text loads or is refused; what loads resolves or is refused, and nothing
//! panics on the way to a plan.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(options) = loadhost_config::file::parse(Path::new("fuzz.toml"), text) {
        let _ = loadhost_config::resolve(options);
    }
});
