//! A fake worker factory: each task sleeps (virtual time) and ends as a script says.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadhost_engine::{MetricsHandle, Plan, Task, TaskOutcome, Worker, WorkerContext, WorkerError, WorkerFactory};
use loadhost_metrics::{IntervalRow, RunReport};

/// What one task does: how long it takes and how it ends.
pub type Script = Arc<dyn Fn(&Task<'_>) -> (Duration, TaskOutcome) + Send + Sync>;

#[derive(Clone)]
pub struct FakeFactory {
    pub script: Script,
    pub made: Arc<AtomicU32>,
    /// Tasks executing now, and the most at once.
    pub active: Arc<AtomicU64>,
    pub peak_active: Arc<AtomicU64>,
    /// Worker ids at or above this cannot be made.
    pub fail_from: u32,
    /// What `setup` returns (`None`: the plugin has no lifecycle).
    pub setup: Option<Result<String, String>>,
    /// What each worker's `init` saw, and what `teardown` got.
    pub inits: Arc<Mutex<Vec<Option<String>>>>,
    pub teardown: Arc<Mutex<Option<String>>>,
    /// The scenario of each worker made, and how many setups and teardowns ran.
    pub scenarios: Arc<Mutex<Vec<String>>>,
    pub lifecycle_calls: Arc<AtomicU32>,
    /// Every task run: the worker's id and the task's iteration.
    pub ran: Arc<Mutex<Vec<(u32, u64)>>>,
    /// How long making a worker takes (a plugin's `init`, such as a login).
    pub init_delay: Duration,
}

impl FakeFactory {
    pub fn new(script: impl Fn(&Task<'_>) -> (Duration, TaskOutcome) + Send + Sync + 'static) -> Self {
        Self {
            script: Arc::new(script),
            made: Arc::default(),
            active: Arc::default(),
            peak_active: Arc::default(),
            fail_from: u32::MAX,
            setup: None,
            inits: Arc::default(),
            teardown: Arc::default(),
            scenarios: Arc::default(),
            lifecycle_calls: Arc::default(),
            ran: Arc::default(),
            init_delay: Duration::ZERO,
        }
    }

    /// Every task takes `d` and passes.
    pub fn sleeping(d: Duration) -> Self {
        Self::new(move |_| (d, TaskOutcome::Passed))
    }
}

pub struct FakeWorker {
    id: u32,
    ran: Arc<Mutex<Vec<(u32, u64)>>>,
    script: Script,
    active: Arc<AtomicU64>,
    peak_active: Arc<AtomicU64>,
}

impl Worker for FakeWorker {
    async fn run(&mut self, task: Task<'_>) -> TaskOutcome {
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_active.fetch_max(now, Ordering::SeqCst);
        self.ran.lock().unwrap().push((self.id, task.iteration));
        let (took, outcome) = (self.script)(&task);
        if !took.is_zero() {
            tokio::time::sleep(took).await;
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
        outcome
    }
}

impl WorkerFactory for FakeFactory {
    type Worker = FakeWorker;

    async fn setup(&self, _metrics: MetricsHandle) -> Result<Option<String>, WorkerError> {
        self.lifecycle_calls.fetch_add(1, Ordering::Relaxed);
        match &self.setup {
            None => Ok(None),
            Some(Ok(data)) => Ok(Some(data.clone())),
            Some(Err(why)) => Err(WorkerError::refused(why.clone())),
        }
    }

    async fn teardown(&self, setup_data: &str, _metrics: MetricsHandle) -> Result<(), WorkerError> {
        self.lifecycle_calls.fetch_add(1, Ordering::Relaxed);
        *self.teardown.lock().unwrap() = Some(setup_data.to_owned());
        Ok(())
    }

    async fn new_worker(&self, ctx: WorkerContext) -> Result<FakeWorker, WorkerError> {
        if ctx.id >= self.fail_from {
            return Err(WorkerError::new(format!("no room for worker {}", ctx.id)));
        }
        if !self.init_delay.is_zero() {
            tokio::time::sleep(self.init_delay).await;
        }
        self.made.fetch_add(1, Ordering::Relaxed);
        self.inits.lock().unwrap().push(ctx.setup_data.as_deref().map(str::to_owned));
        self.scenarios.lock().unwrap().push(ctx.scenario.to_string());
        Ok(FakeWorker {
            id: ctx.id,
            ran: self.ran.clone(),
            script: self.script.clone(),
            active: self.active.clone(),
            peak_active: self.peak_active.clone(),
        })
    }
}

/// Run a plan, keeping the interval rows.
pub async fn run(plan: &Plan, factory: FakeFactory) -> (RunReport, Vec<IntervalRow>) {
    let mut rows = Vec::new();
    let report = loadhost_engine::run(plan, factory, &mut |row: &IntervalRow| rows.push(row.clone()))
        .await
        .expect("the run should complete");
    (report, rows)
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The identity, plus: interval rows add up to the totals.
pub fn assert_accounting(report: &RunReport, rows: &[IntervalRow]) {
    let c = report.counts();
    assert!(c.identity_holds(), "identity broken: {c:?}");
    let scheduled: u64 = rows.iter().map(|r| r.counts.scheduled).sum();
    let passed: u64 = rows.iter().map(|r| r.counts.passed).sum();
    let started: u64 = rows.iter().map(|r| r.started).sum();
    assert_eq!(scheduled, c.scheduled, "rows' scheduled must add up to the total");
    assert_eq!(passed, c.passed, "rows' passed must add up to the total");
    assert_eq!(started, report.started, "rows' started must add up to the total");
}
