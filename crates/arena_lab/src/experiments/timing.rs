//! `arena lab timing`: whether the netcode's timing depends on the frame
//! rate. The peeks of `arena lab peek`, on the wall clock: a real server and
//! two clients over UDP through the link conditioner, both clients drawing
//! at `--fps` with their sockets on their own I/O threads, as in a game.
//! What a slow frame rate must not change: the round trip, the estimate of
//! the server's clock, the interpolation delay, commands leaving at the
//! tick's pace, and how rarely they come late.

use std::time::Instant;

use serde::Serialize;

use super::peek::{LabClock, Peek, run};
use super::setup::{LabError, LabSettings};

/// What `arena lab timing` prints.
#[derive(Debug, Serialize)]
pub struct TimingReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    /// Both clients' frames per second.
    pub fps: f64,
    /// The round trip the peeker measures (mean over its frames), ms.
    pub rtt_ms: f64,
    /// How far the holder's estimate of the server's clock is from the
    /// server's clock less the one-way delay (95th percentile), ms.
    pub clock_offset_error_ms_p95: f64,
    /// Its mean, with its sign (negative: the estimate is behind), ms.
    pub clock_offset_error_ms_mean: f64,
    /// The holder's interpolation delay (mean over its frames), ms.
    pub interp_delay_ms: f64,
    /// Time between consecutive command datagrams leaving the peeker, ms.
    pub command_send_gap_ms_p50: f64,
    pub command_send_gap_ms_p95: f64,
    /// Commands that reached the server after their tick ran, of all.
    pub late_commands_ratio: f64,
    /// The peeker's advantage (mean over the peeks, as `arena lab peek`), ms.
    pub peek_ms: f64,
    pub peeks: usize,
    /// One tick, ms.
    pub tick_ms: f64,
}

/// Runs `arena lab timing` with both clients at `fps`.
pub fn timing(settings: LabSettings, fps: f64) -> Result<TimingReport, LabError> {
    let (report, figures) = run(settings.clone(), Peek { fps }, LabClock::Real(Instant::now()))?;
    Ok(TimingReport {
        experiment: "timing",
        fps,
        rtt_ms: figures.rtt_ms,
        clock_offset_error_ms_p95: figures.clock_offset_error_ms_p95,
        clock_offset_error_ms_mean: figures.clock_offset_error_ms_mean,
        interp_delay_ms: report.interp_ms,
        command_send_gap_ms_p50: figures.command_send_gap_ms_p50,
        command_send_gap_ms_p95: figures.command_send_gap_ms_p95,
        late_commands_ratio: report.late_commands_ratio,
        peek_ms: report.advantage_mean_ms,
        peeks: report.peeks,
        tick_ms: 1000.0 / f64::from(settings.tick),
        settings,
    })
}
