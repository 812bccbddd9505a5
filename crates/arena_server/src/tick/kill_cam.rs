//! The two-view kill-cam, server side: the last seconds of every player
//! (eye, view, hitbox a tick) kept in a short track; on a kill, the victim's
//! client (with the kill-cam on) is sent its death as the killer's client
//! drew it: the killer's eyes, the victim as drawn (at the killer's render
//! time), and the fatal shot with the hitbox the server tested and the
//! victim's hitbox at the server's present (for a rocket: its flight, and
//! the victim as it met it). Such a victim
//! respawns after [`KILL_CAM_HOLD_S`] instead of the usual delay, or as soon
//! as the usual delay allows once it skips.

use std::collections::VecDeque;

use arena_protocol::ToClient;
use arena_protocol::kill_cam::{
    CamFrame, EyeQ, FatalShot, KILL_CAM_TRACK_S, KillCam, MAX_KILL_CAM_BYTES, MAX_KILL_CAM_FRAMES, PoseQ,
};
use arena_sim::{ArenaWorld, HitZone, Hitbox, PlayerId, PlayerState};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::net::send;
use crate::vocabulary::{
    ClientPrefs, Dead, Frag, KillCamSkipped, RocketKill, ServerPlayer, ServerTick, ShotResolved, Sim, SimWorld,
    TestedShot, TickRate,
};

/// How long a victim watching the kill-cam stays dead, seconds: the track
/// at its pace, then the frozen shot to read.
pub const KILL_CAM_HOLD_S: f32 = 5.0;
/// How far back a track reaches, seconds: the kill-cam's length, and the
/// longest a killer may have drawn the others behind the present.
const TRACK_KEEP_S: f32 = KILL_CAM_TRACK_S + 2.0;

/// One tick of a player: where its eye was, where it looked, its hitbox.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TrackPoint {
    tick: u32,
    eye: Vec3,
    yaw: f32,
    pitch: f32,
    hitbox: Hitbox,
}

/// A player's last seconds.
#[derive(Component, Debug, Default)]
pub(crate) struct Track(VecDeque<TrackPoint>);

impl Track {
    /// Forgets the last seconds (the map changed under them).
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    fn at(&self, tick: u32) -> Option<&TrackPoint> {
        let i = self.0.partition_point(|p| arena_sim::tick_diff(p.tick, tick) < 0);
        self.0.get(i).filter(|p| p.tick == tick)
    }

    /// The hitbox at a fractional tick, blended between the two around it
    /// (the nearest at either end).
    fn hitbox_at(&self, t: f64) -> Option<Hitbox> {
        let (first, last) = (self.0.front()?, self.0.back()?);
        let base = f64::from(first.tick);
        let offset = (t - base).clamp(0.0, f64::from(last.tick.wrapping_sub(first.tick)));
        let i = offset.floor() as usize;
        let f = (offset - offset.floor()) as f32;
        let a = self.0.get(i)?;
        Some(match self.0.get(i + 1) {
            Some(b) if f > 0.0 => a.hitbox.lerp(&b.hitbox, f),
            _ => a.hitbox,
        })
    }
}

/// A victim waiting out the kill-cam: the tick the usual delay allows a respawn.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct WatchingKillCam {
    earliest_tick: u32,
    /// The respawn tick the kill-cam set: a skip counts only while the
    /// death it is for is the one held (not a later death, say a fall).
    held_until: u32,
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<KillCamSkipped>().add_observer(|add: On<Add, Sim>, mut commands: Commands| {
        commands.entity(add.entity).insert(Track::default());
    });
}

/// Each tick, everyone's point on their track.
pub(crate) fn record_tracks(tick: Res<ServerTick>, rate: Res<TickRate>, mut players: Query<(&Sim, &mut Track)>) {
    let keep = (TRACK_KEEP_S * rate.hz() as f32).ceil() as usize;
    for (sim, mut track) in &mut players {
        let point = point_of(tick.0, &sim.0);
        // Ticks only go on; a jump back (a new server tick count) starts over.
        if track.0.back().is_some_and(|p| arena_sim::tick_diff(tick.0, p.tick) != 1) {
            track.0.clear();
        }
        track.0.push_back(point);
        while track.0.len() > keep {
            track.0.pop_front();
        }
    }
}

fn point_of(tick: u32, s: &PlayerState) -> TrackPoint {
    TrackPoint { tick, eye: s.eye_pos(), yaw: s.yaw, pitch: s.pitch, hitbox: Hitbox::of(s) }
}

