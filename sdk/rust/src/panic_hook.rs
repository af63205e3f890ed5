//! The panic hook: a panic's place and message as one line on stderr.
//!
//! wasm32-wasip2 aborts on a panic, so all the host learns from the trap itself is "`unreachable`
//! executed"; it shows an instance's last stderr lines with the trap, and this line is the one that
//! names the cause: `panicked at src/lib.rs:12:9: index out of bounds: the len is 0 but the index
//! is 3`.

use std::io::Write as _;
use std::panic::PanicHookInfo;
use std::sync::Once;

/// Installs the hook, once per instance (the export macros call this before any plugin code).
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| std::panic::set_hook(Box::new(report)));
}

fn report(info: &PanicHookInfo<'_>) {
    let mut stderr = std::io::stderr().lock();
    // One write of the whole line: the host reads stderr as lines, and the instance is gone a
    // moment later, so nothing written in pieces may be left behind in a buffer.
    let _ = stderr.write_all(line(info).as_bytes());
    let _ = stderr.flush();
}

/// `panicked at FILE:LINE:COL: MESSAGE` and a newline.
pub(crate) fn line(info: &PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("Box<dyn Any>");
    let message = one_line(message);
    match info.location() {
        Some(at) => format!("panicked at {}:{}:{}: {message}\n", at.file(), at.line(), at.column()),
        None => format!("panicked: {message}\n"),
    }
}

/// A multi-line message (an `assert_eq!`'s left and right) joined into one line, so the host's
/// "last line" is the whole message.
fn one_line(message: &str) -> String {
    if !message.contains('\n') {
        return message.to_owned();
    }
    message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::Mutex;

    use super::*;

    /// The line of a panic raised by `f`, caught natively (tests unwind; wasm aborts).
    fn panic_line(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        thread_local! {
            // The hook runs on the panicking thread; other tests panic on threads of their own.
            static SEEN: RefCell<String> = const { RefCell::new(String::new()) };
        }
        // The hook is global: one test at a time may swap it.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| SEEN.with(|seen| *seen.borrow_mut() = line(info))));
        let caught = std::panic::catch_unwind(f);
        std::panic::set_hook(previous);
        assert!(caught.is_err(), "it panicked");
        SEEN.with(|seen| seen.borrow().clone())
    }

    #[test]
    fn a_panic_is_one_line_with_its_place_and_message() {
        let line = panic_line(|| {
            let empty: Vec<u8> = Vec::new();
            let at = std::hint::black_box(3);
            let _ = empty[at];
        });
        // The path is as rustc saw it: relative to the workspace, or absolute for a path outside.
        let place = line.strip_prefix("panicked at ").and_then(|rest| rest.split(": ").next()).unwrap_or_default();
        assert!(place.contains("panic_hook.rs:"), "{line}");
        assert!(line.ends_with(": index out of bounds: the len is 0 but the index is 3\n"), "{line}");
    }

    #[test]
    fn str_string_and_other_payloads() {
        assert!(panic_line(|| panic!("plain")).ends_with(": plain\n"));
        assert!(panic_line(|| panic!("formatted {}", 7)).ends_with(": formatted 7\n"));
        assert!(panic_line(|| std::panic::panic_any(7_u32)).ends_with(": Box<dyn Any>\n"));
        let multi = panic_line(|| assert_eq!(std::hint::black_box(1), 2));
        assert_eq!(multi.matches('\n').count(), 1, "{multi}");
        assert!(multi.contains("failed; left: 1; right: 2"), "{multi}");
    }
}
