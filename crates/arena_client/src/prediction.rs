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
//! footsteps, and pickups) are sent out only the first time a tick is predicted.
//!
//! Pickups are predicted by the server's rules (`arena_sim::items`, the
//! map's `item_touched`) against the items the newest snapshot lists, less
//! those this prediction already took: a pickup the server did not grant is
//! gone from the next replay (the item is listed as taken by someone else,
//! so the replay does not take it), silently.

use std::collections::VecDeque;

use arena_sim::{ArenaWorld, PlayerState, TickEvents, UserCmd, step_player, tick_after};
use bevy::prelude::*;

use crate::commands::{CommandWindow, LocalInput, MAX_PENDING, ThisTick};
use crate::render_clock::ServerClock;
use crate::settings::NetcodeSettings;
use crate::vocabulary::{
    ClientWorld, Drawn, DrawnFrame, ItemTable, LocalPlayer, NetState, OwnSplashSchedule, Roster, SessionState,
    SnapshotApplied,
};
/// Position difference that counts as a misprediction, metres.
pub(crate) const MISPREDICTION_EPSILON_M: f32 = 1.0e-4;
/// Velocity difference that counts as a misprediction, metres per second.
const VELOCITY_EPSILON_MPS: f32 = 1.0e-3;
/// Time constant of the visual offset's fade, seconds: about 95% is gone
/// after 100 ms.
pub(crate) const CORRECTION_FADE_S: f32 = 0.033;
/// Corrections larger than this (a respawn, a teleport) snap instead of
/// sliding, metres.
pub(crate) const SNAP_CORRECTION_M: f32 = 3.0;
/// How long the panel's "largest correction lately" looks back, seconds.
const RECENT_S: f64 = 5.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<Prediction>().add_message::<PredictedEvents>();
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
    /// The command tick `current` is the state after, when `previous` is
    /// the state after the one before (none after a hold or when the
    /// server's state was taken as it is): a click between them can be shot
    /// from where it was drawn.
    pub tick: Option<u32>,
    /// The newest tick the server has acknowledged.
    pub last_ack: Option<u32>,
    /// What is still to fade of past corrections, metres, added when drawing.
    pub visual_offset: Vec3,
    pub mispredictions: u64,
    /// Of them, those that came with damage (less health at the server
    /// than predicted): most often someone else's rocket's push, which no
    /// link can spare us; but a hit landing on the tick of a misprediction
    /// of another cause counts here too.
    pub mispredictions_hurt: u64,
    /// Largest correction (at the present tick) so far, metres.
    pub max_correction_m: f32,
    /// Recent corrections: (real time in seconds, size in metres).
    pub recent_corrections: VecDeque<(f64, f32)>,
    /// Replays run (each after a misprediction or a switch being turned on).
    pub replays: u64,
    /// The settings seen last, to notice a switch being turned on.
    seen: Option<Switches>,
    /// The next snapshot must rebuild the prediction (a switch was turned on).
    needs_replay: bool,
    /// The items this prediction took after the newest acknowledged tick:
    /// (command tick, item), oldest first.
    pub own_takes: Vec<(u32, usize)>,
}

/// The two switches the prediction follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    pub prediction: bool,
    pub reconciliation: bool,
}

impl Switches {
    pub fn of(settings: &NetcodeSettings) -> Self {
        Self { prediction: settings.prediction, reconciliation: settings.reconciliation }
    }
}

/// What the server said of our player in a snapshot: its state after the
/// command `ack` (none: it has run none of ours yet).
#[derive(Debug, Clone, Copy)]
pub struct Authority {
    pub ack: Option<u32>,
    pub state: PlayerState,
}