/// What a kill-cam is made from.
pub(crate) struct KillCamInput<'a> {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
    pub killer_track: &'a Track,
    pub victim_track: &'a Track,
    /// The killer's tick the track ends on (its fatal command's).
    pub end_tick: u32,
    /// How far behind the killer's present it drew the others, ticks.
    pub delay_ticks: f64,
    pub tick_hz: u32,
    pub shot: Option<FatalShot>,
}

/// The kill-cam of one death, within [`MAX_KILL_CAM_BYTES`].
pub(crate) fn build(input: &KillCamInput) -> Option<KillCam> {
    let span = (KILL_CAM_TRACK_S * input.tick_hz as f32).ceil() as u32;
    let step = span.div_ceil(MAX_KILL_CAM_FRAMES as u32).clamp(1, u32::from(u8::MAX));
    let count = (span / step).min(MAX_KILL_CAM_FRAMES as u32);
    let mut frames: Vec<CamFrame> = (0..count)
        .rev()
        .filter_map(|k| {
            let t = input.end_tick.wrapping_sub(k * step);
            let killer = input.killer_track.at(t)?;
            let victim = input.victim_track.hitbox_at(f64::from(t) - input.delay_ticks)?;
            let eye = EyeQ::of(killer.eye, killer.yaw, killer.pitch).in_life(killer.hitbox.spawn_count);
            Some(CamFrame { killer: eye, victim: PoseQ::of(&victim) })
        })
        .collect();
    // The fatal instant itself: the shot's eye and line, the victim as tested.
    if let (Some(shot), Some(last)) = (&input.shot, frames.last_mut()) {
        let (yaw, pitch) = arena_sim::look_at(shot.origin, shot.origin + shot.dir);
        let eye = EyeQ::of(shot.origin, yaw, pitch).in_life(last.killer.life);
        *last = CamFrame { killer: eye, victim: PoseQ::of(&shot.drawn) };
    }
    if frames.is_empty() {
        return None;
    }
    let mut cam = KillCam {
        killer: input.killer,
        victim: input.victim,
        zone: input.zone,
        tick_hz: u16::try_from(input.tick_hz).unwrap_or(u16::MAX),
        step_ticks: step as u8,
        frames,
        shot: input.shot,
    };
    // Within budget however the varints fall: drop the oldest frames.
    while arena_protocol::encode(&cam).map_or(true, |b| b.len() > MAX_KILL_CAM_BYTES) && cam.frames.len() > 1 {
        let cut = cam.frames.len().div_ceil(8);
        cam.frames.drain(..cut);
    }
    Some(cam)
}

/// The fatal shot, as the server judged it.
fn fatal_shot(tested: &TestedShot, victim: PlayerId, tick: u32, world: &ArenaWorld) -> Option<FatalShot> {
    let drawn = tested.others.iter().find(|(id, _)| *id == victim)?.1;
    let server = tested.current.iter().find(|(id, _)| *id == victim).map_or(drawn, |(_, h)| *h);
    let origin = tested.pending.shot.origin;
    Some(FatalShot {
        origin,
        dir: tested.pending.shot.dir,
        tested_tick: tested.tick,
        server_tick: tick,
        drawn,
        server,
        server_in_cover: in_cover(world, origin, &server),
        blast: None,
    })
}

/// The fatal rocket: its flight from launch to blast, the victim as it met
/// it, and where the server had the victim at the blast (`server`, its
/// track's newest point; as met when there is none). Cover is seen
/// from the blast, where the splash came from.
fn fatal_rocket(kill: &RocketKill, server: Option<Hitbox>, tick: u32, world: &ArenaWorld) -> FatalShot {
    let server = server.unwrap_or(kill.met);
    FatalShot {
        origin: kill.origin,
        dir: kill.dir,
        tested_tick: kill.met_tick,
        server_tick: tick,
        drawn: kill.met,
        server,
        server_in_cover: in_cover(world, kill.blast, &server),
        blast: Some(kill.blast),
    }
}

/// Whether a wall stands between `from` and the body of `hitbox`.
fn in_cover(world: &ArenaWorld, from: Vec3, hitbox: &Hitbox) -> bool {
    let to = hitbox.body_center() - from;
    to.length() > 1e-3 && world.cast_ray(from, to.normalize(), to.length()).is_some_and(|d| d < to.length() - 0.05)
}

