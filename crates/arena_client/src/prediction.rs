//! Client-side prediction and reconciliation, as in the paper.
//!
//! Each tick the command just made runs through the shared movement code at
//! once, and the state predicted after it is kept, by tick, until the server
//! acknowledges that tick. Each snapshot acknowledges a tick: the server's
//! state is compared with what was predicted for that tick, and on a
//! difference the prediction starts again from the server's state and
//! replays the commands still unacknowledged (the window `commands.rs`
//! keeps): reconciliation. The difference at the present tick
//! becomes a visual offset that fades over about 100 ms, so a correction is
//! never a snap. Effects reported by the movement code (jumps, landings,
//! footsteps) are sent out only the first time a tick is predicted.

use std::collections::VecDeque;

use arena_sim::{PlayerState, TickEvents, step_player, tick_after};
use bevy::prelude::*;

use crate::commands::{CommandWindow, MAX_PENDING, ThisTick};
use crate::settings::NetcodeSettings;
use crate::vocabulary::{ClientWorld, LocalPlayer, NetState, Roster, SnapshotApplied};
/// Position difference that counts as a misprediction, metres.
pub const MISPREDICTION_EPSILON_M: f32 = 1.0e-4;
/// Velocity difference that counts as a misprediction, metres per second.
const VELOCITY_EPSILON_MPS: f32 = 1.0e-3;
/// Time constant of the visual offset's fade, seconds: about 95% is gone
/// after 100 ms.
pub const CORRECTION_FADE_S: f32 = 0.033;
/// Corrections larger than this (a respawn, a teleport) snap instead of
/// sliding, metres.
pub const SNAP_CORRECTION_M: f32 = 3.0;
/// How long the panel's "largest correction lately" looks back, seconds.
const RECENT_S: f64 = 5.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Prediction>().init_resource::<LocalRender>().add_message::<PredictedEvents>();
}

/// The local player's predicted state, and the states predicted after each
/// unacknowledged tick.
#[derive(Resource, Debug, Default)]
pub struct Prediction {
    /// The state predicted after each unacknowledged tick, oldest first.
    pub states: VecDeque<(u32, PlayerState)>,
    /// The newest predicted state; `None` until the server has shown us our player.
    pub current: Option<PlayerState>,
    /// The predicted state one tick before `current`, to draw between the two.
    pub previous: PlayerState,
    /// The newest tick the server has acknowledged.
    pub last_ack: Option<u32>,
    /// What is still to fade of past corrections, metres, added when drawing.
    pub visual_offset: Vec3,
    pub mispredictions: u64,
    /// Largest correction (at the present tick) so far, metres.
    pub max_correction_m: f32,
    /// Recent corrections: (real time in seconds, size in metres).
    pub recent_corrections: VecDeque<(f64, f32)>,
    /// Replays run (each after a misprediction or a switch being turned on).
    pub replays: u64,
    /// The settings seen last, to notice a switch being turned on.
    seen: Option<(bool, bool)>,
    /// The next snapshot must rebuild the prediction (a switch was turned on).
    needs_replay: bool,
}

impl Prediction {
    /// The largest correction within the last few seconds, metres.
    pub fn recent_max_correction(&self) -> f32 {
        self.recent_corrections.iter().map(|(_, m)| *m).fold(0.0, f32::max)
    }
}

/// Effects from the shared code (steps, jumps, landings, shots, reloads), the
/// first (and only) time a tick is predicted.
#[derive(Message, Debug, Clone, Copy)]
pub struct PredictedEvents {
    pub tick: u32,
    pub events: TickEvents,
}

/// Where to draw the local player (and put the camera) this frame.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct LocalRender {
    pub state: Option<PlayerState>,
}

pub(crate) fn reset(mut prediction: ResMut<Prediction>, mut render: ResMut<LocalRender>) {
    *prediction = Prediction::default();
    *render = LocalRender::default();
}

/// How far apart a predicted state and the server's are, or `None` if they
/// agree on everything the client predicts (movement and the rifle).
fn misprediction(predicted: &PlayerState, actual: &PlayerState) -> Option<f32> {
    let distance = predicted.pos.distance(actual.pos);
    let differs = distance > MISPREDICTION_EPSILON_M
        || predicted.vel.distance(actual.vel) > VELOCITY_EPSILON_MPS
        || predicted.on_ground != actual.on_ground
        || predicted.crouched != actual.crouched
        || predicted.ammo != actual.ammo
        || (predicted.reload_s - actual.reload_s).abs() > 1e-4;
    differs.then_some(distance)
}

/// Whether the server changed what only it decides (health, death, respawn):
/// not a misprediction, but the prediction must start again from its state.
fn server_decided(predicted: &PlayerState, actual: &PlayerState) -> bool {
    predicted.health != actual.health || predicted.alive != actual.alive || predicted.spawn_count != actual.spawn_count
}

