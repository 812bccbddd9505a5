//! Lag compensation, the paper's central technique, and everything about
//! what a shooter saw: every player's hitbox is recorded each tick in a
//! history covering more than a second; each shot gets the other players
//! as they were at the time the shooter was looking at (the render time its
//! command claims, believed only within about two ticks plus the shooter's
//! jitter of the server's own estimate, and never further back than the
//! round trip, the command's head start, the interpolation delay and that
//! margin), blended between the two snapshots the shot says its shooter
//! drew between (or, without them, the two recorded ticks around it), so
//! that a lost or late snapshot is rewound as it was drawn; without lag
//! compensation (the server's switch, the shooter's, or a bot's shot), as
//! they are now.
//! Nothing live is moved: rewound hitboxes are computed from the history, so
//! "restore" is free and the order of players does not matter. The combat
//! rules then test each shot against what this module gave it.

use std::collections::VecDeque;

use arena_sim::interpolation::{HISTORY_S, HowDrawn, Keyframe, drawn_at};
use arena_sim::pose::PoseInput;
use arena_sim::{Click, Hitbox, PlayerId};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::intake::CommandBuffer;
use crate::vocabulary::{
    ClientPrefs, CombatStats, LagCompensation, PendingShot, PendingShots, ServerPlayer, ServerTick, Sim, TestedShot,
    TestedShots, TickRate,
};

/// Most of a command's head start the rewind window counts, seconds.
pub(crate) const MAX_HEAD_START_IN_WINDOW_S: f64 = 0.2;
/// How far before the rewind window the older of a shot's two drawn
/// snapshots may lie, seconds.
pub(crate) const MAX_DRAWN_BEFORE_WINDOW_S: f64 = 0.1;
/// A claimed render time is believed if it is within this many ticks of the
/// server's own estimate, plus the measured jitter of the shooter's commands
/// (see [`render_time_tolerance_ticks`]).
pub(crate) const RENDER_TIME_SLACK_TICKS: f64 = 2.0;
/// How many mean deviations of command arrival count as "the jitter".
const JITTER_SPREAD: f64 = 2.0;
/// The tolerance never exceeds this, seconds: a client on a wildly jittery
/// link is rewound to the server's estimate instead of its claim.
pub(crate) const MAX_RENDER_TIME_TOLERANCE_S: f64 = 0.1;
/// A click waits for the frame that sends its command, up to this long
/// counted (a frame at 30 frames a second), seconds. The oldest time a
/// clicked shot may be rewound to moves back by its wait (the time between
/// the click and its command's tick, which the command states and the wire
/// bounds to two ticks), or a click at a low frame rate would count as
/// late as its frame and be rewound less than its shooter saw.
pub(crate) const MAX_CLICK_WAIT_S: f64 = 1.0 / 30.0;
/// How many of a shooter's frames its claimed render time may lie before
/// the server's estimate, beyond the tolerance: a slow client (a software
/// renderer at a few frames a second) draws what it had at its last frame
/// and sends the click's command a frame later, and the server's estimate
/// (from the round trip) knows of neither.
pub(crate) const FRAMES_OF_ALLOWANCE: f64 = 2.0;
/// The most that allowance reaches, seconds (two frames at a frame a
/// second; the rewind cap still bounds every rewind).
pub(crate) const MAX_FRAME_ALLOWANCE_S: f64 = 2.0;

/// How much older than the estimate a claimed render time is believed for a
/// shooter whose frames last `frame_ticks`, ticks (0 for a client drawing a
/// frame a tick or more).
pub(crate) fn frame_allowance_ticks(frame_ticks: f32, tick_hz: u32) -> f64 {
    let frame = if frame_ticks.is_finite() { f64::from(frame_ticks.max(1.0)) - 1.0 } else { 0.0 };
    (FRAMES_OF_ALLOWANCE * frame).min(MAX_FRAME_ALLOWANCE_S * f64::from(tick_hz))
}

/// How much older than its command a clicked shot may be rewound, ticks:
/// the click's wait before its command's tick, at most [`MAX_CLICK_WAIT_S`].
pub fn click_wait_ticks(click: Option<Click>, tick_hz: u32) -> f64 {
    let Some(click) = click.filter(|c| c.fraction.is_finite()) else { return 0.0 };
    let wait = (2.0 - f64::from(click.fraction)).clamp(0.0, 2.0);
    wait.min(MAX_CLICK_WAIT_S * f64::from(tick_hz))
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LagHistory>().init_resource::<PendingShots>().init_resource::<TestedShots>();
}

