//! Exit codes, as documented in the README ("Exit codes"):
//! 0 success; 1 runtime error of the host; 2 usage or configuration error; 3 plugin rejected;
//! 4 the plugin aborted the run; 5 a segment did not start (too late, or it missed the barrier);
//! 6 an output could not be written (a full disk); 98 no task passed; 99 a threshold failed;
//! 130 stopped by the user.

use std::process::ExitCode;

/// A usage or configuration error.
pub const USAGE: u8 = 2;
/// The plugin was rejected before the run.
pub const PLUGIN_REJECTED: u8 = 3;
/// The plugin aborted the run.
pub const ABORTED: u8 = 4;
/// A segment of a distributed run did not start: later than `--max-start-lateness`, or it
/// arrived at the barrier after the others had left.
pub const NOT_STARTED: u8 = 5;
/// An output could not be written (a full disk, a folder gone): every other output is written
/// and the summary printed. It wins over 4, 98, 99 and 130, which a lost output may be the one
/// to tell.
pub const OUTPUT_FAILED: u8 = 6;
/// Tasks were scheduled and none passed (without `--allow-failures`); results are written.
pub const NO_TASK_PASSED: u8 = 98;
/// A threshold failed (or stopped the run with `abort_on_fail`); results are written.
pub const THRESHOLDS_FAILED: u8 = 99;
/// Stopped by the user (a signal, the control API); results are written.
pub const STOPPED: u8 = 130;
/// A runtime error of the host.
pub const RUNTIME: u8 = 1;

/// A failure with its exit code; printed as one line.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl Failure {
    /// A usage or configuration error (exit 2).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self { code: USAGE, error: error.into() }
    }

    /// The plugin was rejected (exit 3).
    pub fn plugin(error: impl Into<anyhow::Error>) -> Self {
        Self { code: PLUGIN_REJECTED, error: error.into() }
    }

    /// The plugin aborted or refused the run (exit 4).
    pub fn aborted(error: impl Into<anyhow::Error>) -> Self {
        Self { code: ABORTED, error: error.into() }
    }

    /// The host failed (exit 1).
    pub fn runtime(error: impl Into<anyhow::Error>) -> Self {
        Self { code: RUNTIME, error: error.into() }
    }

    /// An output that could not be written (exit 6).
    pub fn output(error: impl Into<anyhow::Error>) -> Self {
        Self { code: OUTPUT_FAILED, error: error.into() }
    }

    /// A segment that did not start (exit 5).
    pub fn not_started(error: impl Into<anyhow::Error>) -> Self {
        Self { code: NOT_STARTED, error: error.into() }
    }

    /// The same failure, its error said to be about `what`.
    pub fn context(self, what: impl std::fmt::Display + Send + Sync + 'static) -> Self {
        Self { code: self.code, error: self.error.context(what) }
    }

    /// The error's line, as `report` prints it.
    #[cfg(test)]
    pub fn text(&self) -> String {
        format!("{:#}", self.error)
    }

    /// Print the error on one line and return its exit code.
    pub fn report(self) -> ExitCode {
        eprintln!("error: {:#}", self.error);
        ExitCode::from(self.code)
    }
}

/// A command-line parse error: help and version go to stdout with exit 0; anything else is one
/// line on stderr with exit 2 (clap's own text adds a usage block we leave out).
pub fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(USAGE)
        } else {
            ExitCode::SUCCESS
        };
    }
    // clap's first paragraph is the error (sometimes wrapped over lines); usage and tips follow.
    let text = err.render().to_string();
    let first: Vec<&str> =
        text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let mut line = if first.is_empty() { "error: invalid arguments".to_owned() } else { first.join(" ") };
    if err.kind() == ErrorKind::UnknownArgument
        && let Some(clap::error::ContextValue::String(arg)) = err.get(clap::error::ContextKind::InvalidArg)
        && let Some(instead) = crate::peer_flags::instead_of(arg)
    {
        line = format!("{line}: {instead}");
    }
    eprintln!("{line}");
    ExitCode::from(USAGE)
}
