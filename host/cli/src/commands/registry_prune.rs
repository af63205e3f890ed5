//! `loadhost registry prune oci://REGISTRY/REPO`: delete the artifacts distributed runs leave in
//! their results repository (each segment's `RUN_ID-results-I` and `RUN_ID-arrive-I`), named by
//! run id or by age. Plugins (any other tag) are never touched. Deleting is by manifest digest
//! (the portable way); the registry reclaims the blobs in its own garbage collection.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};
use loadhost_registry::{Registry, RegistryError};

use crate::exit::Failure;
use crate::registry::{ConnArgs, parse_ref, registry, registry_failure};
use crate::results_oci::Part;

/// `loadhost registry` subcommands.
#[derive(Debug, Subcommand)]
pub enum RegistryCommand {
    /// Delete distributed runs' results and barrier arrivals (tags RUN_ID-results-I,
    /// RUN_ID-arrive-I) from a results repository: the runs named by --run-id, or those older
    /// than --older-than. Other tags (plugins) are never touched.
    Prune(PruneArgs),
}

/// Arguments of `loadhost registry prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The results repository: oci://REGISTRY/REPO (as given to `run --results`).
    repository: String,

    /// Delete this run's artifacts; repeatable.
    #[arg(long = "run-id", value_name = "ID", required_unless_present = "older_than", conflicts_with = "older_than")]
    run_id: Vec<String>,

    /// Delete the runs whose newest artifact is older than DURATION (12h, 7d, 30days). A run whose
    /// artifacts carry no creation time (pushed by a loadhost before 0.1's prune) is kept and named.
    #[arg(long = "older-than", value_name = "DURATION", value_parser = humantime::parse_duration)]
    older_than: Option<Duration>,

    /// Say what would be deleted, and delete nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,

    #[command(flatten)]
    conn: ConnArgs,
}

/// Run a `loadhost registry` subcommand.
pub fn run(command: RegistryCommand) -> Result<ExitCode, Failure> {
    match command {
        RegistryCommand::Prune(args) => prune(&args),
    }
}

/// One tag of a run.
#[derive(Debug)]
struct Tagged {
    tag: String,
    part: Part,
}