/// Every player's hitbox at the end of each recent tick.
#[derive(Resource, Debug, Default)]
pub(crate) struct LagHistory {
    frames: VecDeque<(u32, Vec<(PlayerId, Hitbox)>)>,
}

impl LagHistory {
    /// Forgets every tick (the map changed: what was recorded stood on another).
    pub(crate) fn clear(&mut self) {
        self.frames.clear();
    }

    pub(crate) fn push(&mut self, tick: u32, hitboxes: Vec<(PlayerId, Hitbox)>, keep: usize) {
        self.frames.push_back((tick, hitboxes));
        while self.frames.len() > keep.max(2) {
            self.frames.pop_front();
        }
    }

    /// The oldest and newest recorded ticks.
    pub(crate) fn span(&self) -> Option<(u32, u32)> {
        Some((self.frames.front()?.0, self.frames.back()?.0))
    }

    /// Every player's hitbox at server time `tick` (fractional), blended
    /// between the two recorded ticks around it. `tick` must be within
    /// [`Self::span`].
    pub(crate) fn rewind(&self, tick: f64) -> Vec<(PlayerId, Hitbox)> {
        let Some((oldest, _)) = self.span() else { return Vec::new() };
        let offset = (tick - f64::from(oldest)).max(0.0);
        let i = (offset.floor() as usize).min(self.frames.len() - 1);
        let t = (offset - i as f64) as f32;
        let (_, before) = &self.frames[i];
        let Some((_, after)) = self.frames.get(i + 1) else { return before.clone() };
        before
            .iter()
            .map(|(id, a)| {
                let blended = match after.iter().find(|(other, _)| other == id) {
                    Some((_, b)) => a.lerp(b, t),
                    None => *a,
                };
                (*id, blended)
            })
            .collect()
    }

    /// The hitboxes recorded at `tick`, if they still are.
    fn at_tick(&self, tick: u32) -> Option<&Vec<(PlayerId, Hitbox)>> {
        self.frames.iter().find(|(t, _)| *t == tick).map(|(_, h)| h)
    }

    /// Every player at server time `tick` as a client draws it from the two
    /// snapshots `older` and `newer` (interpolation's rule, [`drawn_at`]:
    /// blended between them, or past the newer carried on at its velocity
    /// for at most [`MAX_EXTRAPOLATION_S`], then held), not from the two
    /// recorded ticks around `tick`: where a snapshot was lost or late, what
    /// the shooter drew. None if either is no longer recorded, or for a pair
    /// out of order or a time that is none.
    ///
    /// [`MAX_EXTRAPOLATION_S`]: arena_sim::interpolation::MAX_EXTRAPOLATION_S
    pub(crate) fn rewind_between(
        &self,
        (older, newer): (u32, u32),
        tick: f64,
        rate: TickRate,
    ) -> Option<Vec<(PlayerId, Hitbox)>> {
        let (a, b) = (self.at_tick(older)?, self.at_tick(newer)?);
        if arena_sim::tick_diff(newer, older) <= 0 || !tick.is_finite() {
            return None;
        }
        b.iter()
            .map(|(id, nb)| {
                let Some((_, na)) = a.iter().find(|(other, _)| other == id) else { return Some((*id, *nb)) };
                let drawn =
                    drawn_at(Some(Keyframe::of_hitbox(older, na)), Keyframe::of_hitbox(newer, nb), tick, rate.0)?;
                Some(match drawn {
                    HowDrawn::Blended(t) => (*id, na.lerp(nb, t)),
                    HowDrawn::CarriedOn { pos, .. } => {
                        (*id, Hitbox { input: PoseInput { feet: pos, ..nb.input }, ..*nb })
                    }
                })
            })
            .collect()
    }

    /// The newest recorded hitboxes.
    pub(crate) fn latest(&self) -> Vec<(PlayerId, Hitbox)> {
        self.frames.back().map(|(_, h)| h.clone()).unwrap_or_default()
    }
}

