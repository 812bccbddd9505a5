//! Entity interpolation, as in the paper: every remote player keeps a history
//! of the states the snapshots gave it, and is drawn at render time = the
//! client's estimate of the server's time minus the interpolation delay,
//! blended between the two entries around it. With the history run dry (lost
//! snapshots) it extrapolates for at most 100 ms, as QuakeWorld did, then
//! holds (the rule, shared with the server's rewind, is
//! `arena_sim::interpolation`'s). A respawn, or a jump too large to be
//! movement, clears the history instead of sliding across the map. Switched
//! off, remote players are drawn as the newest snapshot has them: the jerky
//! baseline.

use std::collections::VecDeque;

use arena_sim::interpolation::{HISTORY_S, HowDrawn, Keyframe, drawn_at};
use arena_sim::{PlayerState, TickRate, tick_after, tick_diff};
use bevy::prelude::*;

use crate::render_clock::ServerClock;
use crate::settings::NetcodeSettings;
use crate::vocabulary::{Drawn, LocalPlayer, NetPlayer, NetState, PassedSnapshots, Roster, SessionState};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<InterpStats>();
}

/// A remote player's recent states by server tick.
#[derive(Component, Debug, Default, Clone)]
pub struct History {
    pub entries: VecDeque<(u32, PlayerState)>,
}

/// How drawing went: player-frames drawn between two snapshots, extrapolated
/// past the newest, held still, and histories cleared by a teleport.
#[derive(Resource, Debug, Default, Clone)]
pub struct InterpStats {
    pub interpolated_frames: u64,
    pub extrapolated_frames: u64,
    pub held_frames: u64,
    pub history_resets: u64,
}

impl History {
    /// Adds a snapshot's state; returns true if it cleared the history (a
    /// respawn or teleport).
    pub fn push(&mut self, tick: u32, state: PlayerState, tick_hz: u32) -> bool {
        let mut reset = false;
        if let Some(&(last_tick, last)) = self.entries.back() {
            if !tick_after(tick, last_tick) {
                return false;
            }
            // The explicit reset every snapshot carries: a respawn or a
            // teleporter bumps the spawn counter (as Quake 3 toggles
            // `EF_TELEPORT_BIT`), so nothing is drawn between the two ends
            // and no speed has to be guessed at.
            if last.spawn_count != state.spawn_count {
                self.entries.clear();
                reset = true;
            }
        }
        self.entries.push_back((tick, state));
        let keep = (HISTORY_S * f64::from(tick_hz)) as i32;
        // Older than the history keeps, or so far back that the difference
        // wraps (a server's made-up ticks: each after the last, the first
        // never let go): the history spans at most `keep` ticks, whatever
        // the server sends.
        while self.entries.front().is_some_and(|(t, _)| !(0..=keep).contains(&tick_diff(tick, *t))) {
            self.entries.pop_front();
        }
        reset
    }

    /// The two entries a draw at server time `tick` blends (older, newer),
    /// or carries on from (the last two, past the newest); none before the
    /// first or with only one.
    pub fn between(&self, tick: f64) -> Option<(u32, u32)> {
        let i = self.newer_index(tick)?;
        let (older, _) = *self.entries.get(i.checked_sub(1)?)?;
        let (newer, _) = *self.entries.get(i)?;
        Some((older, newer))
    }

    /// The one choice of entries that drawing ([`Self::sample`]) and the
    /// pair a shot names ([`Self::between`]) share: the index of the newer
    /// of the two a draw at `tick` uses (the older is the one before it),
    /// the newest past it; none before the first.
    fn newer_index(&self, tick: f64) -> Option<usize> {
        let (last_tick, _) = *self.entries.back()?;
        if tick < f64::from(self.entries.front()?.0) {
            return None;
        }
        if tick >= f64::from(last_tick) {
            return self.entries.len().checked_sub(1);
        }
        // The entries go up by tick (`push` takes only a later one and
        // keeps at most a history's span of them), so a binary search finds
        // the first past `tick`. A history across the tick count's wrap
        // has its first past its last, and the returns above take every
        // `tick` then. A walk from the oldest was the clients' largest
        // cost, a ninth of a stepped 64-player game's instructions
        // (callgrind, issue 61).
        Some(self.entries.partition_point(|(t, _)| f64::from(*t) <= tick))
    }

