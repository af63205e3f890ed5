//! One definition of the run options, merged mechanically.
//!
//! `define_options!` takes the list of `loadhost run`'s options once, each field with its doc
//! comment (the `--help` text), its clap `#[arg]` and any extra `#[serde]`, and writes out:
//!
//! - the struct of flags and TOML keys ([`RunOptions`](crate::RunOptions)), with
//!   `skip_serializing_if` on every field, so the config echoed in outputs shows only what is set;
//! - its merge, `RunOptions::or` (flags win, an unset flag falls back to the file), field by field
//!   through [`Merge`], so no merge function names a field;
//! - the `[[scenario]]` block ([`ScenarioOptions`](crate::options::ScenarioOptions)): its own
//!   fields (`name`, `start-after`) plus every option marked `#[scenario(own)]` or
//!   `#[scenario(inherit)]`, and `ScenarioOptions::within`, which makes one scenario's options:
//!   `own` fields are the scenario's alone (its model: an unset `rate` stays unset even when the
//!   top level has one), `inherit` fields fall back to the top level, and everything else is the
//!   top level's. The block keeps `deny_unknown_fields`, so any other key is refused as unknown.
//!
//! Why a declarative macro rather than serde merging of optional fields: the flags come from clap
//! as typed values, and a round trip through a serde value would lose what does not survive it
//! (the control token serializes as `[redacted]`), while a macro keeps every field typed and costs
//! no dependency. Why not a derive: a proc-macro crate for one struct is more to maintain than this.
//!
//! Adding a flag is one entry in `options.rs`; the merge and the scenario block follow:
//!
//! ```text
//! /// Open model: the crew's warm-up (default 2s).
//! #[scenario(inherit)]                       // only if a [[scenario]] block may set it too
//! #[arg(long, value_name = "DURATION")]
//! pub warm_up: Option<Dur>,
//! ```
//!
//! A field's type decides how it merges ([`Merge`]): `Option` and `bool` take the flag when set,
//! a list takes the flags' list when it has any item (lists replace, they do not append).

/// How one option merges: the flag's value, when it was given, wins over the file's.
pub trait Merge: Sized {
    /// Whether the option was left unset (and so is left out when the options are written out).
    fn is_unset(&self) -> bool;

    /// This value, or `fallback` when this one is unset.
    fn or(self, fallback: Self) -> Self {
        if self.is_unset() { fallback } else { self }
    }
}

impl<T> Merge for Option<T> {
    fn is_unset(&self) -> bool {
        self.is_none()
    }
}

impl<T> Merge for Vec<T> {
    fn is_unset(&self) -> bool {
        self.is_empty()
    }
}

/// A switch is unset when off: a switch given on the command line cannot be turned off by a file.
impl Merge for bool {
    fn is_unset(&self) -> bool {
        !*self
    }
}

/// Define the run options and the scenario block from one list of fields (see the module doc).
///
/// Each field is, in this order: doc comments, an optional `#[scenario(own)]` or
/// `#[scenario(inherit)]`, `#[arg(…)]` attributes, `#[serde(…)]` attributes, `pub NAME: TYPE,`.
macro_rules! define_options {
    (
        $(#[$run_attr:meta])*
        pub struct $Run:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[scenario($role:ident)])?
                $(#[arg $arg:tt])*
                $(#[serde $serde:tt])*
                pub $field:ident : $ty:ty,
            )*
        }

        $(#[$scenario_attr:meta])*
        pub struct $Scenario:ident {
            $($scenario_fields:tt)*
        }
    ) => {
        $(#[$run_attr])*
        pub struct $Run {
            $(
                $(#[doc = $doc])*
                $(#[arg $arg])*
                #[serde(skip_serializing_if = "crate::merge::Merge::is_unset")]
                $(#[serde $serde])*
                pub $field: $ty,
            )*
        }

        impl $Run {
            /// These options (the flags) with anything they leave unset taken from `file`.
            pub fn or(self, file: $Run) -> $Run {
                $Run { $($field: crate::merge::Merge::or(self.$field, file.$field),)* }
            }
        }

        define_options!(@scenario
            [$(#[$scenario_attr])* pub struct $Scenario { $($scenario_fields)* }]
            $Run [] [] []
            $({ [$(#[doc = $doc])*] $field: $ty [$($role)?] })*
        );
    };

    // A field the scenario sets on its own: collect its declaration and name.
    (@scenario $head:tt $Run:ident [$($decl:tt)*] [$($own:ident)*] [$($inherit:ident)*]
        { [$($doc:tt)*] $field:ident: $ty:ty [own] } $($rest:tt)*
    ) => {
        define_options!(@scenario $head $Run
            [$($decl)* $($doc)* #[serde(default, skip_serializing_if = "crate::merge::Merge::is_unset")] pub $field: $ty,]
            [$($own)* $field] [$($inherit)*] $($rest)*);
    };

    // A field the scenario may set, else the top level's applies.
    (@scenario $head:tt $Run:ident [$($decl:tt)*] [$($own:ident)*] [$($inherit:ident)*]
        { [$($doc:tt)*] $field:ident: $ty:ty [inherit] } $($rest:tt)*
    ) => {
        define_options!(@scenario $head $Run
            [$($decl)* $($doc)* #[serde(default, skip_serializing_if = "crate::merge::Merge::is_unset")] pub $field: $ty,]
            [$($own)*] [$($inherit)* $field] $($rest)*);
    };

    // A field of the whole run only.
    (@scenario $head:tt $Run:ident $decl:tt $own:tt $inherit:tt
        { [$($doc:tt)*] $field:ident: $ty:ty [] } $($rest:tt)*
    ) => {
        define_options!(@scenario $head $Run $decl $own $inherit $($rest)*);
    };

    // Every field seen: write the scenario block and how it applies.
    (@scenario [$(#[$attr:meta])* pub struct $Scenario:ident { $($fields:tt)* }] $Run:ident
        [$($decl:tt)*] [$($own:ident)*] [$($inherit:ident)*]
    ) => {
        $(#[$attr])*
        pub struct $Scenario {
            $($fields)*
            $($decl)*
        }

        impl $Scenario {
            /// The options this scenario runs with: its own model, its bounds and policies or
            /// else those of `top`, and everything else from `top`.
            pub fn within(&self, top: &$Run) -> $Run {
                $Run {
                    $($own: self.$own.clone(),)*
                    $($inherit: crate::merge::Merge::or(self.$inherit.clone(), top.$inherit.clone()),)*
                    ..top.clone()
                }
            }
        }
    };
}