/// The server's own estimate of the server time (ticks) a client was
/// drawing the others at when it made the command for `cmd_tick`: the newest
/// snapshot it had (a round trip and the command's head start before its
/// tick), minus its interpolation delay.
pub(crate) fn estimate_render_tick(cmd_tick: u32, margin_ticks: f32, rtt_ticks: f64, interp_ticks: f64) -> f64 {
    f64::from(cmd_tick) - f64::from(margin_ticks.max(0.0)) - rtt_ticks - interp_ticks
}

/// How far a claimed render time may be from the server's estimate and still
/// be believed, ticks: [`RENDER_TIME_SLACK_TICKS`] plus the jitter measured on
/// the shooter's commands, at most [`MAX_RENDER_TIME_TOLERANCE_S`].
pub fn render_time_tolerance_ticks(arrival_jitter_ticks: f32, tick_hz: u32) -> f64 {
    let jitter = if arrival_jitter_ticks.is_finite() { f64::from(arrival_jitter_ticks.max(0.0)) } else { 0.0 };
    (RENDER_TIME_SLACK_TICKS + JITTER_SPREAD * jitter).min(MAX_RENDER_TIME_TOLERANCE_S * f64::from(tick_hz))
}

/// What bounds a shot's rewind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewindBounds {
    /// The server's estimate of the shooter's render time, ticks.
    pub estimate: f64,
    /// How far from the estimate a claim is believed, ticks.
    pub tolerance: f64,
    /// How much further before the estimate a claim is believed, ticks
    /// (the shooter's slow frames, [`frame_allowance_ticks`]).
    pub frame_allowance: f64,
    /// The oldest time a rewind may reach: the tick being simulated minus
    /// the round trip, the interpolation delay and the tolerance (and a
    /// click's wait, [`click_wait_ticks`]). No backtracking to where someone
    /// was half a second ago.
    pub oldest: f64,
    /// The recorded history's oldest and newest ticks.
    pub span: (u32, u32),
}

/// What [`choose_tested_tick`] decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestedTick {
    pub tick: f64,
    /// The claim was not believed (the estimate was used).
    pub rejected: bool,
    /// The time was moved into the allowed window or the history.
    pub clamped: bool,
}

/// Chooses the server time to test a shot at: the claimed render time if it
/// agrees with the estimate within the tolerance, else the estimate; never
/// older than the rewind limit; within the history.
pub fn choose_tested_tick(claimed: f64, bounds: RewindBounds) -> TestedTick {
    let RewindBounds { estimate, tolerance, frame_allowance, oldest, span } = bounds;
    let allowance = if frame_allowance.is_finite() { frame_allowance.max(0.0) } else { 0.0 };
    let offset = claimed - estimate;
    let rejected = !(claimed > 0.0 && claimed.is_finite() && offset <= tolerance && -offset <= tolerance + allowance);
    let wanted = if rejected { estimate } else { claimed };
    let (first, newest) = (f64::from(span.0), f64::from(span.1));
    let floor = if oldest.is_finite() { oldest.max(first).min(newest) } else { first };
    let tick = if wanted.is_finite() { wanted.clamp(floor, newest) } else { newest };
    TestedTick { tick, rejected, clamped: tick != wanted }
}

/// Whether a shot is rewound, and how far back at most (the server's rewind
/// cap: the favour the shooter gets ends there; past it the victim, safe
/// behind cover in the present, is not hit for what a laggy shooter saw).
#[derive(Debug, Clone, Copy)]
pub struct Unlag {
    pub compensate: bool,
    pub max_unlag_s: f64,
}

/// What the server knows of a shooter's link when it resolves a shot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShooterLink {
    /// Round trip, seconds (renet's measure).
    pub rtt_s: f64,
    /// The interpolation delay the shooter draws with, milliseconds.
    pub interp_ms: u16,
    /// How unevenly its commands arrive, ticks.
    pub arrival_jitter_ticks: f32,
    /// How long its frames are, ticks, as its commands show them
    /// ([`CommandBuffer::frame_ticks`]).
    pub frame_ticks: f32,
}

