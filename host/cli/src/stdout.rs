//! Printing a subcommand's output so that a reader that goes away early is not an error.

use std::io::{self, Write as _};

use crate::exit::Failure;

/// Write a subcommand's output through `write` to stdout, locked once. A reader that stops early
/// (`loadhost inspect … | head -3`) closes the pipe: that ends the output as a clean exit, where
/// `println!` would panic.
pub fn write(write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => {
            Err(Failure::runtime(anyhow::Error::new(err).context("writing to stdout")))
        }
        _ => Ok(()),
    }
}
