//! The generator's health, measured once per interval (never per task): the process's CPU time
//! against the cores it may use, each event loop thread's time runnable but waiting for a CPU
//! (run-queue delay: the direct measure of a starved generator, which inflates latencies), the
//! cgroup's throttling, the machine's steal, how late each event loop's timer fires (overshoot);
//! and its resources: open file descriptors against `RLIMIT_NOFILE`, resident memory against the
//! plugins' budget (`--max-memory` × the crew's peak workers), and the connections the runtime
//! could not open for want of a local port or a file descriptor. The ticker takes a [`Sampler`]'s
//! figures onto each interval's row.
//!
//! # Layout
//! - `kernel`: the kernel's files and calls (`getrusage`, `schedstat`, cgroup `cpu.stat`,
//!   `/proc/stat`), parsed by pure functions.
//! - `probe`: the timer each event loop fires every 10 ms to measure its overshoot.
//! - `resources`: open file descriptors (`/proc/self/fd`) and their limit, resident memory
//!   (`/proc/self/status`), through files kept open.

mod kernel;
pub(crate) mod probe;
mod resources;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadhost_metrics::{ExhaustedCounts, ExhaustedTotals, GeneratorHealth, LatencyHistogram};

use self::kernel::Schedstat;
use self::probe::Overshoot;
use self::resources::{Reading, Resources};

/// A run's event loop threads, each registered by its own thread as it starts, and what each had
/// waited for a CPU when it ended (its `/proc` entry goes with it, and its id may be reused).
#[derive(Debug, Default)]
pub(crate) struct LoopThreads(Mutex<Vec<LoopThread>>);

#[derive(Debug)]
struct LoopThread {
    id: libc::pid_t,
    /// Its time on and waiting for a CPU, read by the thread itself as it ended.
    ended: Option<Schedstat>,
    /// How late its probe timer fired.
    overshoot: Arc<Overshoot>,
}

impl LoopThreads {
    /// Record the calling thread as one of the event loops; its probe (see [`probe::run`]) records
    /// into what this returns.
    pub(crate) fn register(&self) -> Arc<Overshoot> {
        let overshoot = Arc::new(Overshoot::default());
        self.lock().push(LoopThread { id: kernel::thread_id(), ended: None, overshoot: overshoot.clone() });
        overshoot
    }

    /// The calling event loop thread is ending: keep its last reading.
    pub(crate) fn end(&self) {
        let id = kernel::thread_id();
        let last = schedstat_of(id);
        if let Some(thread) = self.lock().iter_mut().find(|t| t.id == id) {
            thread.ended = last;
        }
    }

    /// Each event loop's time on and waiting for a CPU so far (absent when it cannot be read).
    fn schedstats(&self) -> Vec<Option<Schedstat>> {
        let ids: Vec<(libc::pid_t, Option<Schedstat>)> = self.lock().iter().map(|t| (t.id, t.ended)).collect();
        // The files are read outside the lock, so a loop that ends meanwhile is not kept waiting.
        ids.into_iter().map(|(id, ended)| ended.or_else(|| schedstat_of(id))).collect()
    }

