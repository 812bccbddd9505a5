//! `arena lab`: headless experiments. A server and clients talk over real
//! UDP on 127.0.0.1, the link conditioner on the client adds the latency,
//! jitter and loss asked for, and, in most, time advances by hand at a fixed
//! frame rate in one process, so that a run is repeatable (same seed, same
//! figures) and as fast as the machine allows; `timing` runs on the wall
//! clock, and `servercost` runs the server and its clients as processes of
//! their own. Each experiment prints one JSON object.
//!
//! - `setup`: what they share (settings, errors, the two-player lab).
//! - `prediction`, `hitreg`, `interpolation`, `bandwidth`, `flick`, `peek`,
//!   `unlag`, `servercost`, `rockets`, `demo`, `kill_cam`, `master`,
//!   `pickups`, `teleport`, `voice`: one experiment each (`master` needs no
//!   game: a master under attack).
//! - `timing`: `peek`'s run on the wall clock, at a chosen frame rate.
//! - `sweep`: the experiments over ranges, and the charts.

mod bandwidth;
mod demo;
mod flick;
mod hitreg;
mod interpolation;
mod kill_cam;
mod master;
mod peek;
mod pickups;
mod prediction;
mod rockets;
mod servercost;
mod setup;
mod sweep;
mod teleport;
mod timing;
mod unlag;
mod voice;

pub use bandwidth::{BandwidthReport, KindRate, bandwidth, run_a_loop};
pub use demo::{DemoGame, DemoReport, demo};
pub use flick::{Flick, FlickReport, flick};
pub use hitreg::{HitregReport, hitreg};
pub use interpolation::{InterpolationReport, interpolation};
pub use kill_cam::{KillCamReport, KillSeen, kill_cam, kill_once, part_gap};
pub use master::{MasterLab, MasterReport, master};
pub use peek::{Peek, PeekReport, peek};
pub use pickups::{PickupsReport, pickups};
pub use prediction::{PredictionReport, prediction, prediction_pushed};
pub use rockets::{RocketFigures, RocketsReport, rockets};
pub use servercost::{ServerCostReport, ServerLoad, servercost};
pub use setup::{FPS_RANGE, LAB_FRAME_HZ, LabError, LabSettings, Switch, WARMUP_S, build_name};
pub use sweep::{SweepError, SweepPart, SweepReport, sweep};
pub use teleport::{TeleportReport, teleport};
pub use timing::{TimingReport, timing};
pub use unlag::{DEFAULT_CAPS_MS, UnlagReport, UnlagRow, unlag};
pub use voice::{MouthToEar, VoiceReport, voice};