impl LagHistory {
    /// The other players for `pending`, as its shooter saw them (rewound,
    /// when `compensate`), or as they are now; with the server's estimate
    /// of the shooter's render time. Counts claims not believed or clamped.
    pub(crate) fn tested_for(
        &self,
        pending: PendingShot,
        unlag: Unlag,
        link: ShooterLink,
        (tick, rate): (ServerTick, TickRate),
        stats: &mut CombatStats,
    ) -> TestedShot {
        let rtt_ticks = if link.rtt_s.is_finite() { rate.s_to_ticks(link.rtt_s.max(0.0)) } else { 0.0 };
        let interp_ticks = rate.ms_to_ticks(f64::from(link.interp_ms));
        let estimate = estimate_render_tick(pending.cmd.tick, pending.margin_ticks, rtt_ticks, interp_ticks);
        let span = self.span().unwrap_or((tick.0, tick.0));
        let compensate = unlag.compensate;
        let (tested_tick, hitboxes) = if compensate {
            let tolerance = render_time_tolerance_ticks(link.arrival_jitter_ticks, rate.hz());
            let click_wait = click_wait_ticks(pending.cmd.click, rate.hz());
            let frame_allowance = frame_allowance_ticks(link.frame_ticks, rate.hz());
            // The window counts the command's head start as the estimate
            // does (how early it came, measured here, at most
            // MAX_HEAD_START_IN_WINDOW_S): without it an honest claim near the
            // estimate fell outside the window whenever the head start
            // outgrew the tolerance (jitter makes the client run further ahead).
            let head_start = f64::from(pending.margin_ticks.max(0.0)).min(rate.s_to_ticks(MAX_HEAD_START_IN_WINDOW_S));
            let trusted =
                f64::from(tick.0) - head_start - rtt_ticks - interp_ticks - tolerance - click_wait - frame_allowance;
            let cap = f64::from(tick.0) - rate.s_to_ticks(unlag.max_unlag_s.max(0.0));
            let oldest = trusted.max(cap);
            let chosen = choose_tested_tick(
                pending.cmd.render_tick,
                RewindBounds { estimate, tolerance, frame_allowance, oldest, span },
            );
            stats.render_times_rejected += u64::from(chosen.rejected);
            stats.render_times_clamped += u64::from(chosen.clamped);
            stats.rewinds_capped += u64::from(chosen.clamped && cap > trusted && chosen.tick <= cap);
            // The two snapshots the shooter drew between, when its render
            // time was believed: the newer recorded, the older at most
            // MAX_DRAWN_BEFORE_WINDOW_S before what may be rewound to (a lost
            // snapshot leaves a gap before the render time, which stays within
            // the window: the blend lies between the two at that time).
            let before_window = rate.s_to_ticks(MAX_DRAWN_BEFORE_WINDOW_S);
            let drawn = pending
                .cmd
                .drawn_between
                .filter(|(older, newer)| {
                    let (older, newer) = (f64::from(*older), f64::from(*newer));
                    !chosen.rejected
                        && !chosen.clamped
                        && older >= (oldest - before_window).floor()
                        && newer <= f64::from(span.1)
                })
                .and_then(|pair| self.rewind_between(pair, chosen.tick, rate));
            stats.rewinds_as_drawn += u64::from(drawn.is_some());
            (chosen.tick, drawn.unwrap_or_else(|| self.rewind(chosen.tick)))
        } else {
            (f64::from(span.1), self.latest())
        };
        let others = |all: Vec<(PlayerId, Hitbox)>| -> Vec<(PlayerId, Hitbox)> {
            all.into_iter().filter(|(id, _)| *id != pending.shooter).take(arena_protocol::MAX_PLAYERS).collect()
        };
        TestedShot {
            pending,
            compensated: compensate,
            tick: tested_tick,
            estimate,
            others: others(hitboxes),
            current: others(self.latest()),
        }
    }
}