/// What reconciling one snapshot did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reconciled {
    /// An acknowledgement no newer than the last: nothing to do.
    Stale,
    /// The server's state taken as it is: it has run none of our commands,
    /// or a switch is off (the paper's baseline, or its rubber-banding).
    Took,
    /// The server agreed with what was predicted: nothing replayed.
    Agreed,
    /// The commands after the acknowledged one replayed on the server's
    /// state; `correction` is how far the present moved (none after a
    /// switch turned on with the prediction right), metres.
    Replayed { correction: Option<f32> },
}

/// How the local player moves one tick: the shared movement code in the
/// client's world, at the server's tick rate.
pub struct Mover<'a> {
    pub world: &'a ArenaWorld,
    pub dt_s: f32,
    /// Our own rockets' splashes: the tick each lands after, and where
    /// (the server lands them at the same tick by the same rule).
    pub splashes: &'a [(u32, Vec3)],
    /// The items as the newest snapshot lists them (none: no pickups predicted).
    pub items: Option<&'a ItemTable>,
    /// The server is a shooting range (nobody is hurt, by their own splash either).
    pub range: bool,
}

impl Mover<'_> {
    /// Whether item `i` is there at `tick` as the newest snapshot says
    /// (false without items, or with a list that does not fit the map).
    fn item_there(&self, i: usize, tick: u32) -> bool {
        let map = self.world.map();
        let rate = arena_sim::TickRate::new((1.0 / self.dt_s).round() as u32);
        self.items
            .filter(|t| t.slots.len() == map.items.len())
            .is_some_and(|items| map.items.get(i).is_some_and(|item| items.there_at(i, item.kind, tick, rate)))
    }

    /// One command: the shared step, our own splash, then a pickup (the
    /// server's order), taking nothing already in `takes`.
    fn step(
        &self,
        before: &PlayerState,
        state: &PlayerState,
        cmd: &UserCmd,
        takes: &mut Vec<(u32, usize)>,
    ) -> (PlayerState, TickEvents) {
        let (mut next, mut events) = step_player(before, state, cmd, self.world, self.dt_s);
        for (_, point) in self.splashes.iter().filter(|(tick, _)| *tick == cmd.tick) {
            if let Some((kicked, damage)) = arena_sim::rocket::own_splash(self.world, *point, &next) {
                // The server's order: hurtable as it was, kicked, then hurt
                // (armour first): a pickup in the same tick is judged on the
                // health both ends have.
                let hurtable = next.hurtable();
                next = kicked;
                if hurtable && !self.range {
                    arena_sim::items::take_damage(&mut next, u32::from(damage));
                }
            }
        }
        let map = self.world.map();
        let there = |i: usize| self.item_there(i, cmd.tick) && !takes.iter().any(|(_, j)| *j == i);
        // Killed by its own splash this tick: the server takes it out of the
        // world before any pickup.
        let dying = next.health == 0;
        if let Some(i) = map.item_touched(&next, there).filter(|_| !dying) {
            arena_sim::items::grab(map.items[i].kind, &mut next);
            takes.push((cmd.tick, i));
            events.picked = Some(i);
        }
        (next, events)
    }
}

impl Prediction {
    /// The largest correction within the last few seconds, metres.
    pub fn recent_max_correction(&self) -> f32 {
        self.recent_corrections.iter().map(|(_, m)| *m).fold(0.0, f32::max)
    }

    /// Runs this tick's command at once (with prediction on) and keeps the
    /// state after it until the server acknowledges the tick. Returns what
    /// happened in it, the first and only time it is predicted.
    pub fn predict(&mut self, cmd: &UserCmd, predicting: bool, mover: &Mover) -> Option<TickEvents> {
        let (after, events) = match self.current {
            Some(current) if predicting => {
                let (after, events) = mover.step(&self.previous, &current, cmd, &mut self.own_takes);
                self.previous = current;
                self.current = Some(after);
                self.tick = Some(cmd.tick);
                (after, events.any().then_some(events))
            }
            // Not predicting (or not yet able to): the state stands, and the
            // command (in the window) is replayed if prediction is switched on.
            Some(current) => (current, None),
            None => (PlayerState::default(), None),
        };
        self.states.push_back((cmd.tick, after));
        while self.states.len() > MAX_PENDING {
            self.states.pop_front();
        }
        events
    }