    /// The p99 of every loop's timer overshoot since the last call, when any fired.
    fn overshoot_p99(&self) -> Option<Duration> {
        let mut all = LatencyHistogram::new();
        for thread in self.lock().iter() {
            thread.overshoot.drain_into(&mut all);
        }
        (all.count() > 0).then(|| Duration::from_micros(all.quantile_micros(0.99)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<LoopThread>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Thread `id`'s time on and waiting for a CPU, from its schedstat.
fn schedstat_of(id: libc::pid_t) -> Option<Schedstat> {
    let text = kernel::read(&format!("/proc/self/task/{id}/schedstat"))?;
    kernel::parse_schedstat(&text)
}

/// Figures over less time than this are left out: a share of a few milliseconds (the short last
/// interval, after the schedule) is noise, and CPU time may be counted in scheduler ticks.
const MIN_SPAN: Duration = Duration::from_millis(100);

/// Cumulative counters read at one moment; figures are their differences.
#[derive(Debug, Clone, Default)]
struct Sample {
    at: Option<Instant>,
    process: Option<Duration>,
    /// Each event loop's time on and waiting for a CPU (absent when it cannot be read).
    loops: Vec<Option<Schedstat>>,
    throttled: Option<Duration>,
    steal: Option<Duration>,
    /// The loops' timer overshoot p99 since the previous sample (not cumulative).
    overshoot: Option<Duration>,
    /// Descriptors and memory at that moment.
    resources: Reading,
    /// Connections not opened for want of a port or a descriptor, so far.
    exhausted: ExhaustedTotals,
}

/// Reads the figures each interval, as differences from the previous reading.
#[derive(Debug)]
pub(crate) struct Sampler {
    /// The cores the process may use (affinity, or the cgroup quota when smaller).
    cores: f64,
    /// The machine's CPUs, which `/proc/stat`'s steal sums over.
    cpus: f64,
    ticks_per_s: u64,
    threads: Arc<LoopThreads>,
    cpu_stat: Option<String>,
    /// The most memory each worker's plugin instance may use (`--max-memory`), when known.
    max_memory: Option<u64>,
    resources: Resources,
    exhausted: &'static ExhaustedCounts,
    last: Sample,
}

impl Sampler {
    /// A sampler for this process and the event loops `threads` (every one registered by now),
    /// whose workers' instances may each use `max_memory` bytes and whose failed connects count
    /// into `exhausted`, reading its baseline now.
    pub(crate) fn new(threads: Arc<LoopThreads>, max_memory: Option<u64>, exhausted: &'static ExhaustedCounts) -> Self {
        let (cpu_stat, quota) = kernel::cgroup_cpu();
        let affinity = kernel::affinity_cpus()
            .or_else(|| std::thread::available_parallelism().ok().and_then(|n| u32::try_from(n.get()).ok()))
            .unwrap_or(1);
        let cores = quota.map_or(f64::from(affinity), |q| q.min(f64::from(affinity)));
        let cpus = kernel::sysconf(libc::_SC_NPROCESSORS_ONLN).unwrap_or(u64::from(affinity)) as f64;
        let mut sampler = Sampler {
            cores,
            cpus,
            ticks_per_s: kernel::sysconf(libc::_SC_CLK_TCK).unwrap_or(100),
            threads,
            cpu_stat,
            max_memory,
            resources: Resources::open(),
            exhausted,
            last: Sample::default(),
        };
        sampler.last = sampler.read();
        sampler
    }

    /// The cores the process may use.
    pub(crate) fn cores_allowed(&self) -> f64 {
        self.cores
    }

    /// The figures since the last sample (or the baseline), with the crew's peak so far at
    /// `peak_workers`.
    pub(crate) fn sample(&mut self, peak_workers: u64) -> GeneratorHealth {
        let now = self.read();
        let budget = self.max_memory.map(|m| m.saturating_mul(peak_workers));
        let health = with_resources(figures(&self.last, &now, self.cores, self.cpus), &self.last, &now, budget);
        self.last = now;
        health
    }

    fn read(&mut self) -> Sample {
        Sample {
            resources: self.resources.read(),
            exhausted: self.exhausted.totals(),
            at: Some(Instant::now()),
            process: kernel::process_cpu(),
            loops: self.threads.schedstats(),
            throttled: self.cpu_stat.as_deref().and_then(kernel::read).as_deref().and_then(kernel::parse_throttled),
            steal: kernel::read("/proc/stat").as_deref().and_then(|s| kernel::parse_steal(s, self.ticks_per_s)),
            overshoot: self.threads.overshoot_p99(),
        }
    }
}

/// `health` with the resources at `after` (`budget`: the plugins' memory budget in bytes) and the
/// connects that found them exhausted since `before`. These need no span: a short interval has
/// them too.
fn with_resources(health: GeneratorHealth, before: &Sample, after: &Sample, budget: Option<u64>) -> GeneratorHealth {
    let share = |n: Option<u64>, of: Option<u64>| n.zip(of.filter(|&of| of > 0)).map(|(n, of)| n as f64 / of as f64);
    let r = &after.resources;
    let exhausted = after.exhausted.since(before.exhausted);
    GeneratorHealth {
        fds: share(r.fds, r.fd_limit),
        memory: share(r.rss, budget),
        memory_peak: share(r.rss_peak, budget),
        ports_exhausted: exhausted.ports,
        fds_exhausted: exhausted.fds,
        ..health
    }
}

/// The figures between two samples, as shares of the time between them.
fn figures(before: &Sample, after: &Sample, cores: f64, cpus: f64) -> GeneratorHealth {
    let Some(span) = before.at.zip(after.at).map(|(b, a)| a.saturating_duration_since(b)) else {
        return GeneratorHealth::default();
    };
    if span < MIN_SPAN {
        return GeneratorHealth::default();
    }
    let secs = span.as_secs_f64();
    let delta = |b: Option<Duration>, a: Option<Duration>| b.zip(a).map(|(b, a)| a.saturating_sub(b).as_secs_f64());
    // An event loop counts when both samples read it.
    let loops = || before.loops.iter().zip(&after.loops).filter_map(|(b, a)| b.zip(*a));
    let waited: Vec<f64> = loops().filter_map(|(b, a)| delta(Some(b.waiting), Some(a.waiting))).collect();
    // On a CPU or waiting for one: the time a loop was not idle, so anything due waited its turn.
    let loaded = loops().filter_map(|(b, a)| delta(Some(b.on_cpu + b.waiting), Some(a.on_cpu + a.waiting)));
    let share = |d: Option<f64>, of: f64| d.filter(|_| of > 0.0).map(|d| d / (secs * of));
    GeneratorHealth {
        cpu: share(delta(before.process, after.process), cores),
        run_queue: share((!waited.is_empty()).then(|| waited.iter().sum()), waited.len() as f64),
        run_queue_max: share(waited.iter().copied().reduce(f64::max), 1.0),
        throttled: share(delta(before.throttled, after.throttled), 1.0),
        steal: share(delta(before.steal, after.steal), cpus),
        overshoot_ms: after.overshoot.map(|d| d.as_secs_f64() * 1e3),
        loop_load: share(loaded.reduce(f64::max), 1.0),
        ..GeneratorHealth::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    /// A loop's schedstat: `on_cpu` and `waiting` in ms.
    fn loop_at(on_cpu: u64, waiting: u64) -> Option<Schedstat> {
        Some(Schedstat { on_cpu: Duration::from_millis(on_cpu), waiting: Duration::from_millis(waiting) })
    }

    #[test]
    fn figures_are_shares_of_the_interval_and_absent_stays_absent() {
        let t0 = Instant::now();
        let before = Sample {
            at: Some(t0),
            process: ms(0),
            loops: vec![loop_at(0, 0), loop_at(0, 100), loop_at(0, 0)],
            throttled: None,
            steal: ms(0),
            overshoot: None,
            ..Sample::default()
        };
        let after = Sample {
            at: Some(t0 + Duration::from_secs(1)),
            process: ms(1000),
            // The third event loop could not be read: it does not count.
            loops: vec![loop_at(500, 200), loop_at(100, 700), None],
            throttled: None,
            steal: ms(400),
            overshoot: ms(2),
            ..Sample::default()
        };
        let h = figures(&before, &after, 2.0, 4.0);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(close(h.cpu, 0.5), "1 s of CPU over 1 s of 2 cores: {h:?}");
        assert!(close(h.run_queue, 0.4), "(0.2 + 0.6) over 2 loops: {h:?}");
        assert!(close(h.run_queue_max, 0.6), "{h:?}");
        assert!(
            close(h.loop_load, 0.7),
            "the busiest loop: 0.5 s on a CPU and 0.2 s waiting (the other 0.1 + 0.6): {h:?}"
        );
        assert!(close(h.steal, 0.1), "0.4 s over 4 CPUs: {h:?}");
        assert_eq!(h.throttled, None, "no cgroup figure: absent, not 0");
        assert!(close(h.overshoot_ms, 2.0), "the later sample's p99, in ms: {h:?}");
    }

    #[test]
    fn a_span_too_short_to_mean_anything_has_no_figures() {
        let t0 = Instant::now();
        let before = Sample { at: Some(t0), process: ms(0), loops: vec![loop_at(0, 0)], ..Sample::default() };
        let after = Sample {
            at: Some(t0 + Duration::from_millis(3)),
            process: ms(4),
            loops: vec![loop_at(1, 2)],
            ..Sample::default()
        };
        assert!(!figures(&before, &after, 2.0, 2.0).is_measured());
    }

    #[test]
    fn an_ended_loop_keeps_its_last_reading() {
        let threads = Arc::new(LoopThreads::default());
        let inner = threads.clone();
        std::thread::spawn(move || {
            inner.register();
            inner.end();
        })
        .join()
        .unwrap();
        let loops = threads.schedstats();
        assert_eq!(loops.len(), 1);
        assert!(loops[0].is_some(), "read by the thread as it ended, though its /proc entry is gone");
    }

    #[test]
    fn without_event_loops_there_is_no_run_queue_figure() {
        let t0 = Instant::now();
        let before = Sample { at: Some(t0), process: ms(0), ..Sample::default() };
        let after = Sample { at: Some(t0 + Duration::from_secs(1)), process: ms(10), ..Sample::default() };
        let h = figures(&before, &after, 1.0, 1.0);
        assert_eq!((h.run_queue, h.run_queue_max), (None, None));
        assert!(h.cpu.is_some());
    }

    #[test]
    fn resources_are_shares_of_their_limits_and_exhaustion_counts_per_interval() {
        let t0 = Instant::now();
        let reading = |fds, rss, rss_peak| Reading {
            fds: Some(fds),
            fd_limit: Some(1024),
            rss: Some(rss),
            rss_peak: Some(rss_peak),
        };
        let before = Sample {
            at: Some(t0),
            resources: reading(10, 0, 0),
            exhausted: ExhaustedTotals { ports: 1, fds: 5 },
            ..Sample::default()
        };
        let after = Sample {
            // Too short a span for CPU shares: the resources are still there.
            at: Some(t0 + Duration::from_millis(3)),
            resources: reading(512, 64 << 20, 96 << 20),
            exhausted: ExhaustedTotals { ports: 1, fds: 12 },
            ..Sample::default()
        };
        let h = with_resources(figures(&before, &after, 1.0, 1.0), &before, &after, Some(128 << 20));
        assert_eq!(h.cpu, None);
        assert_eq!((h.fds, h.memory, h.memory_peak), (Some(0.5), Some(0.5), Some(0.75)), "{h:?}");
        assert_eq!((h.ports_exhausted, h.fds_exhausted), (0, 7));
        assert!(h.is_measured());
        let unlimited = Sample { resources: Reading { fd_limit: None, ..after.resources }, ..after.clone() };
        let h = with_resources(GeneratorHealth::default(), &before, &unlimited, None);
        assert_eq!((h.fds, h.memory, h.memory_peak), (None, None, None), "no limit, no budget: absent, not 0");
    }

    #[test]
    fn a_busy_thread_shows_cpu_and_a_sample_is_cheap() {
        let threads = Arc::new(LoopThreads::default());
        threads.register();
        let exhausted: &'static ExhaustedCounts = Box::leak(Box::default());
        let mut sampler = Sampler::new(threads.clone(), Some(64 << 20), exhausted);
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < MIN_SPAN + Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        exhausted.count(loadhost_metrics::Exhausted::Fds);
        let timed = Instant::now();
        let h = sampler.sample(2);
        let cost = timed.elapsed();
        // Not asserted: how long one sample takes here (it runs once per interval), and what of it
        // is counting the open descriptors (one `getdents` pass over `/proc/self/fd`).
        let fds = sampler.last.resources.fds;
        let timed = Instant::now();
        let counted = sampler.resources.read();
        println!(
            "one sample took {cost:?} (1 event loop, {fds:?} open descriptors; reading them and the memory {:?}): {h:?}",
            timed.elapsed()
        );
        assert!(counted.fds.is_some_and(|n| n > 0), "{counted:?}");
        assert!(h.fds.is_some_and(|f| f > 0.0 && f < 1.0), "{h:?}");
        assert!(h.memory.is_some_and(|m| m > 0.0) && h.memory_peak >= h.memory, "of 2 × 64 MiB: {h:?}");
        assert_eq!(h.fds_exhausted, 1, "{h:?}");
        assert!(h.cpu.is_some_and(|c| c > 0.0), "{h:?}");
        assert!(h.run_queue.is_some(), "{h:?}");
        assert!(sampler.cores_allowed() >= 0.01);
    }
}