/// Each shot fired this tick, with the other players as its shooter saw
/// them: rewound for a client that wants it on a server that allows it; a
/// bot sees the world as it is, with nothing to compensate.
pub(crate) fn rewind_shots(
    mut pending: ResMut<PendingShots>,
    mut tested: ResMut<TestedShots>,
    history: Res<LagHistory>,
    switch: Res<LagCompensation>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    (server, round_trips): (Res<RenetServer>, Res<crate::vocabulary::RoundTrips>),
    shooters: Query<(&ServerPlayer, &ClientPrefs, &CommandBuffer)>,
    mut stats: ResMut<CombatStats>,
) {
    for shot in pending.0.drain(..) {
        let Some((shooter, prefs, buffer)) = shooters.iter().find(|(p, ..)| p.id == shot.shooter) else { continue };
        let link = ShooterLink {
            rtt_s: shooter.client_id.map(|c| round_trips.of(c, &server)).unwrap_or(0.0),
            interp_ms: prefs.0.interp_ms,
            arrival_jitter_ticks: buffer.arrival_jitter_ticks(),
            frame_ticks: buffer.frame_ticks(rate.hz()),
        };
        let compensate = switch.on && prefs.0.lag_compensation && shooter.client_id.is_some();
        let unlag = Unlag { compensate, max_unlag_s: switch.max_unlag_s };
        stats.shots += 1;
        tested.0.push(history.tested_for(shot, unlag, link, (*tick, *rate), &mut stats));
    }
}

/// A player's hitboxes as every other client is told of it: its state
/// through the wire's grids for others (position, view, pace and gait
/// phase), so the pose the server tests is the pose a client draws, to the
/// bit at each snapshot's tick.
pub(crate) fn seen_hitbox(state: &arena_sim::PlayerState) -> Hitbox {
    Hitbox::of(&arena_protocol::snapshot::RemoteState::of(state).to_state())
}

