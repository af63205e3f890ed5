//! Results files through a registry instead of a shared volume: a segment pushes its file as an
//! artifact tagged `RUN_ID-results-I` (`--results oci://REGISTRY/REPO`), and `loadhost merge
//! oci://REGISTRY/REPO --run-id RUN_ID` pulls every part of that run.

use std::path::{Path, PathBuf};

use loadhost_registry::Registry;

use crate::exit::Failure;
use crate::registry::{parse_ref, registry_failure};

const RESULTS_TYPE: &str = "application/vnd.loadhost.results.v1";
const RESULTS_LAYER: &str = "application/vnd.loadhost.results.v1+jsonl";

fn tag_prefix(run_id: &str) -> String {
    format!("{run_id}-results-")
}

/// Push the results file at `path` for segment `index` of `run_id` to `repository`.
pub fn push(registry: &Registry, repository: &str, run_id: &str, index: u32, path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|err| {
        Failure::runtime(anyhow::anyhow!("{}: cannot read the results to push: {err}", path.display()))
    })?;
    let r = parse_ref(&format!("{repository}:{}{index}", tag_prefix(run_id)))?;
    let about = serde_json::json!({ "run_id": run_id, "segment": index, "part": "results" });
    let layer = (RESULTS_LAYER.to_owned(), bytes);
    let digest = registry.push_artifact(&r, RESULTS_TYPE, &about, vec![layer]).map_err(registry_failure)?;
    tracing::info!("results pushed to oci://{r} ({digest})");
    Ok(digest)
}

/// Pull every part of `run_id` in `repository` into files under `dir`, in segment order.
pub fn pull_parts(registry: &Registry, repository: &str, run_id: &str, dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let probe = parse_ref(&format!("{repository}:{}0", tag_prefix(run_id)))?;
    let tags = registry.tags(&probe).map_err(registry_failure)?;
    let prefix = tag_prefix(run_id);
    let mut indices: Vec<u32> = tags.iter().filter_map(|t| t.strip_prefix(&prefix)?.parse().ok()).collect();
    indices.sort_unstable();
    if indices.is_empty() {
        return Err(Failure::usage(anyhow::anyhow!(
            "oci://{repository}: no results of run '{run_id}' (no tag {prefix}N); the repository has {} tag(s)",
            tags.len()
        )));
    }
    let mut files = Vec::with_capacity(indices.len());
    for index in indices {
        let r = parse_ref(&format!("{repository}:{prefix}{index}"))?;
        let artifact = registry.pull_artifact(&r, RESULTS_TYPE).map_err(registry_failure)?;
        let bytes = artifact
            .layers
            .into_iter()
            .find(|(media, _)| media == RESULTS_LAYER)
            .map(|(_, bytes)| bytes)
            .ok_or_else(|| Failure::usage(anyhow::anyhow!("oci://{r}: no {RESULTS_LAYER} layer")))?;
        let path = dir.join(format!("{prefix}{index}.lhr"));
        std::fs::write(&path, bytes)
            .map_err(|err| Failure::runtime(anyhow::anyhow!("{}: cannot write: {err}", path.display())))?;
        files.push(path);
    }
    Ok(files)
}
