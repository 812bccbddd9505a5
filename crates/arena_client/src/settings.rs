//! The netcode switches a player (or an experiment) can flip at run time,
//! the link conditioner's settings, and voice's.

use bevy::prelude::*;

use crate::conditioner::LinkConditions;
use crate::transport::UdpTransport;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetcodeSettings>().init_resource::<VoiceSettings>().add_systems(
        PreUpdate,
        apply_conditions.run_if(resource_exists::<UdpTransport>.and_then(resource_changed::<NetcodeSettings>)),
    );
}

/// Voice: on (talk with the push-to-talk key, hear the others) or off
/// (nothing sent, and the server sends us nothing), and how loud the others
/// are played (1: as they came). A browser's page has no voice yet: off there.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct VoiceSettings {
    pub enabled: bool,
    pub volume: f32,
}

impl Default for VoiceSettings {
    fn default() -> Self {
        Self { enabled: cfg!(not(target_arch = "wasm32")), volume: 1.0 }
    }
}

/// What the client does with the paper's techniques, and how bad the fake
/// network is.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct NetcodeSettings {
    /// Run your own commands at once with the shared movement code.
    pub prediction: bool,
    /// On each snapshot, replay the commands the server has not seen yet on
    /// top of its state. Off: take the server's (older) state as it is.
    pub reconciliation: bool,
    /// Draw remote players between snapshots, a little in the past. Off: as
    /// the newest snapshot has them.
    pub interpolation: bool,
    /// Interpolation delay, milliseconds; `None`: adaptive (a snapshot
    /// interval plus what the measured jitter needs, see `interp_delay`).
    pub interp_ms: Option<u16>,
    /// Ask the server to rewind the other players to what we saw when firing.
    pub lag_compensation: bool,
    /// Ask the server to bring our rockets up to the time we fired them.
    pub projectile_compensation: bool,
    /// Sub-tick shots: a shot goes from the frame fire was pressed in (its
    /// time within the tick, its view, what it drew), not from the next tick.
    pub subtick: bool,
    /// Show the hit marker the moment a shot hits as drawn, before the
    /// server's verdict (which confirms or denies it).
    pub hit_prediction: bool,
    /// Draw, for each of our shots, the target where we saw it (red) and
    /// where the server tested it (blue).
    pub show_hitboxes: bool,
    /// Ask the server for the kill-cam after a death (the game turns it on
    /// from the player's settings; off for headless clients, whose respawn
    /// it would hold).
    pub kill_cam: bool,
    /// Half-Life's `pushlatency`: predict at most this far ahead of the
    /// newest state the server acknowledged, milliseconds; `None`: all the
    /// way (what the paper settled on). Less leaves the round trip minus
    /// this between a key and the motion it makes: the paper's footnote
    /// calls what that feels like "ice skates".
    pub predict_ahead_ms: Option<u32>,
    /// Half-Life's `cl_updaterate`: snapshots a second to ask the server
    /// for (0: as many as it sends).
    pub update_rate: u8,
    /// Half-Life's `cl_cmdrate`: command packets a second at most (0: one
    /// each tick). Fewer packets carry the same commands, later.
    pub cmd_rate: u16,
    /// Half-Life's `rate`: snapshot bytes a second this client can take
    /// (0: no limit; else within [`arena_protocol::RATE_RANGE`]).
    pub rate: u32,
    /// Fake latency, jitter and loss on this client's link.
    pub conditions: LinkConditions,
    /// Seed of the conditioner's randomness; random when `None`.
    pub conditioner_seed: Option<u64>,
}

impl Default for NetcodeSettings {
    fn default() -> Self {
        Self {
            prediction: true,
            reconciliation: true,
            interpolation: true,
            interp_ms: None,
            lag_compensation: true,
            projectile_compensation: true,
            subtick: true,
            hit_prediction: true,
            show_hitboxes: false,
            kill_cam: false,
            predict_ahead_ms: None,
            update_rate: 0,
            cmd_rate: 0,
            rate: 0,
            conditions: LinkConditions::OFF,
            conditioner_seed: None,
        }
    }
}

fn apply_conditions(settings: Res<NetcodeSettings>, mut transport: ResMut<UdpTransport>) {
    if transport.conditions() != settings.conditions.clamped() {
        transport.set_conditions(settings.conditions);
        let c = transport.conditions();
        info!(
            "link conditioner: +{:.0} ms round trip, ±{:.0} ms jitter, {:.1}% loss each way",
            c.latency_ms,
            c.jitter_ms,
            c.loss * 100.0
        );
    }
}
