//! A series' full label set as the label-carrying formats write it (remote write, InfluxDB, the
//! scrape endpoint): the run's labels first, then the series' own. OTLP keeps the two apart (the
//! run's are resource attributes) and does not need this.

use crate::series::Labels;

/// What a series' own label is renamed to when the run already has a label of that name.
pub const EXPORTED_PREFIX: &str = "exported_";

/// The run's labels, then the series' own; a series label whose name the run already uses keeps
/// its value under `exported_NAME`, as Prometheus does with a scraped label that collides with a
/// target label, so neither value is lost and the run's label still identifies the run.
pub fn joined(run: &Labels, own: &Labels) -> Labels {
    let mut all = run.clone();
    all.extend(own.iter().map(|(name, value)| {
        let name =
            if run.iter().any(|(taken, _)| taken == name) { format!("{EXPORTED_PREFIX}{name}") } else { name.clone() };
        (name, value.clone())
    }));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_runs_labels_come_first_and_a_colliding_series_label_is_exported() {
        let run = labels(&[("run_id", "r1"), ("env", "staging")]);
        let own = labels(&[("scenario", "browse"), ("env", "prod")]);
        assert_eq!(
            joined(&run, &own),
            labels(&[("run_id", "r1"), ("env", "staging"), ("scenario", "browse"), ("exported_env", "prod")])
        );
    }
}
