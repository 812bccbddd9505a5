//! The driver: feeds a target inputs, catches its panics, and reports.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;
use std::time::{Duration, Instant};

use crate::inputs::Generator;
use crate::target::Target;

/// Most panicking inputs kept per run.
const MAX_KEPT: usize = 20;

/// One panicking input and what the panic said.
#[derive(Debug, Clone)]
pub struct Crash {
    pub input: Vec<u8>,
    pub message: String,
}

/// What a run of one target did.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: &'static str,
    pub inputs: u64,
    pub panics: u64,
    pub elapsed: Duration,
    /// The first panicking inputs.
    pub crashes: Vec<Crash>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<18} {:>11} inputs {:>4} panics {:>8.1} s ({:.0}/s)",
            self.target,
            self.inputs,
            self.panics,
            self.elapsed.as_secs_f64(),
            self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
        )?;
        for crash in &self.crashes {
            write!(f, "\n  panic: {}\n  input ({} bytes): {}", crash.message, crash.input.len(), hex(&crash.input))?;
        }
        Ok(())
    }
}

/// Lowercase hex of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

thread_local! {
    /// Whether this thread is inside [`run`]: its panics are findings.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The message (with its location) of the panic [`run`] is catching on
    /// this thread.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs, once per process, a panic hook that records the message of a
/// panic on a thread inside [`run`] instead of printing it (a finding for
/// the report, not noise on stderr) and hands every other thread's panic to
/// the hook that was there before: a test failing beside a fuzz run in the
/// same test binary still says why.
fn quiet_panics_in_runs() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
                return;
            }
            let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            LAST.with(|last| *last.borrow_mut() = Some(format!("{payload}{location}")));
        }));
    });
}

/// This thread's panics are findings while it lives (even if `run` itself
/// unwinds).
struct QuietWhileRunning;

impl QuietWhileRunning {
    fn start() -> Self {
        quiet_panics_in_runs();
        QUIET.with(|quiet| quiet.set(true));
        Self
    }
}

impl Drop for QuietWhileRunning {
    fn drop(&mut self) {
        QUIET.with(|quiet| quiet.set(false));
    }
}

/// Runs `target` on `inputs` inputs made from `seed`, or until `deadline`.
pub fn run(target: &mut dyn Target, inputs: u64, seed: u64, deadline: Option<Instant>) -> Report {
    let _quiet = QuietWhileRunning::start();
    let seeds = target.seeds();
    let mut generator = Generator::new(seed ^ fnv(target.name()));
    let started = Instant::now();
    let mut report =
        Report { target: target.name(), inputs: 0, panics: 0, elapsed: Duration::ZERO, crashes: Vec::new() };
    while report.inputs < inputs {
        if report.inputs.is_multiple_of(256) && deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let input = generator.input(&seeds);
        report.inputs += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| target.run(&input)));
        if outcome.is_err() {
            report.panics += 1;
            let message = LAST.with(|last| last.borrow_mut().take()).unwrap_or_default();
            if report.crashes.len() < MAX_KEPT {
                report.crashes.push(Crash { input, message });
            }
            // A panic may leave a stateful target half-changed: start it afresh.
            target.reset();
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// FNV-1a of a name: each target gets its own stream from one seed.
fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