    /// The state at server time `tick` (fractional), and how it was obtained:
    /// the first before it, the newest exactly on it, else the shared rule
    /// ([`drawn_at`]), which the server's rewind follows too, on the two
    /// entries [`Self::newer_index`] chose (past the newest, the last two;
    /// the newest alone when it is the only one).
    pub fn sample(&self, tick: f64, tick_hz: u32) -> Option<(PlayerState, Sampled)> {
        let (first_tick, first) = *self.entries.front()?;
        let (last_tick, last) = *self.entries.back()?;
        if tick < f64::from(first_tick) {
            return Some((first, Sampled::Held));
        }
        if tick == f64::from(last_tick) {
            return Some((last, Sampled::Interpolated));
        }
        let i = self.newer_index(tick)?;
        let older = i.checked_sub(1).and_then(|i| self.entries.get(i)).copied();
        let (t1, b) = *self.entries.get(i)?;
        let keyframe = |(tick, state): (u32, PlayerState)| Keyframe::of_state(tick, &state);
        match drawn_at(older.map(keyframe), keyframe((t1, b)), tick, TickRate::new(tick_hz))? {
            HowDrawn::Blended(f) => Some((PlayerState::blend(&older?.1, &b, f), Sampled::Interpolated)),
            HowDrawn::CarriedOn { pos, extrapolated } => {
                Some((PlayerState { pos, ..b }, if extrapolated { Sampled::Extrapolated } else { Sampled::Held }))
            }
        }
    }
}

/// How a drawn state came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampled {
    Interpolated,
    Extrapolated,
    Held,
}

pub(crate) fn record_history(
    roster: Res<Roster>,
    passed: Res<PassedSnapshots>,
    mut stats: ResMut<InterpStats>,
    mut players: Query<
        (&NetPlayer, &NetState, Option<&mut History>, Entity),
        (Changed<NetState>, Without<LocalPlayer>),
    >,
    mut commands: Commands,
) {
    for (player, net, history, entity) in &mut players {
        // The snapshots a slow frame read before the newest, then the newest.
        let older = passed.0.iter().filter_map(|(tick, others)| {
            others.iter().find(|(id, _)| *id == player.id).map(|(_, state)| (*tick, *state))
        });
        let mut fresh = None;
        let history = match history {
            Some(history) => history.into_inner(),
            None => fresh.insert(History::default()),
        };
        for (tick, state) in older.chain([(net.tick, net.state)]) {
            if history.push(tick, state, roster.tick_hz) {
                stats.history_resets += 1;
            }
        }
        if let Some(history) = fresh {
            commands.entity(entity).insert(history);
        }
    }
}

