//! The windowed modes' options (the menu, `play`, `host`, `join`) and the
//! view's config made from them (in a build with the `window` feature).

use std::path::PathBuf;

#[cfg(feature = "window")]
use arena_client::NetcodeSettings;
#[cfg(feature = "window")]
use arena_view::{Screenshot, StartAction, ViewConfig};
use clap::Args;

use super::netcode::{LinkArgs, NetcodeArgs};
use super::values::parse_resolution;
#[cfg(feature = "window")]
use super::values::positive_duration;

/// Shortest run that leaves time for a screenshot one second before its
/// end, seconds.
#[cfg(feature = "window")]
const MIN_SCREENSHOT_RUN_S: f64 = 1.0;

/// Options of the windowed modes.
#[derive(Args, Debug, Clone)]
pub(crate) struct WindowArgs {
    /// Your player name.
    #[arg(long)]
    pub name: Option<String>,
    /// Save a screenshot to FILE one second before --seconds runs out.
    #[arg(long, value_name = "FILE", requires = "seconds")]
    pub screenshot: Option<PathBuf>,
    /// With --screenshot: quit after this many seconds.
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// With --screenshot: take it just after the first kill in view instead
    /// (a body falling), or one second before --seconds if there is none.
    #[arg(long, requires = "screenshot")]
    pub screenshot_after_kill: bool,
    /// With --screenshot: take it on a kill-cam's frozen shot instead (the
    /// first with the server's ghost behind cover or of a rocket kill, or any in the last
    /// tenth of the run).
    #[arg(long, requires = "screenshot")]
    pub screenshot_in_kill_cam: bool,
    #[command(flatten)]
    pub netcode: NetcodeArgs,
    /// Half-Life's `pushlatency`: predict your own motion at most |MS|
    /// milliseconds ahead of what the server acknowledged (-1000: all of it,
    /// the default). Less than your round trip feels like "ice skates", as
    /// the paper's footnote tells.
    #[arg(long, value_name = "MS", allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-10_000..=10_000))]
    pub pushlatency: Option<i32>,
    /// Draw your shots' targets where you saw them (red) and where the server tested them (blue).
    #[arg(long)]
    pub show_hitboxes: bool,
    /// Demonstration aid: your view follows the nearest player in sight, as your client draws them.
    #[arg(long)]
    pub auto_aim: bool,
    /// Window size in pixels, WIDTHxHEIGHT.
    #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_resolution)]
    pub resolution: (u32, u32),
    #[command(flatten)]
    pub link: LinkArgs,
}

#[cfg(feature = "window")]
impl WindowArgs {
    /// The view's config for a window that starts with `start`.
    pub(crate) fn view_config(self, start: StartAction) -> Result<ViewConfig, String> {
        let screenshot =
            screenshot(self.screenshot, self.seconds, self.screenshot_after_kill, self.screenshot_in_kill_cam)?;
        let conditions = self.link.conditions()?;
        self.netcode.check()?;
        let netcode = NetcodeSettings {
            prediction: self.netcode.prediction().on(),
            reconciliation: self.netcode.reconciliation().on(),
            interpolation: self.netcode.interpolation().on(),
            interp_ms: self.netcode.interp_ms,
            lag_compensation: self.netcode.lag_compensation().on(),
            projectile_compensation: true,
            subtick: true,
            hit_prediction: true,
            show_hitboxes: self.show_hitboxes,
            // The player's setting (on unless turned off) replaces this once loaded.
            kill_cam: true,
            predict_ahead_ms: self.pushlatency.map(i32::unsigned_abs),
            update_rate: self.netcode.update_rate.unwrap_or(0),
            cmd_rate: self.netcode.cmd_rate.unwrap_or(0),
            rate: self.netcode.rate.unwrap_or(0),
            conditions,
            conditioner_seed: None,
        };
        let mut netcode_flags = self.netcode.given();
        if self.pushlatency.is_some() {
            netcode_flags.push("pushlatency");
        }
        if self.show_hitboxes {
            netcode_flags.push("cl_showhitboxes");
        }
        Ok(ViewConfig {
            start,
            name: self.name,
            screenshot,
            netcode,
            netcode_flags,
            resolution: self.resolution,
            auto_aim: self.auto_aim,
        })
    }
}

/// `--screenshot FILE --seconds S` (and where in the run to take it) as the
/// view's screenshot: none without a file; `--seconds` alone is refused, as
/// is a run too short to take it in.
#[cfg(feature = "window")]
pub(super) fn screenshot(
    path: Option<PathBuf>,
    seconds: Option<f64>,
    after_kill: bool,
    in_kill_cam: bool,
) -> Result<Option<Screenshot>, String> {
    match (path, seconds) {
        (Some(path), Some(seconds)) => {
            let quit_after = positive_duration(seconds)?;
            if seconds < MIN_SCREENSHOT_RUN_S {
                return Err("--seconds must be at least 1 with --screenshot".into());
            }
            Ok(Some(Screenshot { path, quit_after, after_kill, in_kill_cam }))
        }
        (None, Some(_)) => Err("--seconds goes with --screenshot FILE".into()),
        _ => Ok(None),
    }
}
