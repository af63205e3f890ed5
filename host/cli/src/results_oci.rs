//! Results files through a registry instead of a shared volume: a segment pushes its file as an
//! artifact tagged `RUN_ID-results-I` (`--results oci://REGISTRY/REPO`), and `loadhost merge
//! oci://REGISTRY/REPO --run-id RUN_ID` pulls every part of that run. [`Part`] names the tags a
//! run leaves (also its barrier's arrivals), for them and for `loadhost registry prune`.

use std::path::{Path, PathBuf};

use loadhost_registry::Registry;

use crate::exit::Failure;
use crate::registry::{parse_ref, registry_failure};

const RESULTS_TYPE: &str = "application/vnd.loadhost.results.v1";
const RESULTS_LAYER: &str = "application/vnd.loadhost.results.v1+jsonl";
/// The largest results file pulled from a registry: it is held in memory whole (as the segment
/// that pushed it held it), and a segment's results of a long run are a few hundred MiB.
pub const RESULTS_LAYER_CAP: u64 = 1 << 30;

/// What a distributed run keeps in its registry repository, one tag per segment:
/// `RUN_ID-results-I` (its results file) and `RUN_ID-arrive-I` (its arrival at the barrier).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A segment's results file.
    Results,
    /// A segment's arrival at the barrier.
    Arrival,
}

impl Part {
    const ALL: [Part; 2] = [Part::Results, Part::Arrival];

    fn word(self) -> &'static str {
        match self {
            Part::Results => "results",
            Part::Arrival => "arrive",
        }
    }

    /// The tags of this part of `run_id` start with this.
    pub fn tag_prefix(self, run_id: &str) -> String {
        format!("{run_id}-{}-", self.word())
    }

    /// The tag of segment `index`'s part of `run_id`.
    pub fn tag(self, run_id: &str, index: u32) -> String {
        format!("{}{index}", self.tag_prefix(run_id))
    }

    /// The run, part and segment a tag names, when it is one of a run's.
    pub fn of_tag(tag: &str) -> Option<(&str, Part, u32)> {
        let (rest, index) = tag.rsplit_once('-')?;
        let index = index.parse().ok().filter(|_| index.bytes().all(|b| b.is_ascii_digit()))?;
        Part::ALL.into_iter().find_map(|part| {
            let run_id = rest.strip_suffix(part.word())?.strip_suffix('-').filter(|r| !r.is_empty())?;
            Some((run_id, part, index))
        })
    }
}

/// Push the results file at `path` for segment `index` of `run_id` to `repository`.
pub fn push(registry: &Registry, repository: &str, run_id: &str, index: u32, path: &Path) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|err| {
        Failure::runtime(anyhow::anyhow!("{}: cannot read the results to push: {err}", path.display()))
    })?;
    let r = parse_ref(&format!("{repository}:{}", Part::Results.tag(run_id, index)))?;
    let about = serde_json::json!({ "run_id": run_id, "segment": index, "part": "results" });
    let layer = (RESULTS_LAYER.to_owned(), bytes);
    let digest = registry.push_artifact(&r, RESULTS_TYPE, &about, vec![layer]).map_err(registry_failure)?;
    tracing::info!("results pushed to oci://{r} ({digest})");
    Ok(digest)
}

/// Pull every part of `run_id` in `repository` into files under `dir`, in segment order.
pub fn pull_parts(registry: &Registry, repository: &str, run_id: &str, dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let probe = parse_ref(&format!("{repository}:{}", Part::Results.tag(run_id, 0)))?;
    let tags = registry.tags(&probe).map_err(registry_failure)?;
    let prefix = Part::Results.tag_prefix(run_id);
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
        let artifact = registry.pull_artifact(&r, RESULTS_TYPE, RESULTS_LAYER_CAP).map_err(registry_failure)?;
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

#[cfg(test)]
mod tests {
    use super::Part;

    #[test]
    fn a_run_tag_names_its_run_part_and_segment() {
        assert_eq!(Part::of_tag("run-7-results-2"), Some(("run-7", Part::Results, 2)));
        assert_eq!(Part::of_tag("a-arrive-0"), Some(("a", Part::Arrival, 0)));
        assert_eq!(Part::of_tag(&Part::Arrival.tag("x-results-1", 3)), Some(("x-results-1", Part::Arrival, 3)));
        for other in ["1.0", "latest", "-results-1", "run-results-", "run-results-+1", "run-logs-1"] {
            assert_eq!(Part::of_tag(other), None, "{other}");
        }
    }
}