    /// A tick that made no command (holding for clock sync): nothing moves.
    pub fn hold(&mut self) {
        if let Some(current) = self.current {
            self.previous = current;
        }
        self.tick = None;
    }

    /// Notes the switches as they are now: one turned on makes the next
    /// snapshot rebuild the prediction.
    pub fn note_switches(&mut self, switches: Switches) {
        if self.seen.is_some_and(|seen| {
            (!seen.prediction && switches.prediction) || (!seen.reconciliation && switches.reconciliation)
        }) {
            self.needs_replay = true;
        }
        self.seen = Some(switches);
    }

    /// Reconciliation, the paper's central client rule: the server's state
    /// after the acknowledged command is compared with what was predicted
    /// for that tick; on a difference (or when the server decided something
    /// only it decides, or a switch was turned on) the prediction starts
    /// again from the server's state and replays the commands still
    /// unacknowledged (`pending`: the window, oldest first, acknowledged ones
    /// skipped). The jump this makes in the present becomes a visual offset
    /// that fades (a respawn's snaps). `now_s` dates the correction.
    pub fn reconcile<'a>(
        &mut self,
        auth: Authority,
        switches: Switches,
        pending: impl IntoIterator<Item = &'a UserCmd>,
        mover: &Mover,
        now_s: f64,
    ) -> Reconciled {
        self.note_switches(switches);
        let Some(ack) = auth.ack else {
            // The server has run none of our commands yet: stand where it says.
            self.current = Some(auth.state);
            self.previous = auth.state;
            self.tick = None;
            return Reconciled::Took;
        };
        if self.last_ack.is_some_and(|last| !tick_after(ack, last)) {
            return Reconciled::Stale;
        }
        self.last_ack = Some(ack);
        // The recent corrections age out with every snapshot, not only at
        // the next correction.
        while self.recent_corrections.front().is_some_and(|(t, _)| now_s - t > RECENT_S) {
            self.recent_corrections.pop_front();
        }

        let predicted_at_ack = self.states.iter().find(|(tick, _)| *tick == ack).map(|(_, after)| *after);
        // What was taken up to the acknowledged tick is in the snapshot now;
        // a later take of an item the snapshot says another took is wrong.
        self.own_takes.retain(|(tick, _)| tick_after(*tick, ack));
        let taken_away = self.own_takes.iter().any(|(tick, i)| !mover.item_there(*i, *tick));
        while self.states.front().is_some_and(|(tick, _)| !tick_after(*tick, ack)) {
            self.states.pop_front();
        }

        if !switches.prediction || !switches.reconciliation {
            // Prediction off: draw the server's state (the baseline). Prediction on
            // but reconciliation off: jump back to the server's older state and
            // predict on from there, dropping what was predicted since: the
            // rubber-banding the paper describes.
            self.current = Some(auth.state);
            self.previous = auth.state;
            self.tick = None;
            return Reconciled::Took;
        }

        // What only the server decides (health, a death, a respawn) starts
        // the prediction again from its state; a death or a respawn is no
        // misprediction (the rest, a push from someone else's rocket, is).
        let decided = predicted_at_ack.is_some_and(|predicted| server_decided(&predicted, &auth.state)) || taken_away;
        let error = predicted_at_ack
            .filter(|predicted| !life_changed(predicted, &auth.state))
            .and_then(|predicted| misprediction(&predicted, &auth.state));
        if let Some(size) = error {
            self.mispredictions += 1;
            if predicted_at_ack.is_some_and(|predicted| auth.state.health < predicted.health) {
                self.mispredictions_hurt += 1;
            }
            debug!("misprediction at tick {ack}: {size:.4} m off");
        }
        // Nothing to replay when the prediction was right: the movement code is
        // deterministic, so replaying would give the same states again.
        if error.is_none() && predicted_at_ack.is_some() && !self.needs_replay && !decided {
            return Reconciled::Agreed;
        }
        self.needs_replay = false;
        let before = self.current.unwrap_or(auth.state).pos;
        let mut state = auth.state;
        let mut previous = auth.state;
        let mut last = None;
        self.states.clear();
        self.own_takes.clear();
        for cmd in pending.into_iter().filter(|c| tick_after(c.tick, ack)) {
            // Replays never send effects: they played when the tick was first
            // predicted (nor does a shot's origin matter then).
            let next = mover.step(&previous, &state, cmd, &mut self.own_takes).0;
            previous = state;
            state = next;
            last = Some(cmd.tick);
            self.states.push_back((cmd.tick, state));
        }
        self.current = Some(state);
        self.previous = previous;
        // With nothing replayed, there is no blend to shoot from.
        self.tick = last;
        self.replays += 1;

        if error.is_none() && !decided {
            return Reconciled::Replayed { correction: None };
        }
        let jump = before - state.pos;
        let size = jump.length();
        if size < SNAP_CORRECTION_M {
            self.visual_offset += jump;
        } else {
            self.visual_offset = Vec3::ZERO;
        }
        if error.is_some() {
            self.max_correction_m = self.max_correction_m.max(size);
            self.recent_corrections.push_back((now_s, size));
        }
        Reconciled::Replayed { correction: Some(size) }
    }

    /// Where the local player is drawn, `alpha` of the way from the previous
    /// predicted tick to the current one, plus what is left of past
    /// corrections after `elapsed_s` more of fading; `None` with prediction
    /// off or nothing predicted yet.
    pub fn present(
        &mut self,
        predicting: bool,
        ahead_ticks: Option<u32>,
        alpha: f32,
        elapsed_s: f32,
    ) -> Option<PlayerState> {
        self.visual_offset *= (-elapsed_s / CORRECTION_FADE_S).exp();
        if self.visual_offset.length_squared() < 1.0e-8 {
            self.visual_offset = Vec3::ZERO;
        }
        let current = self.current.filter(|_| predicting)?;
        let (current, previous) = ahead_ticks.and_then(|ticks| self.pushed(ticks)).unwrap_or((current, self.previous));
        let mut drawn = current.drawn_after(&previous, alpha);
        drawn.pos += self.visual_offset;
        Some(drawn)
    }
}