/// After the tick's shots and blasts: a kill-cam to each victim who wants one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_kill_cams(
    (tick, rate, world): (Res<ServerTick>, Res<TickRate>, Res<SimWorld>),
    mut shots: MessageReader<ShotResolved>,
    mut frags: MessageReader<Frag>,
    mut rocket_kills: MessageReader<RocketKill>,
    players: Query<(Entity, &ServerPlayer, &Track, &ClientPrefs)>,
    mut dead: Query<&mut Dead>,
    (mut server, round_trips): (ResMut<RenetServer>, Res<crate::vocabulary::RoundTrips>),
    mut commands: Commands,
) {
    let mut kills: Vec<(PlayerId, PlayerId, HitZone, Option<&TestedShot>)> = Vec::new();
    let resolved: Vec<&ShotResolved> = shots.read().collect();
    let rockets: Vec<&RocketKill> = rocket_kills.read().collect();
    for r in &resolved {
        if let Some(hit) = r.hit.filter(|h| h.killed) {
            kills.push((r.tested.pending.shooter, hit.victim, hit.zone, Some(&r.tested)));
        }
    }
    for f in frags.read() {
        // Rockets' kills (a shot's are above; a fall has no killer to watch).
        if f.killer != f.victim && !kills.iter().any(|(_, v, ..)| *v == f.victim) {
            kills.push((f.killer, f.victim, f.zone, None));
        }
    }
    for (killer, victim, zone, tested) in kills {
        let find = |id: PlayerId| players.iter().find(|(_, p, ..)| p.id == id);
        let (Some((entity, v, victim_track, prefs)), Some((_, k, killer_track, killer_prefs))) =
            (find(victim), find(killer))
        else {
            continue;
        };
        let Some(client) = v.client_id.filter(|_| prefs.0.kill_cam) else { continue };
        let rocket = rockets.iter().find(|r| r.killer == killer && r.victim == victim);
        let shot = match (tested, rocket) {
            (Some(t), _) => fatal_shot(t, victim, tick.0, &world),
            (None, Some(r)) => Some(fatal_rocket(r, victim_track.0.back().map(|p| p.hitbox), tick.0, &world)),
            (None, None) => None,
        };
        let (end_tick, delay_ticks) = match tested {
            Some(t) => (t.pending.cmd.tick, f64::from(t.pending.cmd.tick) - t.tick),
            // A rocket's flight met the victim as its shooter saw it (the
            // catch-up) up to the blast: the track ends on the blast.
            None => {
                let rtt_s = k.client_id.map_or(0.0, |c| round_trips.of(c, &server));
                (tick.0, (rtt_s + f64::from(killer_prefs.0.interp_ms) / 1000.0) * f64::from(rate.hz()))
            }
        };
        let input = KillCamInput {
            killer,
            victim,
            zone,
            killer_track,
            victim_track,
            end_tick,
            delay_ticks,
            tick_hz: rate.hz(),
            shot,
        };
        let Some(cam) = build(&input) else { continue };
        send(&mut server, client, &ToClient::KillCam(Box::new(cam)));
        // Dead until the kill-cam has played (or is skipped).
        if let Ok(mut d) = dead.get_mut(entity) {
            let earliest_tick = d.respawn_tick;
            d.respawn_tick = tick.0.wrapping_add((KILL_CAM_HOLD_S * rate.hz() as f32) as u32);
            commands.entity(entity).insert(WatchingKillCam { earliest_tick, held_until: d.respawn_tick });
        }
    }
}

/// Victims that skipped their kill-cam: back when the usual delay allows.
pub(crate) fn apply_skips(
    tick: Res<ServerTick>,
    mut skipped: MessageReader<KillCamSkipped>,
    mut watching: Query<(&WatchingKillCam, &mut Dead)>,
    mut commands: Commands,
) {
    for KillCamSkipped(entity) in skipped.read() {
        let Ok((w, mut dead)) = watching.get_mut(*entity) else { continue };
        commands.entity(*entity).remove::<WatchingKillCam>();
        if dead.respawn_tick != w.held_until {
            continue; // another death since: its delay stands
        }
        dead.respawn_tick =
            if arena_sim::tick_after(w.earliest_tick, tick.0) { w.earliest_tick } else { tick.0.wrapping_add(1) };
    }
}

