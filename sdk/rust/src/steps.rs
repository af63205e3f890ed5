//! Groups (k6's steps): a named block of a task, timed as the trend `group_duration` (ms) tagged
//! `group` with the group's path, k6's way: `::checkout` for a top-level group, `::checkout::pay`
//! for one inside it. A check made inside a group is tagged with its path too, so the summary
//! shows which group's check failed, and `checks{group:::checkout}` judges them.
//!
//! ```ignore
//! use loadhost_sdk::{group, metrics::check};
//!
//! let paid = group("checkout", || {
//!     group("pay", || check("paid", pay().is_ok(), &[]))
//! });
//! // or, for a block that returns early with `?`, a guard that ends the group when dropped:
//! let _checkout = loadhost_sdk::Group::enter("checkout");
//! ```
//!
//! `loadhost run … --threshold 'group_duration{group:::checkout}:p(95)<500'` judges a group; it
//! needs no declaration. Other metrics are not tagged (a threshold with tags picks a series by its
//! tags exactly); tag them with [`current`] where wanted.

use std::cell::RefCell;
use std::time::Instant;

use crate::bindings::loadhost::plugin::metrics as host;

/// The trend each group is timed as (k6's name).
pub const GROUP_DURATION: &str = "group_duration";

/// The tag that carries a group's path.
pub const GROUP_TAG: &str = "group";

/// The longest path a tag value holds (the host's cap on tag values).
const MAX_PATH: usize = 256;

thread_local! {
    /// The path of the groups the code is in: `""` outside any, `::a::b` inside b inside a.
    static PATH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The path of the innermost group the code runs in (`::checkout::pay`), or `None` outside any.
pub fn current() -> Option<String> {
    PATH.with(|path| {
        let path = path.borrow();
        (!path.is_empty()).then(|| path.clone())
    })
}

/// Run `f` as the group `name` and return what it returns: its time goes to `group_duration`
/// (tagged with the group's path) when it returns, and the checks it makes carry the path.
/// `name` must be non-empty and free of `::` (the path's separator); a bad one panics naming the
/// call, at the plugin's line.
#[track_caller]
pub fn group<R>(name: &str, f: impl FnOnce() -> R) -> R {
    let _group = Group::enter(name);
    f()
}

/// A group the code is in until the guard is dropped, for a block that [`group`]'s closure does
/// not suit (an early return with `?`). Guards must be dropped in the reverse order of their
/// entering, as Rust's scopes drop them.
#[must_use = "the group ends when the guard is dropped: bind it (`let _checkout = Group::enter(…)`)"]
pub struct Group {
    path: String,
    outer: usize,
    started: Instant,
}

impl Group {
    /// Enter the group `name` (inside the current one, if any); see [`group`] for `name`.
    #[track_caller]
    pub fn enter(name: &str) -> Group {
        if name.is_empty() || name.contains("::") {
            panic!("group({name:?}): a group's name must be non-empty and must not contain '::'");
        }
        PATH.with(|path| {
            let mut path = path.borrow_mut();
            let outer = path.len();
            if outer + 2 + name.len() > MAX_PATH {
                panic!("group({name:?}): the group's path {path}::{name} is longer than {MAX_PATH} bytes");
            }
            path.push_str("::");
            path.push_str(name);
            Group { path: path.clone(), outer, started: Instant::now() }
        })
    }

    /// The group's path: `::checkout::pay`.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        host::trend(GROUP_DURATION, ms, &[(GROUP_TAG.to_owned(), self.path.clone())]);
        PATH.with(|path| path.borrow_mut().truncate(self.outer));
    }
}

/// `tags` with the current group's path added as `group`, unless there is no group or the tags
/// name one already (the plugin's own wins).
pub(crate) fn with_group(tags: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut tags = tags;
    if tags.iter().any(|(key, _)| key == GROUP_TAG) {
        return tags;
    }
    if let Some(path) = current() {
        tags.push((GROUP_TAG.to_owned(), path));
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(f).expect_err("the call panics");
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn checks_inside_a_group_carry_its_path_unless_they_name_one() {
        // The host is not here to time a group: set the path as `enter` does.
        assert_eq!(current(), None);
        assert_eq!(with_group(Vec::new()), Vec::<(String, String)>::new());
        PATH.with(|p| p.borrow_mut().push_str("::checkout::pay"));
        assert_eq!(current().as_deref(), Some("::checkout::pay"));
        let tagged = with_group(vec![("tier".into(), "gold".into())]);
        assert_eq!(
            tagged,
            [("tier".to_owned(), "gold".to_owned()), ("group".to_owned(), "::checkout::pay".to_owned())]
        );
        assert_eq!(with_group(vec![("group".into(), "mine".into())]), [("group".to_owned(), "mine".to_owned())]);
        PATH.with(|p| p.borrow_mut().clear());
    }

    #[test]
    fn a_bad_name_panics_naming_the_call() {
        assert_eq!(
            message(|| drop(Group::enter(""))),
            "group(\"\"): a group's name must be non-empty and must not contain '::'"
        );
        assert!(message(|| drop(Group::enter("a::b"))).contains("must not contain '::'"));
        assert!(message(|| drop(Group::enter(&"x".repeat(300)))).contains("longer than 256 bytes"));
        assert_eq!(current(), None, "a refused group leaves the path as it was");
    }
}