pub(crate) fn predict_tick(
    this_tick: Res<ThisTick>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    mut prediction: ResMut<Prediction>,
    mut effects: MessageWriter<PredictedEvents>,
) {
    let Some(cmd) = this_tick.0 else {
        // Holding for clock sync: nothing moves this tick.
        if let Some(current) = prediction.current {
            prediction.previous = current;
        }
        return;
    };
    let after = match prediction.current {
        Some(current) if settings.prediction => {
            let (after, events) = step_player(&current, &cmd, &world, roster.tick_rate().dt_s());
            if events.any() {
                effects.write(PredictedEvents { tick: cmd.tick, events });
            }
            prediction.previous = current;
            prediction.current = Some(after);
            after
        }
        // Not predicting (or not yet able to): the state stands, and the
        // command (in the window) is replayed if prediction is switched on.
        Some(current) => current,
        None => PlayerState::default(),
    };
    prediction.states.push_back((cmd.tick, after));
    while prediction.states.len() > MAX_PENDING {
        prediction.states.pop_front();
    }
}

pub(crate) fn reconcile(
    mut snapshots: MessageReader<SnapshotApplied>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    window: Res<CommandWindow>,
    time: Res<Time<Real>>,
    mut prediction: ResMut<Prediction>,
) {
    let p = &mut *prediction;
    let switches = (settings.prediction, settings.reconciliation);
    if p.seen.is_some_and(|(pred, rec)| (!pred && switches.0) || (!rec && switches.1)) {
        // A switch was turned on: rebuild the prediction at the next snapshot.
        p.needs_replay = true;
    }
    p.seen = Some(switches);

    let Some(snapshot) = snapshots.read().last().copied() else { return };
    let Some(auth) = snapshot.local_state else { return };
    let Some(ack) = snapshot.ack else {
        // The server has run none of our commands yet: stand where it says.
        p.current = Some(auth);
        p.previous = auth;
        return;
    };
    if p.last_ack.is_some_and(|last| !tick_after(ack, last)) {
        return;
    }
    p.last_ack = Some(ack);

    let predicted_at_ack = p.states.iter().find(|(tick, _)| *tick == ack).map(|(_, after)| *after);
    while p.states.front().is_some_and(|(tick, _)| !tick_after(*tick, ack)) {
        p.states.pop_front();
    }

    if !settings.prediction || !settings.reconciliation {
        // Prediction off: draw the server's state (the baseline). Prediction on
        // but reconciliation off: jump back to the server's older state and
        // predict on from there, dropping what was predicted since: the
        // rubber-banding the paper describes.
        p.current = Some(auth);
        p.previous = auth;
        return;
    }

    let error = predicted_at_ack.and_then(|predicted| misprediction(&predicted, &auth));
    if let Some(size) = error {
        p.mispredictions += 1;
        debug!("misprediction at tick {ack}: {size:.4} m off");
    }
    // Nothing to replay when the prediction was right: the movement code is
    // deterministic, so replaying would give the same states again.
    let decided = predicted_at_ack.is_some_and(|predicted| server_decided(&predicted, &auth));
    if error.is_none() && predicted_at_ack.is_some() && !p.needs_replay && !decided {
        return;
    }
    p.needs_replay = false;
    let before = p.current.unwrap_or(auth).pos;
    let dt = roster.tick_rate().dt_s();
    let mut state = auth;
    let mut previous = auth;
    p.states.clear();
    for cmd in window.after(ack) {
        previous = state;
        // Replays never send effects: they played when the tick was first predicted.
        state = step_player(&state, cmd, &world, dt).0;
        p.states.push_back((cmd.tick, state));
    }
    p.current = Some(state);
    p.previous = previous;
    p.replays += 1;

    if error.is_some() || decided {
        let jump = before - state.pos;
        let size = jump.length();
        if size < SNAP_CORRECTION_M {
            p.visual_offset += jump;
        } else {
            p.visual_offset = Vec3::ZERO;
        }
        if error.is_some() {
            p.max_correction_m = p.max_correction_m.max(size);
        }
        let now = time.elapsed_secs_f64();
        p.recent_corrections.push_back((now, size));
        while p.recent_corrections.front().is_some_and(|(t, _)| now - t > RECENT_S) {
            p.recent_corrections.pop_front();
        }
    }
}

/// Where the local player is drawn: between its last two predicted ticks
/// (smooth at any frame rate) plus what is left of past corrections; or,
/// with prediction off, where the newest snapshot says.
pub(crate) fn present_local(
    settings: Res<NetcodeSettings>,
    fixed: Res<Time<Fixed>>,
    time: Res<Time<Real>>,
    local: Query<&NetState, With<LocalPlayer>>,
    mut prediction: ResMut<Prediction>,
    mut render: ResMut<LocalRender>,
) {
    let fade = (-time.delta_secs() / CORRECTION_FADE_S).exp();
    prediction.visual_offset *= fade;
    if prediction.visual_offset.length_squared() < 1.0e-8 {
        prediction.visual_offset = Vec3::ZERO;
    }
    render.state = match prediction.current {
        Some(current) if settings.prediction => {
            let alpha = fixed.overstep_fraction();
            let mut drawn = current;
            drawn.pos = prediction.previous.pos.lerp(current.pos, alpha) + prediction.visual_offset;
            Some(drawn)
        }
        _ => local.single().ok().map(|s| s.state),
    };
}