impl Prediction {
    /// With prediction limited to `ticks` ahead of the newest acknowledged
    /// state (`pushlatency`): the predicted state at that tick and the one
    /// before it, to draw between; `None` when the prediction is not that
    /// far ahead (all of it is drawn).
    fn pushed(&self, ticks: u32) -> Option<(PlayerState, PlayerState)> {
        let target = self.last_ack?.wrapping_add(ticks);
        let (newest, _) = self.states.back()?;
        if !arena_sim::tick_after(*newest, target) {
            return None;
        }
        // The oldest unacknowledged tick at least: 0 ahead draws the state
        // after the first command the server has not answered yet.
        let index = self.states.iter().position(|(tick, _)| !arena_sim::tick_after(target, *tick)).unwrap_or(0);
        let current = self.states.get(index)?.1;
        let previous = index.checked_sub(1).and_then(|i| self.states.get(i)).map_or(current, |(_, s)| *s);
        Some((current, previous))
    }
}

/// Effects from the shared code (steps, jumps, landings, shots, reloads), the
/// first (and only) time a tick is predicted.
#[derive(Message, Debug, Clone, Copy)]
pub struct PredictedEvents {
    pub tick: u32,
    pub events: TickEvents,
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
        || predicted.weapon != actual.weapon
        || (predicted.reload_s - actual.reload_s).abs() > 1e-4;
    differs.then_some(distance)
}

/// Whether the player died or came back: the server's news, never a
/// misprediction.
fn life_changed(predicted: &PlayerState, actual: &PlayerState) -> bool {
    predicted.alive != actual.alive || predicted.spawn_count != actual.spawn_count
}

