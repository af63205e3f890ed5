//! The plugins of one run: the command line's, and any a `[[scenario]]` block names of its own
//! (`plugin = "PATH"` or a registry reference, pinned or not), each resolved and loaded once
//! however many scenarios run it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use loadhost_config::RunSettings;
use loadhost_engine::ScenarioPlugins;
use loadhost_output::summary::PluginFile;
use loadhost_runtime::{Grants, HttpDebug, LineSink, Plugin, WasmWorkerFactory};

use crate::exit::Failure;
use crate::prepare::load_plugins;
use crate::registry::{Resolved, Resolver};

/// One plugin of the run, loaded.
pub(crate) struct Loaded {
    /// As the user named it: a path, or a registry reference.
    pub named: String,
    /// The reference and manifest digest it was pulled as.
    pub oci: Option<(String, String)>,
    /// The loaded component.
    pub plugin: Plugin,
}

impl Loaded {
    /// How the outputs name it.
    pub fn file(&self) -> PluginFile {
        let (reference, digest) = self.oci.clone().unzip();
        PluginFile { path: self.named.clone(), sha256: self.plugin.sha256().to_owned(), reference, digest }
    }
}

/// Every plugin of the run and which scenario runs which.
pub(crate) struct RunPlugins {
    /// Each distinct plugin, the command line's first.
    pub loaded: Vec<Loaded>,
    /// For each scenario block (in order; one entry for a run without blocks), its plugin's index.
    plugin_of: Vec<usize>,
    /// The blocks that name a plugin of their own, with its index.
    own: BTreeMap<String, usize>,
}

/// A plugin to load: as named, and where its file is.
struct Wanted {
    named: String,
    resolved: Resolved,
}

impl RunPlugins {
    /// Resolve and load the command line's plugin (`main`, already resolved: its bundle gave
    /// options) and every plugin a scenario block names. A run needs a plugin for each scenario.
    /// `options_computed`: the main plugin's k6 options were computed and applied.
    pub fn load(
        main: Option<(String, Resolved)>,
        settings: &RunSettings,
        resolver: &mut Resolver<'_>,
        options_computed: bool,
    ) -> Result<Self, Failure> {
        let mut wanted: Vec<Wanted> = main.into_iter().map(|(named, resolved)| Wanted { named, resolved }).collect();
        let has_main = !wanted.is_empty();
        let blocks = &settings.options.scenarios;
        let mut plugin_of = Vec::with_capacity(blocks.len().max(1));
        let mut own = BTreeMap::new();
        for block in blocks {
            let index = match &block.plugin {
                Some(named) => {
                    let index = match wanted.iter().position(|w| &w.named == named) {
                        Some(index) => index,
                        None => {
                            wanted.push(Wanted {
                                named: named.clone(),
                                resolved: resolve(&block.name, named, resolver)?,
                            });
                            wanted.len() - 1
                        }
                    };
                    own.insert(block.name.clone(), index);
                    index
                }
                None if has_main => 0,
                None => return Err(no_plugin(Some(&block.name))),
            };
            plugin_of.push(index);
        }
        if wanted.is_empty() {
            return Err(no_plugin(None));
        }
        let files: Vec<(&Path, &str)> = wanted.iter().map(|w| (w.resolved.path.as_path(), w.named.as_str())).collect();
        let computed = files.first().filter(|_| has_main && options_computed).map(|(path, _)| *path);
        let plugins = load_plugins(&files, settings, computed)?;
        let loaded = wanted
            .into_iter()
            .zip(plugins)
            .map(|(w, plugin)| Loaded { named: w.named, oci: w.resolved.oci, plugin })
            .collect();
        Ok(Self { loaded, plugin_of, own })
    }

    /// The run's plugin: the command line's, else the first scenario's.
    pub fn main(&self) -> &Loaded {
        &self.loaded[0]
    }

    /// The scenario blocks that run a plugin of their own, named for the outputs.
    pub fn scenario_files(&self) -> BTreeMap<String, PluginFile> {
        self.own.iter().map(|(name, &i)| (name.clone(), self.loaded[i].file())).collect()
    }

    /// A worker factory per plugin, each with the same grants, setup options and output, and
    /// which scenario uses which.
    pub fn factories(
        &self,
        grants: &Grants,
        setup_options: &str,
        output: Option<(Arc<dyn LineSink>, Option<HttpDebug>)>,
    ) -> ScenarioPlugins<WasmWorkerFactory> {
        let plugins = self
            .loaded
            .iter()
            .map(|l| {
                let mut factory = l.plugin.factory(grants.clone()).with_setup_options(setup_options);
                if let Some((sink, debug)) = &output {
                    factory = factory.with_output(sink.clone(), *debug);
                }
                (l.named.clone(), factory)
            })
            .collect();
        let plugin_of = if self.plugin_of.is_empty() { vec![0] } else { self.plugin_of.clone() };
        ScenarioPlugins { plugins, plugin_of }
    }
}

/// A scenario block's plugin, resolved like the command line's; a bundle gives it only its
/// component (a bundle's options apply to the run it is the command line's plugin of).
fn resolve(scenario: &str, named: &str, resolver: &mut Resolver<'_>) -> Result<Resolved, Failure> {
    let path = PathBuf::from(named);
    let resolved = resolver.resolve(&path).map_err(|f| f.context(format!("scenario '{scenario}'")))?;
    if resolved.bundle.is_some() {
        tracing::warn!(
            "scenario '{scenario}': {named} is a bundle; a scenario runs only its plugin (its TOML and data apply \
             when it is the command line's plugin)"
        );
    }
    if !resolved.path.exists() {
        return Err(Failure::usage(anyhow::anyhow!(
            "scenario '{scenario}': plugin = \"{named}\": no such file (a path, or a registry reference \
             HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX])"
        )));
    }
    Ok(resolved)
}

/// No plugin for a scenario (or for the run): say how to name one.
fn no_plugin(scenario: Option<&str>) -> Failure {
    let what = scenario.map_or_else(|| "the run".to_owned(), |s| format!("scenario '{s}'"));
    Failure::usage(anyhow::anyhow!(
        "no plugin for {what}: name one on the command line (loadhost run PLUGIN) or give every [[scenario]] block \
         a `plugin = \"PATH or REF\"`"
    ))
}