/// The usual respawn delay in ticks (for tests).
#[cfg(test)]
fn usual_delay_ticks(hz: u32) -> u32 {
    (super::life::RESPAWN_DELAY_S * hz as f32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(from: u32, ticks: u32, x0: f32) -> Track {
        let mut t = Track::default();
        for i in 0..ticks {
            let s = PlayerState {
                pos: Vec3::new(x0 + i as f32 * 0.05, 0.0, 0.0),
                alive: true,
                on_ground: true,
                ..Default::default()
            };
            t.0.push_back(point_of(from + i, &arena_sim::quant::snap_state(&s)));
        }
        t
    }

    #[test]
    fn a_kill_cam_ends_on_the_tested_hitbox_and_keeps_to_its_budget() {
        let (killer, victim) = (track(900, 400, -10.0), track(900, 400, 5.0));
        let drawn = victim.hitbox_at(1250.5).unwrap();
        let server = victim.hitbox_at(1290.0).unwrap();
        let shot = FatalShot {
            origin: Vec3::new(0.0, 1.6, 0.0),
            dir: Vec3::X,
            tested_tick: 1250.5,
            server_tick: 1291,
            drawn,
            server,
            server_in_cover: false,
            blast: None,
        };
        for hz in [64, 128] {
            let input = KillCamInput {
                killer: PlayerId(1),
                victim: PlayerId(2),
                zone: HitZone::Head,
                killer_track: &killer,
                victim_track: &victim,
                end_tick: 1290,
                delay_ticks: 39.5,
                tick_hz: hz,
                shot: Some(shot),
            };
            let cam = build(&input).unwrap();
            cam.validate().unwrap();
            let bytes = arena_protocol::encode(&cam).unwrap();
            assert!(bytes.len() <= MAX_KILL_CAM_BYTES, "{} bytes at {hz} Hz", bytes.len());
            assert_eq!(cam.frames.last().unwrap().victim, PoseQ::of(&drawn));
            assert_eq!(cam.shot.unwrap().drawn, drawn);
            // The frames before: the victim as the killer drew it then (the
            // same delay behind the killer's tick).
            let step = u32::from(cam.step_ticks);
            let before = cam.frames[cam.frames.len() - 2].victim;
            let then = victim.hitbox_at(f64::from(1290 - step) - 39.5).unwrap();
            assert_eq!(before, PoseQ::of(&then));
            assert!(cam.frames.len() >= (KILL_CAM_TRACK_S * 64.0) as usize - 1, "{}", cam.frames.len());
        }
        assert_eq!(usual_delay_ticks(64), 128);
    }

    #[test]
    fn a_rocket_kill_freezes_on_its_flight_and_the_victim_it_met() {
        let world = ArenaWorld::new(arena_sim::MapDef::foundry());
        let (killer, victim) = (track(900, 400, -10.0), track(900, 400, 5.0));
        let met = victim.hitbox_at(1270.0).unwrap();
        let now = victim.0.back().map(|p| p.hitbox);
        let kill = RocketKill {
            killer: PlayerId(1),
            victim: PlayerId(2),
            origin: Vec3::new(-10.0, 1.6, 0.0),
            dir: Vec3::X,
            blast: met.feet() + Vec3::new(-0.4, 0.1, 0.0),
            met_tick: 1270.0,
            met,
        };
        let shot = fatal_rocket(&kill, now, 1299, &world);
        assert_eq!((shot.drawn, shot.tested_tick, shot.blast), (met, 1270.0, Some(kill.blast)));
        assert_eq!(Some(shot.server), now, "the ghost: where the server had the victim at the blast");
        assert!(!shot.server_in_cover, "open floor between the blast and the victim");
        let input = KillCamInput {
            killer: PlayerId(1),
            victim: PlayerId(2),
            zone: arena_sim::rocket::SPLASH_ZONE,
            killer_track: &killer,
            victim_track: &victim,
            end_tick: 1299,
            delay_ticks: 10.0,
            tick_hz: 64,
            shot: Some(shot),
        };
        let cam = build(&input).unwrap();
        cam.validate().unwrap();
        // The frozen frame: the launch's eye along the flight, the victim as met.
        let last = cam.frames.last().unwrap();
        assert!(last.killer.pos().distance(kill.origin) < 0.01);
        assert!(last.victim.hitbox().feet().distance(met.feet()) < 0.01);
        let (metres, ms) = cam.gap().unwrap();
        assert!(metres > 0.5 && (ms - 29.0 * 1000.0 / 64.0).abs() < 1e-3, "{metres} m {ms} ms");
    }

    #[test]
    fn tracks_blend_between_ticks_and_hold_at_their_ends() {
        let t = track(10, 5, 0.0);
        let mid = t.hitbox_at(11.5).unwrap();
        assert!((mid.feet().x - 0.075).abs() < 1e-3);
        assert_eq!(t.hitbox_at(0.0).unwrap().feet(), t.0[0].hitbox.feet());
        assert_eq!(t.hitbox_at(99.0).unwrap().feet(), t.0[4].hitbox.feet());
        assert!(t.at(12).is_some() && t.at(15).is_none());
    }
}