/// Whether the server changed what only it decides (health, armour, the
/// quad: a hit or a pickup it did not grant; death, respawn): not a
/// misprediction, but the prediction must start again from its state.
fn server_decided(predicted: &PlayerState, actual: &PlayerState) -> bool {
    predicted.health != actual.health
        || predicted.armour != actual.armour
        || predicted.quad_s != actual.quad_s
        || predicted.alive != actual.alive
        || predicted.spawn_count != actual.spawn_count
}

pub(crate) fn predict_tick(
    this_tick: Res<ThisTick>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    (splashes, items): (Res<OwnSplashSchedule>, Res<ItemTable>),
    mut prediction: ResMut<Prediction>,
    mut input: ResMut<LocalInput>,
    mut effects: MessageWriter<PredictedEvents>,
) {
    let Some(cmd) = this_tick.0 else {
        prediction.hold();
        return;
    };
    let mover = Mover {
        world: &world,
        dt_s: roster.tick_rate().dt_s(),
        splashes: &splashes.0,
        items: Some(&items),
        range: roster.range,
    };
    if let Some(events) = prediction.predict(&cmd, settings.prediction, &mover) {
        // Through a teleporter: the view turns the way it sends players at
        // once (the next command carries it, as the server will expect); the
        // snapshot that shows the new life leaves it be.
        if events.movement.teleported
            && let Some(state) = prediction.current
        {
            input.yaw = state.yaw;
            input.predicted_teleport = Some(state.spawn_count);
        }
        effects.write(PredictedEvents { tick: cmd.tick, events });
    }
}

pub(crate) fn reconcile(
    mut snapshots: MessageReader<SnapshotApplied>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    window: Res<CommandWindow>,
    time: Res<Time<Real>>,
    (splashes, items): (Res<OwnSplashSchedule>, Res<ItemTable>),
    mut prediction: ResMut<Prediction>,
) {
    let switches = Switches::of(&settings);
    let newest = snapshots.read().last().copied();
    let Some((snapshot, state)) = newest.and_then(|s| Some((s, s.local_state?))) else {
        // Still note the switches, so that turning one on is seen.
        prediction.note_switches(switches);
        return;
    };
    let mover = Mover {
        world: &world,
        dt_s: roster.tick_rate().dt_s(),
        splashes: &splashes.0,
        items: Some(&items),
        range: roster.range,
    };
    let auth = Authority { ack: snapshot.ack, state };
    prediction.reconcile(auth, switches, &window.pending, &mover, time.elapsed_secs_f64());
}

