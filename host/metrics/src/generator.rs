//! The generator's health: how much of the CPU it may use the loadhost process used, and how long
//! its event loops waited for a CPU, per interval. Measured by the engine (its `health` sampler),
//! once per interval; shown by the outputs. Every figure but the timer overshoot (milliseconds) is
//! a share, so runs on different machines compare; a figure the machine does not expose is `None`,
//! never 0.
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
}

impl GeneratorHealth {
    /// Whether anything was measured (rows of a run under a virtual clock, or rebuilt from a
    /// results file, have nothing).
    pub fn is_measured(&self) -> bool {
        self.figures().iter().any(|(_, v)| v.is_some())
    }

    /// The figures by name, in the order outputs show them.
    pub fn figures(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("cpu", self.cpu),
            ("run_queue", self.run_queue),
            ("run_queue_max", self.run_queue_max),
            ("throttled", self.throttled),
            ("steal", self.steal),
            ("overshoot_ms", self.overshoot_ms),
        ]
    }
}
