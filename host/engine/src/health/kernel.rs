//! What the kernel says about CPU time, read from its files: pure parsers over their text (unit
//! tested on samples of each), and the few reads that feed them. A file that is missing or does
//! not parse is a figure absent (`None`), never 0.

use std::time::Duration;

/// `/proc/…/schedstat`: nanoseconds on a CPU, nanoseconds runnable but waiting for one, timeslices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedstat {
    /// Time spent running on a CPU.
    pub(crate) on_cpu: Duration,
    /// Time spent runnable, waiting for a CPU.
    pub(crate) waiting: Duration,
}

/// A thread's schedstat line.
pub(crate) fn parse_schedstat(text: &str) -> Option<Schedstat> {
    let mut fields = text.split_whitespace();
    let on_cpu: u64 = fields.next()?.parse().ok()?;
    let waiting: u64 = fields.next()?.parse().ok()?;
    Some(Schedstat { on_cpu: Duration::from_nanos(on_cpu), waiting: Duration::from_nanos(waiting) })
}

/// The time a cgroup was throttled, from its `cpu.stat`: `throttled_usec` (v2) or
/// `throttled_time` in nanoseconds (v1).
pub(crate) fn parse_throttled(cpu_stat: &str) -> Option<Duration> {
    cpu_stat.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        let value: u64 = value.trim().parse().ok()?;
        match key {
            "throttled_usec" => Some(Duration::from_micros(value)),
            "throttled_time" => Some(Duration::from_nanos(value)),
            _ => None,
        }
    })
}

/// The machine's steal time from `/proc/stat`'s `cpu` line (its 8th figure, in clock ticks).
pub(crate) fn parse_steal(proc_stat: &str, ticks_per_s: u64) -> Option<Duration> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    (ticks_per_s > 0).then(|| Duration::from_secs_f64(ticks as f64 / ticks_per_s as f64))
}

/// The CPU quota in cores from cgroup v2's `cpu.max` (`QUOTA PERIOD`, or `max PERIOD`: none).
pub(crate) fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota: f64 = fields.next()?.parse().ok()?;
    let period: f64 = fields.next()?.parse().ok()?;
    (quota > 0.0 && period > 0.0).then_some(quota / period)
}

/// The CPU quota in cores from cgroup v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us` (-1: none).
pub(crate) fn parse_cfs_quota(quota: &str, period: &str) -> Option<f64> {
    let quota: f64 = quota.trim().parse().ok()?;
    let period: f64 = period.trim().parse().ok()?;
    (quota > 0.0 && period > 0.0).then_some(quota / period)
}

/// Where this process's cgroup keeps its CPU files, from `/proc/self/cgroup`: the v2 directory
/// (`0::PATH`) and the v1 `cpu` controller's (under `cpu` or `cpu,cpuacct`), in that order.
pub(crate) fn cgroup_cpu_dirs(own: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            dirs.insert(0, format!("/sys/fs/cgroup{path}"));
        } else if controllers.split(',').any(|c| c == "cpu") {
            dirs.push(format!("/sys/fs/cgroup/{controllers}{path}"));
            dirs.push(format!("/sys/fs/cgroup/cpu{path}"));
        }
    }
    dirs.dedup();
    dirs
}

/// The cgroup directory whose `cpu.stat` reports throttling, and the quota in cores, if any.
pub(crate) fn cgroup_cpu() -> (Option<String>, Option<f64>) {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut stat = None;
    let mut quota = None;
    for dir in cgroup_cpu_dirs(&own) {
        if stat.is_none() && read(&format!("{dir}/cpu.stat")).as_deref().and_then(parse_throttled).is_some() {
            stat = Some(format!("{dir}/cpu.stat"));
        }
        quota = quota.or_else(|| read(&format!("{dir}/cpu.max")).as_deref().and_then(parse_cpu_max)).or_else(|| {
            let q = read(&format!("{dir}/cpu.cfs_quota_us"))?;
            parse_cfs_quota(&q, &read(&format!("{dir}/cpu.cfs_period_us"))?)
        });
    }
    (stat, quota)
}