/// Where the local player is drawn: between its last two predicted ticks
/// (smooth at any frame rate) plus what is left of past corrections; or,
/// with prediction off, where the newest snapshot says.
pub(crate) fn present_local(
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    fixed: Res<Time<Fixed>>,
    time: Res<Time<Real>>,
    clock: Res<ServerClock>,
    mut prediction: ResMut<Prediction>,
    mut frame: ResMut<DrawnFrame>,
    mut local: Query<(&NetState, &mut Drawn), With<LocalPlayer>>,
) {
    let alpha = fixed.overstep_fraction();
    let ahead_ticks = settings.predict_ahead_ms.map(|ms| roster.tick_rate().ticks_in(ms as f32 / 1000.0));
    let predicted = prediction.present(settings.prediction, ahead_ticks, alpha, time.delta_secs());
    if let Ok((net, mut drawn)) = local.single_mut() {
        drawn.0 = predicted.unwrap_or(net.state);
    }
    *frame = DrawnFrame {
        tick: prediction.tick.filter(|_| predicted.is_some()),
        fraction: alpha,
        render_tick: clock.seen_tick(settings.interpolation),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::MapDef;
    use arena_sim::quant::snap_state;

    const ON: Switches = Switches { prediction: true, reconciliation: true };
    const DT_S: f32 = 1.0 / 64.0;

    /// The arena, a start at its first spawn point, and ten commands from
    /// tick 100 running forward and turning a little.
    struct Rig {
        world: ArenaWorld,
        start: PlayerState,
        cmds: Vec<UserCmd>,
    }

    impl Rig {
        fn new() -> Self {
            let world = ArenaWorld::new(MapDef::foundry());
            let spawn = world.map().spawns[0];
            let start = PlayerState { protected_s: 0.0, ..PlayerState::default().respawned_at(spawn.pos, spawn.yaw()) };
            let cmds = (0..10)
                .map(|i| {
                    let mut c = UserCmd { tick: 100 + i, forward: 1.0, yaw: 0.02 * i as f32, ..Default::default() };
                    c.quantize();
                    c
                })
                .collect();
            Self { world, start, cmds }
        }

        fn mover(&self) -> Mover<'_> {
            Mover { world: &self.world, dt_s: DT_S, splashes: &[], items: None, range: false }
        }

        /// Commands `range` run on `state` by the shared movement code, as the server runs them.
        fn run(&self, state: PlayerState, range: std::ops::Range<usize>) -> PlayerState {
            self.cmds[range].iter().fold(state, |s, c| step_player(&s, &s, c, &self.world, DT_S).0)
        }

        /// The server's state after the first `n` commands (acknowledging tick 99 + n).
        fn server_after(&self, n: usize) -> Authority {
            Authority { ack: Some(99 + n as u32), state: self.run(self.start, 0..n) }
        }

        /// A prediction that started at the start and predicted every command.
        fn predicted(&self) -> Prediction {
            let mut p = Prediction { current: Some(self.start), previous: self.start, ..Prediction::default() };
            for c in &self.cmds {
                p.predict(c, true, &self.mover());
            }
            p
        }
    }

    #[test]
    fn nothing_is_replayed_when_the_server_agrees() {
        let rig = Rig::new();
        let mut p = rig.predicted();
        let before = p.current;
        let outcome = p.reconcile(rig.server_after(4), ON, &rig.cmds, &rig.mover(), 0.0);
        assert_eq!(outcome, Reconciled::Agreed);
        assert_eq!(p.current, before, "the present stands");
        assert_eq!((p.replays, p.mispredictions, p.visual_offset), (0, 0, Vec3::ZERO));
        let ticks: Vec<u32> = p.states.iter().map(|(t, _)| *t).collect();
        assert_eq!(ticks, (104..110).collect::<Vec<_>>(), "acknowledged ticks leave the prediction");
    }

    #[test]
    fn a_correction_replays_the_unacknowledged_commands_and_fades_on_screen() {
        let rig = Rig::new();
        let mut p = rig.predicted();
        let was = p.current.expect("predicting").pos;
        // The server had us half a metre to the side after tick 103.
        let mut server = rig.server_after(4);
        server.state.pos.x += 0.5;
        server.state = snap_state(&server.state);
        let outcome = p.reconcile(server, ON, &rig.cmds, &rig.mover(), 3.0);
        let replayed = rig.run(server.state, 4..10);
        assert_eq!(p.current, Some(replayed), "the server's state, and the six commands after it again");
        assert_eq!(p.states.back(), Some(&(109, replayed)));
        assert_eq!(p.states.len(), 6);
        let jump = was.distance(replayed.pos);
        assert!(jump > 0.3, "a correction of {jump} m");
        assert_eq!(outcome, Reconciled::Replayed { correction: Some(jump) });
        assert_eq!((p.replays, p.mispredictions), (1, 1));
        assert_eq!(p.recent_corrections.back(), Some(&(3.0, jump)));
        // Drawn where it was at first, then sliding to the corrected place.
        let drawn = p.present(true, None, 1.0, 0.0).expect("drawn").pos;
        assert!(drawn.distance(was) < 1e-4, "no snap: {drawn} vs {was}");
        let later = p.present(true, None, 1.0, 0.2).expect("drawn").pos;
        assert!(later.distance(replayed.pos) < 0.01, "faded within 200 ms: {later}");
        assert_eq!(p.mispredictions_hurt, 0, "no damage came with it");
    }

    #[test]
    fn a_push_with_damage_is_a_misprediction_and_a_death_or_a_respawn_is_none() {
        let rig = Rig::new();
        // A blast's push: moved and hurt.
        let mut p = rig.predicted();
        let mut server = rig.server_after(4);
        server.state.pos.x += 0.5;
        server.state.health -= 40;
        server.state = snap_state(&server.state);
        p.reconcile(server, ON, &rig.cmds, &rig.mover(), 3.0);
        assert_eq!((p.mispredictions, p.mispredictions_hurt), (1, 1));
        // Killed there: the server's news, not a prediction gone wrong.
        let mut p = rig.predicted();
        let mut server = rig.server_after(4);
        server.state.pos.x += 0.5;
        server.state.alive = false;
        server.state = snap_state(&server.state);
        p.reconcile(server, ON, &rig.cmds, &rig.mover(), 3.0);
        assert_eq!((p.mispredictions, p.mispredictions_hurt), (0, 0));
        assert!(p.recent_corrections.is_empty(), "a death is no correction to draw");
    }

    #[test]
    fn an_old_acknowledgement_changes_nothing() {
        let rig = Rig::new();
        let mut p = rig.predicted();
        p.reconcile(rig.server_after(6), ON, &rig.cmds, &rig.mover(), 0.0);
        let mut old = rig.server_after(5);
        old.state.pos = Vec3::splat(40.0);
        assert_eq!(p.reconcile(old, ON, &rig.cmds, &rig.mover(), 0.0), Reconciled::Stale);
        assert!(p.current.is_some_and(|c| c.pos.distance(old.state.pos) > 10.0));
    }

    #[test]
    fn without_reconciliation_the_servers_older_state_is_taken_and_a_switch_turned_on_replays() {
        let rig = Rig::new();
        let mut p = rig.predicted();
        let off = Switches { prediction: true, reconciliation: false };
        let server = rig.server_after(4);
        assert_eq!(p.reconcile(server, off, &rig.cmds, &rig.mover(), 0.0), Reconciled::Took);
        assert_eq!(p.current, Some(server.state), "rubber-banding: back to the server's older state");
        // Turned on again: the next snapshot replays even though it agrees.
        p.note_switches(ON);
        let server = rig.server_after(5);
        let outcome = p.reconcile(server, ON, &rig.cmds, &rig.mover(), 0.0);
        assert_eq!(outcome, Reconciled::Replayed { correction: None });
        assert_eq!(p.current, Some(rig.run(server.state, 5..10)));
    }

    #[test]
    fn pushlatency_draws_only_so_far_ahead_of_the_acknowledged_state() {
        let at = |x: f32| PlayerState { pos: Vec3::new(x, 0.0, 0.0), ..PlayerState::default() };
        let mut p = Prediction { last_ack: Some(100), ..Prediction::default() };
        p.states = (101..=110u32).map(|t| (t, at(t as f32))).collect();
        p.current = Some(at(110.0));
        p.previous = at(109.0);
        let (current, previous) = p.pushed(3).expect("limited");
        assert_eq!((current.pos.x, previous.pos.x), (103.0, 102.0));
        assert_eq!(p.pushed(0).map(|(c, _)| c.pos.x), Some(101.0), "at least the oldest unanswered tick");
        assert!(p.pushed(10).is_none() && p.pushed(40).is_none(), "not that far ahead: all of it");
        let drawn = p.present(true, Some(3), 1.0, 0.0).expect("drawn");
        assert_eq!(drawn.pos.x, 103.0);
        assert_eq!(p.present(true, None, 1.0, 0.0).expect("drawn").pos.x, 110.0);
    }
}
