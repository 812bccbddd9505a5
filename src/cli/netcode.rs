//! The flags of the paper's techniques and of the link conditioner, each
//! switchable: the windowed modes, the lab and `arena bots` share them.

use arena_client::LinkConditions;
use arena_lab::experiments::Switch;
use clap::Args;

/// The paper's techniques, each switchable.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct NetcodeArgs {
    /// Client-side prediction of your own movement and shots. [default: on; in a window, as last chosen in the
    /// console or the netcode panel]
    #[arg(long, value_enum)]
    pub prediction: Option<Switch>,
    /// Reconciliation (replaying unacknowledged commands on each snapshot). [default: on; in a window, as last chosen in the
    /// console or the netcode panel]
    #[arg(long, value_enum)]
    pub reconciliation: Option<Switch>,
    /// Interpolation of other players between snapshots. [default: on; in a window, as last chosen in the
    /// console or the netcode panel]
    #[arg(long, value_enum)]
    pub interpolation: Option<Switch>,
    /// Interpolation delay, milliseconds (0-250; default: adaptive, about a
    /// snapshot interval plus what the measured jitter needs).
    #[arg(long, value_name = "MS")]
    pub interp_ms: Option<u16>,
    /// Half-Life's `cl_updaterate`: snapshots a second to ask the server for
    /// (0-255; default: all it sends).
    #[arg(long, value_name = "HZ")]
    pub update_rate: Option<u8>,
    /// Half-Life's `cl_cmdrate`: command packets a second at most (10-1000;
    /// default: one a tick).
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u16).range(10..=1000))]
    pub cmd_rate: Option<u16>,
    /// Half-Life's `rate`: snapshot bytes a second this client can take
    /// (2000-1000000; default: no limit).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(2000..=1_000_000))]
    pub rate: Option<u32>,
    /// Ask the server to compensate your lag when you shoot. [default: on; in a window, as last chosen in the
    /// console or the netcode panel]
    #[arg(long, value_enum)]
    pub lag_compensation: Option<Switch>,
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

impl NetcodeArgs {
    /// Prediction (on unless the flag says otherwise).
    pub(crate) fn prediction(self) -> Switch {
        self.prediction.unwrap_or(Switch::On)
    }

    pub(crate) fn reconciliation(self) -> Switch {
        self.reconciliation.unwrap_or(Switch::On)
    }

    pub(crate) fn interpolation(self) -> Switch {
        self.interpolation.unwrap_or(Switch::On)
    }

    pub(crate) fn lag_compensation(self) -> Switch {
        self.lag_compensation.unwrap_or(Switch::On)
    }

    /// The console names of the variables these flags set.
    #[cfg(feature = "window")]
    pub(crate) fn given(self) -> Vec<&'static str> {
        [
            (self.prediction.is_some(), "cl_predict"),
            (self.reconciliation.is_some(), "cl_reconcile"),
            (self.interpolation.is_some(), "cl_interpolate"),
            (self.interp_ms.is_some(), "cl_interp"),
            (self.lag_compensation.is_some(), "cl_lagcompensation"),
            (self.update_rate.is_some(), "cl_updaterate"),
            (self.cmd_rate.is_some(), "cl_cmdrate"),
            (self.rate.is_some(), "rate"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }

    /// Refuses an interpolation delay past what the protocol carries.
    #[cfg(feature = "window")]
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
