//! The generator's health: how much of the CPU it may use the loadhost process used, and how long
//! its event loops waited for a CPU and how late their timers fired, per interval; and its
//! resources: file descriptors, memory, connections it could not open for want of a port or a
//! descriptor. Measured by the engine (its `health` sampler), once per interval; shown by the
//! outputs. Every figure but the timer overshoot (milliseconds) is a share, so runs on different
//! machines compare; a figure the machine does not expose is `None`, never 0. The resources'
//! exhaustion is counted, not shared: one failed connect is already worth seeing.

/// The generator's health over one interval, each figure a share of the interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GeneratorHealth {
    /// The process's CPU time ÷ (interval × cores allowed): 1 is every core it may use, busy.
    pub cpu: Option<f64>,
    /// The event loops' time runnable but waiting for a CPU ÷ (interval × event loops).
    pub run_queue: Option<f64>,
    /// The same for the event loop that waited longest ÷ interval.
    pub run_queue_max: Option<f64>,
    /// The cgroup's throttled time ÷ interval (a container's CPU limit).
    pub throttled: Option<f64>,
    /// The machine's steal time ÷ interval ÷ its CPUs (a VM's neighbours).
    pub steal: Option<f64>,
    /// How late the event loops' timers fired, p99 in milliseconds: the delay the generator
    /// itself adds to anything due (a response, a task, a timer), whatever its cause.
    #[serde(default)]
    pub overshoot_ms: Option<f64>,
    /// The busiest event loop's time on a CPU or waiting for one ÷ interval: near 1, the loop was
    /// never idle, so anything due waited behind its backlog.
    #[serde(default)]
    pub loop_load: Option<f64>,
    // The resources, read at the interval's end (the counts over it).
    /// Open file descriptors ÷ the soft `RLIMIT_NOFILE`: at 1, a new connection fails (`EMFILE`).
    pub fds: Option<f64>,
    /// Resident memory (`VmRSS`) ÷ the plugins' memory budget: `--max-memory` × the crew's peak
    /// workers so far.
    pub memory: Option<f64>,
    /// Peak resident memory so far (`VmHWM`) ÷ the same budget.
    pub memory_peak: Option<f64>,
    /// Connections not opened in the interval for want of a local port (`EADDRNOTAVAIL`).
    pub ports_exhausted: u64,
    /// Connections not opened in the interval for want of a file descriptor (`EMFILE`, `ENFILE`).
    pub fds_exhausted: u64,
}

impl GeneratorHealth {
    /// Whether anything was measured (rows of a run under a virtual clock, or rebuilt from a
    /// results file, have nothing).
    pub fn is_measured(&self) -> bool {
        self.figures().iter().any(|(_, v)| v.is_some())
    }

    /// The figures by name, in the order outputs show them.
    pub fn figures(&self) -> [(&'static str, Option<f64>); 10] {
        [
            ("cpu", self.cpu),
            ("run_queue", self.run_queue),
            ("run_queue_max", self.run_queue_max),
            ("throttled", self.throttled),
            ("steal", self.steal),
            ("overshoot_ms", self.overshoot_ms),
            ("loop_load", self.loop_load),
            ("fds", self.fds),
            ("memory", self.memory),
            ("memory_peak", self.memory_peak),
        ]
    }

    /// The counts by name, in the order outputs show them.
    pub fn counts(&self) -> [(&'static str, u64); 2] {
        [("ports_exhausted", self.ports_exhausted), ("fds_exhausted", self.fds_exhausted)]
    }
}