/// A file's text, when it can be read.
pub(crate) fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// This process's CPU time (user and system, every thread), from `getrusage(RUSAGE_SELF)`.
pub(crate) fn process_cpu() -> Option<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given, which is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: it returned 0, so it filled the struct (and zeroed memory is a valid rusage anyway).
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    Some(time(usage.ru_utime) + time(usage.ru_stime))
}

/// The CPUs this process's affinity lets it run on.
pub(crate) fn affinity_cpus() -> Option<u32> {
    let mut set = std::mem::MaybeUninit::<libc::cpu_set_t>::zeroed();
    // SAFETY: the set is as large as the size given, and zeroed memory is a valid (empty) set.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: as above; sched_getaffinity filled it.
    let set = unsafe { set.assume_init() };
    // SAFETY: CPU_COUNT only reads the set.
    let count = unsafe { libc::CPU_COUNT(&set) };
    u32::try_from(count).ok().filter(|n| *n > 0)
}

/// A `sysconf` figure, when the system has it.
pub(crate) fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf only reads its argument.
    let value = unsafe { libc::sysconf(name) };
    u64::try_from(value).ok().filter(|v| *v > 0)
}

/// The calling thread's id, for `/proc/self/task/TID`.
pub(crate) fn thread_id() -> libc::pid_t {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_has_the_time_on_and_waiting_for_a_cpu() {
        assert_eq!(
            parse_schedstat("827795576 1742387118 428\n"),
            Some(Schedstat { on_cpu: Duration::from_nanos(827_795_576), waiting: Duration::from_nanos(1_742_387_118) })
        );
        assert_eq!(parse_schedstat("827795576\n"), None, "no second field");
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn throttling_is_read_from_v2_in_microseconds_and_v1_in_nanoseconds() {
        let v2 =
            "usage_usec 9000\nuser_usec 6000\nsystem_usec 3000\nnr_periods 50\nnr_throttled 7\nthrottled_usec 250000\n";
        assert_eq!(parse_throttled(v2), Some(Duration::from_millis(250)));
        let v1 = "nr_periods 0\nnr_throttled 0\nthrottled_time 1500000\nnr_bursts 0\nburst_time 0\n";
        assert_eq!(parse_throttled(v1), Some(Duration::from_micros(1500)));
        assert_eq!(parse_throttled("nr_periods 0\n"), None, "no throttled time: absent, not 0");
    }

    #[test]
    fn steal_is_the_eighth_figure_of_the_cpu_line() {
        let stat = "cpu  4303554 48061 483116 720665 23261 0 12611 15500 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_steal(stat, 100), Some(Duration::from_secs(155)));
        assert_eq!(parse_steal("cpu  1 2 3 4\n", 100), None, "an old kernel without steal");
        assert_eq!(parse_steal(stat, 0), None);
    }

    #[test]
    fn quotas_are_in_cores_and_none_without_a_limit() {
        assert_eq!(parse_cpu_max("150000 100000\n"), Some(1.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cfs_quota("50000\n", "100000\n"), Some(0.5));
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
    }

    #[test]
    fn cgroup_dirs_put_v2_first_then_the_v1_cpu_controller() {
        let hybrid = "4:memory:/x\n2:cpuacct:/\n1:cpu:/\n0::/\n";
        assert_eq!(cgroup_cpu_dirs(hybrid), ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"]);
        let v1 = "3:cpu,cpuacct:/docker/abc\n";
        assert_eq!(cgroup_cpu_dirs(v1), ["/sys/fs/cgroup/cpu,cpuacct/docker/abc", "/sys/fs/cgroup/cpu/docker/abc"]);
        assert_eq!(cgroup_cpu_dirs("0::/user.slice/app\n"), ["/sys/fs/cgroup/user.slice/app"]);
    }

    #[test]
    fn this_process_has_cpu_time_cores_and_a_schedstat() {
        assert!(process_cpu().is_some());
        assert!(affinity_cpus().is_some_and(|n| n >= 1));
        let own = read(&format!("/proc/self/task/{}/schedstat", thread_id()));
        assert!(own.as_deref().and_then(parse_schedstat).is_some(), "{own:?}");
    }
}