/// Records every player's hitbox as it is now (see `lib.rs` for why after
/// movement and before shots).
pub(crate) fn record_history(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    players: Query<(&ServerPlayer, &Sim)>,
    mut history: ResMut<LagHistory>,
) {
    let mut hitboxes: Vec<(PlayerId, Hitbox)> = players.iter().map(|(p, s)| (p.id, seen_hitbox(&s.0))).collect();
    hitboxes.sort_by_key(|(id, _)| *id);
    let keep = (HISTORY_S * f64::from(rate.hz())).ceil() as usize + 1;
    history.push(tick.0, hitboxes, keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crouched(mut h: Hitbox, crouched: bool) -> Hitbox {
        h.input.crouched = crouched;
        h
    }

    fn at(x: f32) -> Hitbox {
        Hitbox::standing_at(Vec3::new(x, 0.0, 0.0))
    }

    fn history() -> LagHistory {
        let mut h = LagHistory::default();
        for tick in 100..=110u32 {
            let x = (tick - 100) as f32;
            h.push(tick, vec![(PlayerId(1), at(x)), (PlayerId(2), crouched(at(-x), tick >= 105))], 8);
        }
        h
    }

    #[test]
    fn history_is_bounded_and_blends_between_ticks() {
        let h = history();
        assert_eq!(h.span(), Some((103, 110)));
        let rewound = h.rewind(104.25);
        assert!((rewound[0].1.feet().x - 4.25).abs() < 1e-5, "{:?}", rewound[0]);
        assert!((rewound[1].1.feet().x + 4.25).abs() < 1e-5);
        assert!(!rewound[1].1.input.crouched, "crouch from the nearer tick");
        assert!(h.rewind(104.75)[1].1.input.crouched);
        assert_eq!(h.rewind(110.0)[0].1.feet().x, 10.0);
    }

    #[test]
    fn a_shot_at_the_moment_of_a_teleport_is_tested_on_one_side_only() {
        // Player 1 runs east, goes through a teleporter between ticks 104
        // and 105 (its spawn counter moves on) and comes out 40 m away.
        let mut h = LagHistory::default();
        let body = |tick: u32| {
            let (x, life) = if tick < 105 { (tick as f32 - 100.0, 0) } else { (40.0 + (tick as f32 - 105.0), 1) };
            Hitbox { spawn_count: life, ..at(x) }
        };
        for tick in 100..=110u32 {
            h.push(tick, vec![(PlayerId(1), body(tick))], 16);
        }
        let (before, after) = (body(104), body(105));
        let one_side = |tested: Hitbox| tested == before || tested == after;
        for step in 0..=20 {
            let tick = 104.0 + f64::from(step) / 20.0;
            // The recorded ticks around it, and the client's drawing rule
            // between the two snapshots it had.
            let rewound = h.rewind(tick)[0].1;
            assert!(one_side(rewound), "at {tick}: {:?} is between the ends", rewound.feet());
            let drawn = h.rewind_between((104, 105), tick, TickRate(arena_sim::TickRate::new(64))).expect("both kept");
            assert!(one_side(drawn[0].1), "drawn at {tick}: {:?}", drawn[0].1.feet());
            // Across two snapshots further apart too.
            let wide = h.rewind_between((102, 107), tick, TickRate(arena_sim::TickRate::new(64))).expect("both kept");
            assert!(wide[0].1 == body(102) || wide[0].1 == body(107), "wide at {tick}: {:?}", wide[0].1.feet());
        }
    }

    fn bounds(estimate: f64) -> RewindBounds {
        RewindBounds { estimate, tolerance: 2.0, frame_allowance: 0.0, oldest: 0.0, span: (103, 110) }
    }

    fn tested(tick: f64, rejected: bool, clamped: bool) -> TestedTick {
        TestedTick { tick, rejected, clamped }
    }

    #[test]
    fn a_slow_clients_older_claim_is_believed_within_its_frames() {
        // A client drawing a frame a tick or more gets no allowance.
        assert_eq!(frame_allowance_ticks(1.0, 64), 0.0);
        assert_eq!(frame_allowance_ticks(f32::NAN, 64), 0.0);
        // Four frames a second at 64 Hz: 16 ticks a frame, two frames' worth.
        assert_eq!(frame_allowance_ticks(16.0, 64), 30.0);
        // Never more than MAX_FRAME_ALLOWANCE_S.
        assert_eq!(frame_allowance_ticks(1000.0, 64), MAX_FRAME_ALLOWANCE_S * 64.0);
        let slow = RewindBounds { frame_allowance: 20.0, span: (60, 110), ..bounds(107.0) };
        // 20 ticks older than the estimate: believed with the allowance, not without.
        assert_eq!(choose_tested_tick(87.0, slow), tested(87.0, false, false));
        assert_eq!(choose_tested_tick(87.0, RewindBounds { frame_allowance: 0.0, ..slow }), tested(107.0, true, false));
        // The allowance is for older claims only: a newer one keeps the tolerance.
        assert_eq!(choose_tested_tick(110.0, slow), tested(107.0, true, false));
        // Past the allowance: the estimate.
        assert_eq!(choose_tested_tick(84.0, slow), tested(107.0, true, false));
    }

    #[test]
    fn render_times_are_believed_clamped_or_replaced() {
        // Believed: close to the estimate and within the history.
        assert_eq!(choose_tested_tick(106.5, bounds(107.0)), tested(106.5, false, false));
        // Beyond the tolerance: the estimate instead.
        assert_eq!(choose_tested_tick(104.5, bounds(107.0)), tested(107.0, true, false));
        assert_eq!(choose_tested_tick(10.0, bounds(107.0)), tested(107.0, true, false));
        // In the future: rejected, and the estimate clamped to the newest tick.
        assert_eq!(choose_tested_tick(400.0, bounds(112.0)), tested(110.0, true, true));
        // Unknown (0) or garbage: the estimate.
        assert_eq!(choose_tested_tick(0.0, bounds(105.0)), tested(105.0, true, false));
        assert_eq!(choose_tested_tick(f64::NAN, bounds(105.0)), tested(105.0, true, false));
        // Believed but older than the history: clamped.
        assert_eq!(choose_tested_tick(100.0, bounds(101.0)), tested(103.0, false, true));
        // Never older than the rewind limit, even when believed.
        let limited = RewindBounds { oldest: 106.0, ..bounds(106.5) };
        assert_eq!(choose_tested_tick(105.0, limited), tested(106.0, false, true));
        // Garbage bounds still give a time within the history.
        let garbage = RewindBounds {
            estimate: f64::NAN,
            tolerance: f64::NAN,
            frame_allowance: f64::NAN,
            oldest: f64::NAN,
            span: (103, 110),
        };
        assert_eq!(choose_tested_tick(f64::INFINITY, garbage).tick, 110.0);
    }

    #[test]
    fn the_tolerance_is_two_ticks_plus_the_jitter_within_a_cap() {
        assert_eq!(render_time_tolerance_ticks(0.0, 64), 2.0);
        assert_eq!(render_time_tolerance_ticks(0.5, 64), 3.0);
        assert_eq!(render_time_tolerance_ticks(f32::NAN, 64), 2.0);
        assert!((render_time_tolerance_ticks(100.0, 64) - 6.4).abs() < 1e-9, "capped at 100 ms");
    }

    #[test]
    fn a_click_may_be_rewound_as_far_back_as_it_waited_within_a_frame_at_30_fps() {
        let click = |fraction: f32| Some(Click { fraction, yaw: 0.0, pitch: 0.0 });
        assert_eq!(click_wait_ticks(None, 64), 0.0, "no click, no wait");
        assert_eq!(click_wait_ticks(click(1.75), 64), 0.25, "a quarter tick before its command's end");
        assert_eq!(click_wait_ticks(click(0.5), 64), 1.5);
        // At most a frame at 30 frames a second (2.13 ticks at 64 Hz: the
        // wire's two ticks bound it first; 1.67 ticks at 50 Hz).
        assert_eq!(click_wait_ticks(click(0.0), 64), 2.0);
        assert!((click_wait_ticks(click(0.0), 50) - 50.0 / 30.0).abs() < 1e-9);
        // Lies about the fraction buy nothing more.
        for lie in [-5.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 9.0] {
            assert!((0.0..=2.0).contains(&click_wait_ticks(click(lie), 64)), "{lie}");
        }
    }

    #[test]
    fn a_shot_is_tested_between_the_two_snapshots_it_was_drawn_between() {
        // Player 1 runs at 1 m a tick but stops dead at tick 106; the shooter
        // lost the snapshot of 105 and drew 104..106 at 105.0: half way,
        // 5.0 m (the two recorded ticks around 105.0 say 5.0 too, but at
        // 105.5 they say 5.5 where the drawing said 5.25).
        let mut h = LagHistory::default();
        for tick in 100..=110u32 {
            h.push(tick, vec![(PlayerId(1), at((tick.min(106) - 100) as f32))], 32);
        }
        let rate = TickRate(arena_sim::TickRate::new(64));
        let x = |v: Option<Vec<(PlayerId, Hitbox)>>| v.expect("both recorded")[0].1.feet().x;
        assert!((x(h.rewind_between((104, 106), 105.5, rate)) - 5.5).abs() < 1e-5);
        assert!((x(h.rewind_between((104, 106), 105.0, rate)) - 5.0).abs() < 1e-5);
        assert!((h.rewind(105.5)[0].1.feet().x - 5.5).abs() < 1e-5);
        // Past the newer of the two: carried on at the pace between them
        // (1 m a tick, no velocity told) for at most 100 ms (6.4 ticks).
        assert!((x(h.rewind_between((103, 104), 106.0, rate)) - 6.0).abs() < 1e-4);
        assert!((x(h.rewind_between((103, 104), 130.0, rate)) - 10.4).abs() < 1e-3, "held after 100 ms");
        // Told its velocity, that instead.
        let mut told = LagHistory::default();
        for tick in 100..=102u32 {
            let mut hitbox = at(0.0);
            hitbox.input.vel = Vec2::new(-2.0, 0.0);
            told.push(tick, vec![(PlayerId(1), hitbox)], 8);
        }
        assert!((x(told.rewind_between((100, 101), 102.0, rate)) + 2.0 / 64.0).abs() < 1e-5);
        // Ticks no longer recorded, or nonsense: none (the usual rewind then).
        assert!(h.rewind_between((50, 51), 50.5, rate).is_none());
        assert!(h.rewind_between((106, 104), 105.0, rate).is_none());
        assert!(h.rewind_between((104, 106), f64::NAN, rate).is_none());
    }

    #[test]
    fn the_dead_and_rewound_death_are_respected() {
        let mut h = LagHistory::default();
        h.push(1, vec![(PlayerId(1), Hitbox { alive: false, ..at(0.0) })], 8);
        h.push(2, vec![(PlayerId(1), at(0.0))], 8);
        let origin = Vec3::new(0.0, 1.0, 5.0);
        assert!(h.rewind(1.0)[0].1.ray_test(origin, Vec3::NEG_Z, 10.0).is_none(), "dead at tick 1");
        assert!(h.rewind(2.0)[0].1.ray_test(origin, Vec3::NEG_Z, 10.0).is_some(), "alive at tick 2");
    }
}
