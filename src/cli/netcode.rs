//! The flags of the paper's techniques and of the link conditioner, each
//! switchable: the windowed modes, the lab and `arena bots` share them.

use arena_client::LinkConditions;
use arena_lab::experiments::Switch;
use clap::Args;

/// The paper's techniques, each switchable.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct NetcodeArgs {
    /// Client-side prediction of your own movement and shots.
    #[arg(long, value_enum, default_value = "on")]
    pub prediction: Switch,
    /// Reconciliation (replaying unacknowledged commands on each snapshot).
    #[arg(long, value_enum, default_value = "on")]
    pub reconciliation: Switch,
    /// Interpolation of other players between snapshots.
    #[arg(long, value_enum, default_value = "on")]
    pub interpolation: Switch,
    /// Interpolation delay, milliseconds (0-250; default: adaptive, about a
    /// snapshot interval plus what the measured jitter needs).
    #[arg(long, value_name = "MS")]
    pub interp_ms: Option<u16>,
    /// Ask the server to compensate your lag when you shoot.
    #[arg(long, value_enum, default_value = "on")]
    pub lag_compensation: Switch,
}

/// The link conditioner's flags.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct LinkArgs {
    /// Round trip the link conditioner adds, milliseconds (half each way).
    #[arg(long, default_value_t = 0.0, value_name = "MS", allow_negative_numbers = true)]
    pub fake_latency_ms: f32,
    /// ± variation of each packet's one-way delay, milliseconds.
    #[arg(long, default_value_t = 0.0, value_name = "MS", allow_negative_numbers = true)]
    pub fake_jitter_ms: f32,
    /// Probability (0-1) that a packet is dropped, each way.
    #[arg(long, default_value_t = 0.0, value_name = "P", allow_negative_numbers = true)]
    pub fake_loss: f32,
}

#[cfg(feature = "window")]
impl NetcodeArgs {
    /// Refuses an interpolation delay past what the protocol carries.
    pub(crate) fn check(self) -> Result<(), String> {
        match self.interp_ms {
            Some(ms) if ms > arena_protocol::MAX_INTERP_MS => {
                Err(format!("--interp-ms must be 0..={}", arena_protocol::MAX_INTERP_MS))
            }
            _ => Ok(()),
        }
    }
}

impl LinkArgs {
    /// The link conditioner's settings; refused rather than clamped when out
    /// of range, so that an experiment never measures other conditions than asked.
    pub(crate) fn conditions(self) -> Result<LinkConditions, String> {
        let conditions =
            LinkConditions { latency_ms: self.fake_latency_ms, jitter_ms: self.fake_jitter_ms, loss: self.fake_loss };
        if conditions.clamped() != conditions {
            return Err(format!(
                "--fake-latency-ms and --fake-jitter-ms must be within 0..={}, --fake-loss within 0..=1",
                LinkConditions::MAX_MS
            ));
        }
        Ok(conditions)
    }
}