/// Where every other player is drawn this frame: at the render time from its
/// history, or, with interpolation off (or nothing to draw from yet), as the
/// newest snapshot has it.
pub(crate) fn interpolate(
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    clock: Res<ServerClock>,
    mut stats: ResMut<InterpStats>,
    mut players: Query<(&NetState, Option<&History>, &mut Drawn), (With<NetPlayer>, Without<LocalPlayer>)>,
) {
    let hz = roster.tick_rate().hz();
    for (net, history, mut drawn) in &mut players {
        let sampled =
            history.filter(|_| settings.interpolation && clock.started()).and_then(|h| h.sample(clock.render_tick, hz));
        let Some((state, how)) = sampled else {
            drawn.0 = net.state;
            continue;
        };
        drawn.0 = state;
        match how {
            Sampled::Interpolated => stats.interpolated_frames += 1,
            Sampled::Extrapolated => stats.extrapolated_frames += 1,
            Sampled::Held => stats.held_frames += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moving(x: f32, vx: f32) -> PlayerState {
        PlayerState {
            pos: Vec3::new(x, 0.0, 0.0),
            vel: Vec3::new(vx, 0.0, 0.0),
            ..PlayerState::spawned_at(Vec3::ZERO, 0.0)
        }
    }

    fn history() -> History {
        let mut h = History::default();
        // 20 snapshots a second at 64 Hz: ticks 0, 3, 6, ... moving at 6.4 m/s.
        for i in 0..10u32 {
            h.push(i * 3, moving(i as f32 * 0.3, 6.4), 64);
        }
        h
    }

    #[test]
    fn finds_the_two_entries_around_the_render_time_and_blends() {
        let h = history();
        let (s, how) = h.sample(4.5, 64).expect("sample");
        assert_eq!(how, Sampled::Interpolated);
        assert!((s.pos.x - 0.45).abs() < 1e-5, "{}", s.pos.x);
        let (s, _) = h.sample(6.0, 64).expect("sample");
        assert!((s.pos.x - 0.6).abs() < 1e-5);
    }

    #[test]
    fn a_shot_names_the_entries_the_draw_used() {
        let h = history();
        assert_eq!(h.between(4.5), Some((3, 6)), "the two around it");
        assert_eq!(h.between(6.0), Some((6, 9)), "on an entry: from it to the next");
        assert_eq!(h.between(27.0), Some((24, 27)), "the newest");
        assert_eq!(h.between(31.0), Some((24, 27)), "carried on past the newest");
        assert_eq!(h.between(-1.0), None, "held before the first");
    }

    #[test]
    fn the_entries_a_draw_uses_are_the_first_past_it_in_a_history_with_gaps() {
        // Lost snapshots leave gaps of every size, near the top of the
        // tick count too.
        for start in [0u32, 1_000_000, u32::MAX - 5000] {
            let mut h = History::default();
            let mut tick = start;
            for gap in [1u32, 1, 3, 2, 7, 1, 1, 12, 4, 1, 2, 2, 9, 1] {
                h.push(tick, moving(0.0, 0.0), 128);
                tick = tick.wrapping_add(gap);
            }
            let first = f64::from(h.entries.front().unwrap().0);
            let last = f64::from(h.entries.back().unwrap().0);
            let mut at = first - 2.0;
            while at < last + 2.0 {
                // The walk it replaced: the newest past it, or the newest.
                let walked = if at < first {
                    None
                } else if at >= last {
                    Some(h.entries.len() - 1)
                } else {
                    h.entries.iter().position(|(t, _)| f64::from(*t) > at)
                };
                assert_eq!(h.newer_index(at), walked, "at {at}");
                at += 0.125;
            }
        }
    }

    #[test]
    fn a_servers_made_up_ticks_never_leave_a_history_longer_than_its_span() {
        // Each after the last as the tick count wraps (2^31 + 50, then 1 is
        // 2^32 + 1): tick 0 was never let go, and a search among entries
        // out of order would not find the walk's.
        let mut h = History::default();
        for tick in [0, 100, (1u32 << 31) + 50, 1, 2, 3, 4, 10] {
            h.push(tick, moving(0.0, 0.0), 128);
        }
        let ticks: Vec<u32> = h.entries.iter().map(|(t, _)| *t).collect();
        assert_eq!(ticks, [1, 2, 3, 4, 10]);
        assert_eq!(h.between(5.0), Some((4, 10)));
        // Across the wrap, first past last: before the first or past the newest.
        let mut h = History::default();
        for tick in [u32::MAX - 2, u32::MAX, 1, 3] {
            h.push(tick, moving(0.0, 0.0), 128);
        }
        assert_eq!(h.entries.len(), 4);
        assert_eq!(h.newer_index(2.0), None);
        assert_eq!(h.newer_index(f64::from(u32::MAX)), Some(3));
    }

    #[test]
    fn yaw_blends_the_short_way_round() {
        let a = PlayerState { yaw: 3.0, ..PlayerState::default() };
        let b = PlayerState { yaw: -3.0, ..PlayerState::default() };
        let mid = PlayerState::blend(&a, &b, 0.5);
        assert!(mid.yaw.abs() > 3.1, "through ±π, not through 0: {}", mid.yaw);
    }

    #[test]
    fn extrapolates_for_at_most_100_ms_then_holds() {
        let h = history();
        let newest = 27.0;
        let (s, how) = h.sample(newest + 3.2, 64).expect("sample"); // 50 ms ahead
        assert_eq!(how, Sampled::Extrapolated);
        assert!((s.pos.x - (2.7 + 6.4 * 0.05)).abs() < 1e-4, "{}", s.pos.x);
        let (s, how) = h.sample(newest + 32.0, 64).expect("sample"); // 500 ms ahead
        assert_eq!(how, Sampled::Held);
        assert!((s.pos.x - (2.7 + 6.4 * 0.1)).abs() < 1e-4, "held at the 100 ms mark: {}", s.pos.x);
    }

    #[test]
    fn without_velocities_it_extrapolates_from_the_last_two_positions() {
        let mut h = History::default();
        for i in 0..4u32 {
            h.push(i * 2, moving(i as f32 * 0.2, 0.0), 64);
        }
        // 0.2 m every 2 ticks at 64 Hz: 6.4 m/s; 3.2 ticks ahead is 50 ms.
        let (s, how) = h.sample(6.0 + 3.2, 64).expect("sample");
        assert_eq!(how, Sampled::Extrapolated);
        assert!((s.pos.x - (0.6 + 6.4 * 0.05)).abs() < 1e-4, "{}", s.pos.x);
    }

    #[test]
    fn a_teleport_or_respawn_clears_the_history() {
        let mut h = history();
        // A jump however far with the same spawn counter is drawn across
        // (a fast mover between two snapshots): only the reset clears it.
        assert!(!h.push(30, moving(40.0, 0.0), 64));
        let kept = h.entries.len();
        let mut respawned = moving(40.2, 0.0);
        respawned.spawn_count = 1;
        assert!(h.push(33, respawned, 64), "a respawn clears it even nearby");
        assert_eq!(h.entries.len(), 1, "of {kept}, only the new life's");
        assert!(!h.push(36, PlayerState { spawn_count: 1, ..moving(40.4, 0.0) }, 64));
        assert_eq!(h.entries.len(), 2);
    }

    #[test]
    fn old_and_duplicate_snapshots_are_ignored_and_history_is_bounded() {
        let mut h = history();
        let before = h.entries.len();
        h.push(27, moving(99.0, 0.0), 64);
        h.push(5, moving(99.0, 0.0), 64);
        assert_eq!(h.entries.len(), before);
        for i in 10..200u32 {
            h.push(i * 3, moving(i as f32 * 0.3, 6.4), 64);
        }
        // 2.5 s at 64 Hz, a snapshot every 3 ticks.
        assert!(h.entries.len() <= 55, "{} entries", h.entries.len());
    }
}