fn prune(args: &PruneArgs) -> Result<ExitCode, Failure> {
    let repository = args.repository.strip_prefix("oci://").unwrap_or(&args.repository).trim_end_matches('/');
    if repository.contains(['@', ' ']) || repository.rsplit('/').next().is_some_and(|last| last.contains(':')) {
        return Err(Failure::usage(anyhow::anyhow!(
            "{}: a repository, without a tag or digest (oci://REGISTRY/REPO)",
            args.repository
        )));
    }
    let at = |tag: &str| parse_ref(&format!("{repository}:{tag}"));
    let registry = registry(&args.conn)?;
    let tags = match registry.tags(&at("latest")?) {
        Ok(tags) => tags,
        Err(RegistryError::NotFound { .. }) => Vec::new(),
        Err(err) => return Err(registry_failure(err)),
    };
    let mut runs: BTreeMap<String, Vec<Tagged>> = BTreeMap::new();
    for tag in &tags {
        if let Some((run_id, part, _)) = Part::of_tag(tag) {
            runs.entry(run_id.to_owned()).or_default().push(Tagged { tag: tag.clone(), part });
        }
    }
    let chosen = match args.older_than {
        Some(age) => aged(&registry, &at, &runs, age)?,
        None => named(&args.run_id, &runs, repository)?,
    };
    // Deleting is by manifest digest, and takes every tag naming that manifest with it: a
    // manifest another tag (a plugin's `prod`, a results file kept as `baseline`) also names is
    // spared, and said, even under --dry-run.
    let digests: BTreeMap<String, String> = if chosen.is_empty() {
        BTreeMap::new()
    } else {
        registry.tag_digests(&at("latest")?, &tags).map_err(registry_failure)?.into_iter().collect()
    };
    let selected: BTreeSet<&str> = chosen.iter().flat_map(|id| runs[id].iter().map(|t| t.tag.as_str())).collect();
    let mut kept_by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (tag, digest) in &digests {
        if !selected.contains(tag.as_str()) {
            kept_by.entry(digest.as_str()).or_default().push(tag.as_str());
        }
    }
    let verb = if args.dry_run { "would delete" } else { "deleted" };
    let mut deleted = 0;
    let mut doomed: BTreeSet<&str> = BTreeSet::new();
    let mut spared = 0;
    for run_id in &chosen {
        let parts = &runs[run_id];
        let mut going = Vec::new();
        for tagged in parts {
            // A tag gone since the list was read has nothing left to delete.
            let Some(digest) = digests.get(&tagged.tag) else { continue };
            if let Some(keepers) = kept_by.get(digest.as_str()) {
                spared += 1;
                let line = format!(
                    "spared {}: its manifest {digest} is also tagged {}, which prune keeps (deleting the manifest \
                     would delete those tags too)",
                    tagged.tag,
                    keepers.join(", ")
                );
                crate::stdout::write(|out| writeln!(out, "{line}"))?;
                continue;
            }
            going.push(tagged);
            // Two run tags of one manifest: one delete.
            if !doomed.insert(digest.as_str()) || args.dry_run {
                continue;
            }
            let r = at(&tagged.tag)?;
            if registry.delete_manifest(&r, digest).map_err(registry_failure)? {
                deleted += 1;
            }
        }
        let count = |part| going.iter().filter(|t| t.part == part).count();
        let line = format!("{verb} run {run_id}: {} results, {} arrivals", count(Part::Results), count(Part::Arrival));
        crate::stdout::write(|out| writeln!(out, "{line}"))?;
    }
    let tags_chosen: usize = chosen.iter().map(|id| runs[id].len()).sum::<usize>() - spared;
    let spared_note =
        if spared > 0 { format!(", {spared} tag(s) spared (another tag names their manifest)") } else { String::new() };
    let line = if args.dry_run {
        format!(
            "{repository}: {} run(s), {tags_chosen} tag(s) would be deleted{spared_note} (--dry-run: nothing was)",
            chosen.len()
        )
    } else {
        format!(
            "{repository}: {} run(s) pruned, {deleted} manifest(s) deleted{spared_note}; the registry frees their blobs in its garbage collection",
            chosen.len()
        )
    };
    crate::stdout::write(|out| writeln!(out, "{line}"))?;
    Ok(ExitCode::SUCCESS)
}

/// The runs `--run-id` names; one with no tags is a usage error naming the runs there are.
fn named(ids: &[String], runs: &BTreeMap<String, Vec<Tagged>>, repository: &str) -> Result<Vec<String>, Failure> {
    if let Some(missing) = ids.iter().find(|id| !runs.contains_key(*id)) {
        let known: Vec<&str> = runs.keys().take(10).map(String::as_str).collect();
        let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
        return Err(Failure::usage(anyhow::anyhow!(
            "oci://{repository}: no artifacts of run '{missing}' (no tag {missing}-results-N or {missing}-arrive-N); runs there: {known}"
        )));
    }
    let mut ids = ids.to_vec();
    ids.dedup();
    Ok(ids)
}

/// The runs whose newest artifact is older than `age`; a run that cannot be dated is kept, and said.
fn aged(
    registry: &Registry,
    at: &dyn Fn(&str) -> Result<loadhost_registry::PluginRef, Failure>,
    runs: &BTreeMap<String, Vec<Tagged>>,
    age: Duration,
) -> Result<Vec<String>, Failure> {
    let now = SystemTime::now();
    let mut chosen = Vec::new();
    for (run_id, parts) in runs {
        let mut newest = None;
        let mut undated = false;
        for tagged in parts {
            match registry.describe(&at(&tagged.tag)?).map_err(registry_failure)?.created {
                Some(created) => newest = newest.max(Some(created)),
                None => undated = true,
            }
        }
        match newest {
            _ if undated => tracing::warn!(
                "run {run_id} kept: some of its artifacts carry no creation time (pushed by an older loadhost); \
                 delete it with --run-id {run_id}"
            ),
            Some(newest) if now.duration_since(newest).unwrap_or_default() > age => chosen.push(run_id.clone()),
            _ => {}
        }
    }
    Ok(chosen)
}
