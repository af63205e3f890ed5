//! Which language built a plugin, from its producers sections, read module by module.
//!
//! A component nests core modules, and each carries its own producers: the plugin's code, but
//! also the WASI preview1 adapter (built with Rust) and, for interpreted languages, the
//! interpreter (CPython's runtime, StarlingMonkey's C++ and Rust). So a union of every section
//! says "Rust" of a Python plugin. The outermost, most specific evidence decides instead:
//! ComponentizeJS and componentize-py name themselves on the component, and a compiled plugin's
//! language is that of the core module that exports `loadhost:plugin/doer#do-task`.

use std::collections::BTreeSet;

/// What the producers sections say about who built the plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toolchain {
    /// The plugin's language (`Rust`, `Python`, `JavaScript`, `C`, …), when the sections tell.
    pub language: Option<&'static str>,
    /// The language with the toolchain: `Rust (rustc 1.95.0)`, `Python 3.14 (componentize-py)`.
    pub toolchain: Option<String>,
    /// The producers entries of the plugin's own code, as `field: name version`: the outermost
    /// component's and, for a compiled language, those of the module with the `doer` code.
    pub own: Vec<String>,
    /// Every other module's entries (the interpreter, the preview1 adapter), without repeats.
    pub nested: Vec<String>,
}

/// One producers entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// `language`, `processed-by` or `sdk`.
    field: String,
    name: String,
    version: String,
}

impl Entry {
    fn text(&self) -> String {
        format!("{}: {} {}", self.field, self.name, self.version).trim_end().to_owned()
    }

    /// `name version`, the version cut before a parenthesised commit or URL.
    fn short(&self) -> String {
        let version = self.version.split(" (").next().unwrap_or_default();
        format!("{} {version}", self.name).trim_end().to_owned()
    }

    fn is(&self, field: &str, name: &str) -> bool {
        self.field == field && self.name.eq_ignore_ascii_case(name)
    }
}

/// A module or component of the file, with its own producers.
#[derive(Debug, Default)]
struct Unit {
    /// 1 for the file itself.
    depth: usize,
    core: bool,
    entries: Vec<Entry>,
    /// Whether it is a core module exporting the `doer` function by its canonical name.
    exports_doer: bool,
}

/// Read the producers of every module and component of `bytes`, and decide the language.
pub fn read(bytes: &[u8]) -> Toolchain {
    let units = units(bytes);
    let top: Vec<&Entry> = units.iter().filter(|u| u.depth == 1).flat_map(|u| &u.entries).collect();
    // The file itself when it is a core module; else the core module with the doer code.
    let main = units.iter().find(|u| u.core && (u.depth == 1 || u.exports_doer));
    let main_entries: Vec<&Entry> = main.map(|u| u.entries.iter().collect()).unwrap_or_default();
    let (language, toolchain, main_is_own) = match interpreted(&top, bytes) {
        Some((language, toolchain)) => (Some(language), Some(toolchain), false),
        None => {
            // Without a module that says it holds the doer code, every module is evidence.
            let all: Vec<&Entry> = units.iter().flat_map(|u| &u.entries).collect();
            let evidence = if main_entries.is_empty() { &all } else { &main_entries };
            match compiled(evidence) {
                Some((language, toolchain)) => (Some(language), Some(toolchain), true),
                None => (None, None, true),
            }
        }
    };
    let mut own: BTreeSet<String> = top.iter().map(|e| e.text()).collect();
    if main_is_own && main.is_some_and(|m| m.depth > 1) {
        own.extend(main_entries.iter().map(|e| e.text()));
    }
    let nested: BTreeSet<String> = units
        .iter()
        .filter(|u| u.depth > 1 && !(main_is_own && main.is_some_and(|m| std::ptr::eq(m, *u))))
        .flat_map(|u| u.entries.iter().map(Entry::text))
        .filter(|text| !own.contains(text))
        .collect();
    Toolchain { language, toolchain, own: own.into_iter().collect(), nested: nested.into_iter().collect() }
}

