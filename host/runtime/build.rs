//! Embeds the prebuilt script runners: `target/runners/python.wasm` and `js.wasm`, which `cargo
//! xtask runners` builds with the Python and JavaScript toolchains (sdk/*/build-runner.sh). Each is
//! stored deflated, with its sha256 beside it, so the binary carries them and a script needs no
//! toolchain. A runner that is not there is embedded empty: that `loadhost` then says how to build
//! it when asked to run a script (a checkout built before `cargo xtask runners`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

const RUNNERS: [&str; 2] = ["python", "js"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let runners = manifest.join("../../target/runners");
    // Watched as a folder (a missing path would rerun this script on every build): made here so
    // it exists, and whatever xtask writes into it later rebuilds the embedding.
    let _ = std::fs::create_dir_all(&runners);
    println!("cargo::rerun-if-changed={}", runners.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in RUNNERS {
        embed(&runners.join(format!("{name}.wasm")), &out, name);
    }
}

/// Write `OUT_DIR/NAME.wasm.deflate` and `OUT_DIR/NAME.sha256` (both empty without the runner).
fn embed(runner: &Path, out: &Path, name: &str) {
    let (deflated, sha256) = match std::fs::read(runner) {
        Ok(bytes) => {
            use sha2::Digest as _;
            let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(&bytes).expect("deflating in memory");
            let deflated = encoder.finish().expect("deflating in memory");
            (deflated, format!("{:x}", sha2::Sha256::digest(&bytes)))
        }
        Err(_) => (Vec::new(), String::new()),
    };
    std::fs::write(out.join(format!("{name}.wasm.deflate")), deflated).expect("writing OUT_DIR");
    std::fs::write(out.join(format!("{name}.sha256")), sha256).expect("writing OUT_DIR");
}
