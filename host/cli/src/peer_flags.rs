//! The flags of k6 and Locust that loadhost does not take, each with what to write instead: a
//! k6 or Locust user's first command line says `--vus 10` or `-u 10 -t 1m --headless`, and a bare
//! "unexpected argument" sends them to the manual (issue 42). Flags loadhost does take under the
//! same name (`-d`, `-e`, `--tag`, `--csv`, `--html`, `--out`, `--stage`, `--iterations`) are not
//! here; Locust's `-r` (a spawn rate) is, by its long name only, since `-r` is loadhost's rate.

/// What to write instead of `arg` (a flag as typed, with or without `=VALUE`), when it is a flag
/// of k6 or Locust that loadhost names otherwise.
pub fn instead_of(arg: &str) -> Option<&'static str> {
    let flag = arg.split_once('=').map_or(arg, |(flag, _)| flag);
    Some(match flag {
        "--vus" => {
            "k6's --vus is loadhost's -w N (--workers): a k6 VU is a worker; with -d and no -r the \
             workers run tasks back to back, k6's constant-vus"
        }
        "-u" | "--users" => {
            "Locust's (and k6's) -u is loadhost's -w N (--workers): a user is a worker; with -d and no \
             -r the workers run tasks back to back"
        }
        "-i" => "k6's -i is loadhost's -n N (--iterations)",
        "--spawn-rate" => {
            "Locust's spawn rate is a ramp of workers in loadhost: --stage DURATION:N (e.g. -w 1 \
             --stage 10s:100 to start 100 users over 10 s); loadhost's -r is an arrival rate (tasks/s)"
        }
        "-t" | "--run-time" => "Locust's run time is loadhost's -d DURATION (--duration)",
        "--headless" | "--autostart" => {
            "loadhost has no web UI to leave out: leave the flag out (or keep Locust's whole command \
             line with loadhost locust -f FILE -u N -r R -t T -H URL --headless)"
        }
        "-f" | "--locustfile" => {
            "name the script as the argument: loadhost run FILE (or Locust's command line: loadhost \
             locust -f FILE …)"
        }
        "-H" | "--host" => {
            "loadhost has no --host: pass the base URL to the script with -e KEY=URL, and grant it with \
             --allow-host HOST:PORT"
        }
        "--summary-export" => "k6's --summary-export is loadhost's --summary-json FILE",
        "--insecure-skip-tls-verify" => "k6's --insecure-skip-tls-verify is loadhost's --insecure",
        "--rps" => "k6's --rps caps requests; loadhost's -r N (--rate) schedules N tasks a second",
        "--stop-timeout" => "Locust's --stop-timeout is loadhost's --graceful-stop DURATION",
        "-s" => "k6's -s is loadhost's --stage DURATION:TARGET",
        "-o" => "k6's -o is loadhost's --out KIND=FILE|URL",
        "-q" | "--quiet" => "loadhost has no quiet mode: the progress line goes to stderr, the summary to stdout",
        "--no-thresholds" => "loadhost judges only the --threshold flags given: leave them out",
        "--address" | "-a" => "k6's REST API address is loadhost's --control ADDR",
        "--master" | "--worker" | "--expect-workers" => {
            "a distributed run in loadhost is --segment I/N on each process and loadhost merge (docs/distributed.md)"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k6_and_locust_flags_name_loadhosts_and_others_are_left_alone() {
        assert!(instead_of("--vus").unwrap().contains("-w N"));
        assert!(instead_of("--vus=10").unwrap().contains("-w N"), "with its value");
        assert!(instead_of("-u").unwrap().contains("-w N"));
        assert!(instead_of("--run-time").unwrap().contains("-d DURATION"));
        assert!(instead_of("--spawn-rate").unwrap().contains("--stage"));
        assert!(instead_of("--headless").unwrap().contains("leave the flag out"));
        for ours in ["-r", "-d", "-w", "--rate", "--nonsense", "-x", "--", "-e"] {
            assert_eq!(instead_of(ours), None, "{ours}");
        }
    }
}