/// The modules and components of `bytes`, each with its producers; parse errors end the walk
/// (the caller reports them).
fn units(bytes: &[u8]) -> Vec<Unit> {
    let mut open: Vec<Unit> = Vec::new();
    let mut done = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else { break };
        match payload {
            wasmparser::Payload::Version { encoding, .. } => open.push(Unit {
                depth: open.len() + 1,
                core: encoding == wasmparser::Encoding::Module,
                ..Unit::default()
            }),
            wasmparser::Payload::End(_) => done.extend(open.pop()),
            wasmparser::Payload::ExportSection(section) => {
                let doer = section.into_iter().flatten().any(|e| is_doer_function(e.name));
                if let Some(unit) = open.last_mut() {
                    unit.exports_doer |= doer;
                }
            }
            wasmparser::Payload::CustomSection(section) => {
                let wasmparser::KnownCustom::Producers(fields) = section.as_known() else { continue };
                let Some(unit) = open.last_mut() else { continue };
                for field in fields.into_iter().flatten() {
                    for value in field.values.into_iter().flatten() {
                        unit.entries.push(Entry {
                            field: field.name.to_owned(),
                            name: value.name.to_owned(),
                            version: value.version.to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_iter().rev());
    done.sort_by_key(|u| u.depth);
    done
}

/// `loadhost:plugin/doer@0.1.0#do-task`, the canonical name of the doer function.
fn is_doer_function(name: &str) -> bool {
    name.starts_with("loadhost:plugin/doer@") && name.ends_with("#do-task")
}

/// JavaScript and Python components name their tool on the component itself.
fn interpreted(top: &[&Entry], bytes: &[u8]) -> Option<(&'static str, String)> {
    if let Some(js) = top.iter().find(|e| e.is("processed-by", "ComponentizeJS")) {
        return Some(("JavaScript", format!("JavaScript ({})", js.short())));
    }
    if top.iter().any(|e| e.is("language", "JavaScript")) {
        return Some(("JavaScript", "JavaScript".to_owned()));
    }
    // componentize-py writes no entry of its own; its snapshot step does, and its runtime's
    // libraries are named inside the file.
    let contains = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if top.iter().any(|e| e.is("processed-by", "component-init-transform")) && contains(b"componentize_py") {
        let python = python_version(bytes).map_or_else(|| "Python".to_owned(), |v| format!("Python {v}"));
        return Some(("Python", format!("{python} (componentize-py)")));
    }
    None
}

/// CPython's version from the name of its library inside the file (`libpython3.14.so`).
fn python_version(bytes: &[u8]) -> Option<String> {
    const MARK: &[u8] = b"libpython3.";
    let at = bytes.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let minor: String = bytes[at..].iter().take(3).take_while(|b| b.is_ascii_digit()).map(|&b| b as char).collect();
    (!minor.is_empty() && bytes[at + minor.len()..].starts_with(b".so")).then(|| format!("3.{minor}"))
}

/// A compiled language, from the producers of the module holding the plugin's code. Rust's std
/// for WASI links wasi-libc, written in C, so Rust wins over C when both are there.
fn compiled(entries: &[&Entry]) -> Option<(&'static str, String)> {
    let language = |name: &str| entries.iter().any(|e| e.is("language", name));
    let tool = |name: &str| entries.iter().find(|e| e.field == "processed-by" && e.name.ends_with(name));
    let with = |language: &'static str, tool: Option<&&Entry>| {
        let text = tool.map_or_else(|| language.to_owned(), |t| format!("{language} ({})", t.short()));
        Some((language, text))
    };
    if language("Rust") || tool("wit-bindgen-rust").is_some() {
        return with("Rust", tool("rustc"));
    }
    if ["C99", "C11", "C17", "C89", "C"].iter().any(|c| language(c)) {
        return with("C", tool("clang"));
    }
    if language("C_plus_plus") || entries.iter().any(|e| e.field == "language" && e.name.starts_with("C_plus_plus")) {
        return with("C++", tool("clang"));
    }
    if language("Zig") {
        return with("Zig", tool("zig"));
    }
    if language("Go") || tool("TinyGo").is_some() {
        return with("Go", tool("TinyGo"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(field: &str, name: &str, version: &str) -> Entry {
        Entry { field: field.into(), name: name.into(), version: version.into() }
    }

    #[test]
    fn rust_wins_over_the_wasi_libc_it_links() {
        let entries = [
            entry("language", "C11", ""),
            entry("language", "Rust", ""),
            entry("processed-by", "rustc", "1.95.0 (59807616e 2026-04-14)"),
            entry("processed-by", "clang", "21.1.4-wasi-sdk (https://github.com/llvm/llvm-project 222fc11)"),
        ];
        let refs: Vec<&Entry> = entries.iter().collect();
        assert_eq!(compiled(&refs), Some(("Rust", "Rust (rustc 1.95.0)".to_owned())));
        let c = [entry("language", "C99", ""), entry("processed-by", "Debian clang", "14.0.6")];
        let refs: Vec<&Entry> = c.iter().collect();
        assert_eq!(compiled(&refs), Some(("C", "C (Debian clang 14.0.6)".to_owned())));
    }

    #[test]
    fn the_python_version_comes_from_its_library_name() {
        assert_eq!(python_version(b"..libpython3.14.so.."), Some("3.14".to_owned()));
        assert_eq!(python_version(b"..libpython3.x"), None);
    }

    #[test]
    fn a_core_module_is_its_own_main_module() {
        let t = read(&wat::parse_str("(module)").unwrap());
        assert_eq!((t.language, t.own.len(), t.nested.len()), (None, 0, 0));
    }
}
