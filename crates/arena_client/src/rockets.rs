//! Rockets on the client. Ours are predicted: drawn from the frame of the
//! click (from the eye as drawn, along the click's view), flown with the
//! shared rule along our predicted timeline, exploding on the wall or on a
//! player as drawn; matched to the server's by who fired and which command
//! (never both drawn), and faded and counted when the server never had one.
//! Their splash on ourselves goes into the prediction at the tick the
//! server lands it (the rocket jump, predicted). Everyone else's are drawn
//! from their launch on the interpolated timeline, like the players.

use std::collections::VecDeque;

use arena_protocol::ToClient;
use arena_protocol::rocket::{BlastInfo, LaunchInfo, tick_near};
use arena_sim::rocket::{self, Launch, ROCKET_SPEED_MPS};
use arena_sim::{Hitbox, PlayerId, PlayerState, Weapon, tick_after};
use bevy::prelude::*;

use crate::commands::LocalInput;
use crate::prediction::{PredictedEvents, Prediction};
use crate::vocabulary::{
    ClientStats, ClientWorld, Drawn, DrawnFrame, GameMessage, LocalPlayer, NetPlayer, OwnSplashSchedule, Roster,
    SessionState,
};

/// Most of our own rockets remembered, and of everyone else's in flight.
pub const MAX_OWN_ROCKETS: usize = 64;
pub const MAX_REMOTE_ROCKETS: usize = 512;
/// How long after the server ran the command that fired it a predicted
/// rocket waits for the server's word before it fades as never fired,
/// seconds: past two of renet's reliable resends.
pub(crate) const CONFIRM_WAIT_S: f64 = 1.0;
/// How long a click's rocket, drawn before its command, waits for the
/// command to fire it, seconds.
const CLICK_WAIT_S: f64 = 0.25;
/// How long a rocket that was never on the server takes to fade, seconds.
pub(crate) const FADE_S: f32 = 0.3;
/// A server blast this far from ours is drawn too (ours was wrong), metres.
const BLAST_MISMATCH_M: f32 = 1.0;
/// Most rocket messages taken in one frame; past them a hostile server's
/// flood is counted and dropped (each costs a ray cast).
pub(crate) const MAX_ROCKET_MESSAGES_PER_FRAME: usize = 128;
/// Impact errors kept for the figures.
const MAX_ERRORS: usize = 4096;
/// Rockets done with kept for the figures.
const MAX_JUDGED: usize = 256;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<ClientRockets>()
        .init_session_resource::<RocketStats>()
        .init_session_resource::<DrawnRockets>()
        .init_session_resource::<OwnSplashSchedule>()
        .add_message::<BlastDrawn>()
        .add_systems(Update, forget_rockets.run_if(resource_changed::<ClientWorld>));
}

/// Another map (the server's next match): the rockets of the old one go.
fn forget_rockets(mut rockets: ResMut<ClientRockets>, mut drawn: ResMut<DrawnRockets>) {
    *rockets = ClientRockets::default();
    drawn.0.clear();
}

/// Where our rocket ended, as predicted or as the server said.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnBlast {
    pub point: Vec3,
    /// The tick of our timeline its splash on us lands on.
    pub own_tick: u32,
    pub direct: Option<PlayerId>,
    /// The others its splash reached as we drew them, and the damage each
    /// would take (predicted only).
    pub victims: Vec<(PlayerId, u8)>,
}

/// One of our rockets.
#[derive(Debug, Clone)]
pub struct OwnRocket {
    /// Set by the command that fired it (none: drawn from the click, its
    /// command not made yet).
    pub launch: Option<Launch>,
    /// Where it starts and goes before its command fires it.
    pub click_origin: Vec3,
    pub click_dir: Vec3,
    /// Real time of the click (or of the command), seconds.
    pub since_s: f64,
    /// How far it flies before a wall, metres.
    pub wall_m: f32,
    /// The server's launch of it (its catch-up, milliseconds).
    pub confirmed: Option<u16>,
    /// When the server was first known to have run its command, real seconds.
    pub acked_s: Option<f64>,
    pub predicted: Option<OwnBlast>,
    pub server: Option<OwnBlast>,
    /// Seconds flown as last drawn.
    pub drawn_flown_s: f32,
    /// Fading since (real seconds): never on the server.
    pub fading_s: Option<f64>,
}

/// Someone else's rocket, from its launch.
#[derive(Debug, Clone, Copy)]
pub struct RemoteRocket {
    pub owner: PlayerId,
    pub launch: Launch,
    pub head_start_s: f32,
    /// Where it ends: the wall, or where the server said it blew up, metres.
    pub end_m: f32,
    pub blast_point: Option<Vec3>,
}

/// The rockets this client knows of.
#[derive(Resource, Debug, Default)]
pub struct ClientRockets {
    pub own: VecDeque<OwnRocket>,
    /// Our rockets done with (blown up and the server's word come, or
    /// faded), newest last: for figures.
    pub judged: VecDeque<OwnRocket>,
    pub remote: VecDeque<RemoteRocket>,
    /// The number of clicks seen (from [`LocalInput::clicks`]).
    clicks_seen: u64,
    /// Our timeline as last drawn (ticks) and when (real seconds): a frame
    /// that holds the prediction carries it on by the clock.
    last_own_time: Option<(f64, f64)>,
}

/// How our rockets' predictions fared, since joining.
#[derive(Resource, Debug, Default, Clone)]
pub struct RocketStats {
    /// Rockets drawn at a click, before their command.
    pub drawn_at_click: u64,
    /// Rockets our prediction fired (a command's).
    pub predicted: u64,
    /// Of those, matched to the server's launch.
    pub confirmed: u64,
    /// Predicted, never on the server: faded.
    pub never_on_server: u64,
    /// Launches of ours the server had that we had not predicted.
    pub unpredicted: u64,
    /// Clicks whose rocket no command fired (removed).
    pub clicks_not_fired: u64,
    /// Our rockets the server blew up before we did, cut where it said.
    pub cut: u64,
    /// Our blasts the server put more than a metre away (its drawn too).
    pub blasts_moved: u64,
    /// Distance from each predicted blast to the server's, metres (newest last).
    pub impact_errors_m: VecDeque<f32>,
}

/// A rocket as drawn this frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawnRocket {
    pub owner: PlayerId,
    /// The command that fired it (none: a click's, before its command).
    pub tick: Option<u32>,
    pub pos: Vec3,
    pub dir: Vec3,
    /// 1, down to 0 while fading.
    pub alpha: f32,
    pub own: bool,
    /// How far it has flown, metres (its smoke trail is as long, at most a few metres).
    pub flown_m: f32,
}

/// Every rocket drawn this frame.
#[derive(Resource, Debug, Default, Clone)]
pub struct DrawnRockets(pub Vec<DrawnRocket>);

/// A blast drawn this frame: the explosion, its sound, its light.
#[derive(Message, Debug, Clone, Copy)]
pub struct BlastDrawn {
    pub owner: PlayerId,
    pub point: Vec3,
    /// Ours, as predicted.
    pub predicted: bool,
}

impl ClientRockets {
    /// Where our own splashes land, for the prediction: the server's word
    /// when it came, else what we predicted, else the wall ahead.
    fn schedule(&self, dt_s: f32) -> Vec<(u32, Vec3)> {
        self.own
            .iter()
            .filter(|r| r.fading_s.is_none())
            .filter_map(|r| {
                let launch = r.launch?;
                let blast = r.server.as_ref().or(r.predicted.as_ref());
                Some(match blast {
                    Some(b) => (b.own_tick, b.point),
                    None => (launch.tick_reaching(r.wall_m, dt_s), launch.blast_point(r.wall_m)),
                })
            })
            .filter(|(_, p)| p.is_finite())
            .collect()
    }
}

/// Our commands' rockets, as the prediction fires them: a click's rocket
/// drawn already takes its command's launch; where its splash lands on us
/// goes to the prediction at once (a shot at one's feet lands a few ticks on).
pub(crate) fn launch_own(
    mut events: MessageReader<PredictedEvents>,
    world: Res<ClientWorld>,
    roster: Res<Roster>,
    time: Res<Time<Real>>,
    mut rockets: ResMut<ClientRockets>,
    mut stats: ResMut<RocketStats>,
    mut schedule: ResMut<OwnSplashSchedule>,
) {
    let dt = roster.tick_rate().dt_s();
    let now = time.elapsed_secs_f64();
    let mut changed = false;
    for e in events.read() {
        let Some(aim) = e.events.weapon.rocket else { continue };
        let launch = Launch { origin: aim.shot.origin, dir: aim.shot.dir, tick: e.tick, at_s: aim.at_s };
        stats.predicted += 1;
        changed = true;
        let wall_m = launch.wall_distance(&world);
        let from_click = rockets.own.iter_mut().find(|r| r.launch.is_none() && r.fading_s.is_none());
        match from_click {
            Some(r) => {
                r.launch = Some(launch);
                r.wall_m = wall_m;
            }
            None => rockets.own.push_back(own_rocket(Some(launch), aim.shot.origin, aim.shot.dir, now, wall_m)),
        }
        while rockets.own.len() > MAX_OWN_ROCKETS {
            rockets.own.pop_front();
        }
    }
    if changed {
        schedule.0 = rockets.schedule(dt);
    }
}

fn own_rocket(launch: Option<Launch>, origin: Vec3, dir: Vec3, now: f64, wall_m: f32) -> OwnRocket {
    OwnRocket {
        launch,
        click_origin: origin,
        click_dir: dir,
        since_s: now,
        wall_m,
        confirmed: None,
        acked_s: None,
        predicted: None,
        server: None,
        drawn_flown_s: 0.0,
        fading_s: None,
    }
}

/// What the server says of rockets: a launch of ours confirms the one we
/// drew (matched by the command's tick), someone else's starts to be drawn;
/// a blast of ours is compared with where we drew it, someone else's ends
/// its flight there.
pub(crate) fn apply_rocket_messages(
    mut messages: MessageReader<GameMessage>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    prediction: Res<Prediction>,
    time: Res<Time<Real>>,
    mut rockets: ResMut<ClientRockets>,
    mut stats: ResMut<RocketStats>,
    mut schedule: ResMut<OwnSplashSchedule>,
    mut client_stats: ResMut<ClientStats>,
) {
    let dt = roster.tick_rate().dt_s();
    let now = time.elapsed_secs_f64();
    let mut taken = 0usize;
    // Ticks near which a launch's low bits are read: ours by our newest
    // command, others' by the newest snapshot.
    let ours_near = prediction.tick.or(prediction.last_ack).or(roster.last_snapshot_tick).unwrap_or(0);
    let theirs_near = roster.last_snapshot_tick.unwrap_or(ours_near);
    for GameMessage(message) in messages.read() {
        if matches!(message, ToClient::RocketFired { .. } | ToClient::RocketExploded { .. }) {
            taken += 1;
            if taken > MAX_ROCKET_MESSAGES_PER_FRAME {
                client_stats.flood_dropped += 1;
                continue;
            }
        }
        match message {
            ToClient::RocketFired { shooter, launch } => {
                let info = launch.read();
                if Some(*shooter) == roster.local_id {
                    confirm_own(&mut rockets, &mut stats, &info, ours_near, dt, &world, now);
                } else {
                    let launch = info.launch(theirs_near, dt);
                    let end_m = launch.wall_distance(&world);
                    let head_start_s = f32::from(info.catch_up_ms) / 1000.0;
                    rockets.remote.push_back(RemoteRocket {
                        owner: *shooter,
                        launch,
                        head_start_s,
                        end_m,
                        blast_point: None,
                    });
                    while rockets.remote.len() > MAX_REMOTE_ROCKETS {
                        rockets.remote.pop_front();
                    }
                }
            }
            ToClient::RocketExploded { owner, blast } => {
                let info = blast.read();
                if Some(*owner) == roster.local_id {
                    own_blast_said(&mut rockets, &mut stats, &info, ours_near);
                } else if let Some(r) = rockets
                    .remote
                    .iter_mut()
                    .rev()
                    .find(|r| r.owner == *owner && r.launch.tick as u16 == info.tick_low && r.blast_point.is_none())
                {
                    r.blast_point = Some(info.point);
                    r.end_m = (info.point - r.launch.origin).length();
                }
            }
            _ => {}
        }
    }
    // The server has run the command: from then on, its launch is due.
    if let Some(ack) = prediction.last_ack {
        for r in rockets.own.iter_mut() {
            if r.acked_s.is_none() && r.launch.is_some_and(|l| !tick_after(l.tick, ack)) {
                r.acked_s = Some(now);
            }
        }
    }
    for r in rockets.own.iter_mut() {
        let overdue = r.acked_s.is_some_and(|t| now - t > CONFIRM_WAIT_S);
        if r.launch.is_some() && r.confirmed.is_none() && r.fading_s.is_none() && overdue {
            r.fading_s = Some(now);
            stats.never_on_server += 1;
        }
    }
    schedule.0 = rockets.schedule(dt);
}

fn confirm_own(
    rockets: &mut ClientRockets,
    stats: &mut RocketStats,
    info: &LaunchInfo,
    near: u32,
    dt: f32,
    world: &ClientWorld,
    now: f64,
) {
    let tick = tick_near(info.tick_low, near);
    let ours = rockets.own.iter_mut().find(|r| r.launch.is_some_and(|l| l.tick == tick));
    match ours {
        Some(r) if r.confirmed.is_none() => {
            r.confirmed = Some(info.catch_up_ms);
            stats.confirmed += u64::from(r.fading_s.is_none());
        }
        Some(_) => {}
        None => {
            // The server fired one we did not: draw it from its launch.
            stats.unpredicted += 1;
            let launch = info.launch(near, dt);
            let mut r = own_rocket(Some(launch), launch.origin, launch.dir, now, launch.wall_distance(world));
            r.confirmed = Some(info.catch_up_ms);
            rockets.own.push_back(r);
            while rockets.own.len() > MAX_OWN_ROCKETS {
                rockets.own.pop_front();
            }
        }
    }
}

fn own_blast_said(rockets: &mut ClientRockets, stats: &mut RocketStats, info: &BlastInfo, near: u32) {
    let tick = tick_near(info.tick_low, near);
    let Some(r) = rockets.own.iter_mut().find(|r| r.launch.is_some_and(|l| l.tick == tick)) else { return };
    if r.server.is_some() {
        return;
    }
    let own_tick = tick.wrapping_add(u32::from(info.own_ticks));
    r.server = Some(OwnBlast { point: info.point, own_tick, direct: info.direct, victims: Vec::new() });
    if let Some(predicted) = &r.predicted {
        push_error(stats, predicted.point.distance(info.point));
    }
}

fn push_error(stats: &mut RocketStats, error_m: f32) {
    stats.impact_errors_m.push_back(error_m);
    while stats.impact_errors_m.len() > MAX_ERRORS {
        stats.impact_errors_m.pop_front();
    }
}

/// Every rocket where it is drawn this frame: ours along our predicted
/// timeline (a click's from the click), meeting the others as drawn;
/// everyone else's along the interpolated timeline. Blasts as they are
/// reached.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_rockets(
    input: Res<LocalInput>,
    frame: Res<DrawnFrame>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    time: Res<Time<Real>>,
    local: Query<&Drawn, With<LocalPlayer>>,
    others: Query<(&NetPlayer, &Drawn), Without<LocalPlayer>>,
    (mut rockets, mut stats, mut drawn): (ResMut<ClientRockets>, ResMut<RocketStats>, ResMut<DrawnRockets>),
    mut blasts: MessageWriter<BlastDrawn>,
) {
    let dt = roster.tick_rate().dt_s();
    let now = time.elapsed_secs_f64();
    let me = roster.local_id.unwrap_or_default();
    drawn.0.clear();
    // A click with the launcher ready: its rocket leaves now, from the eye as drawn.
    if input.clicks != rockets.clicks_seen {
        let new_click = input.clicks > rockets.clicks_seen;
        rockets.clicks_seen = input.clicks;
        let command_fired = rockets.own.back().is_some_and(|r| r.launch.is_some() && now - r.since_s < 1e-9);
        if let (true, false, Ok(state), Some(click)) = (new_click, command_fired, local.single(), input.click.as_ref())
            && ready(&state.0, dt)
        {
            let dir = arena_sim::player::view_forward(click.yaw, click.pitch);
            rockets.own.push_back(own_rocket(None, state.0.eye_pos(), dir, now, f32::MAX));
            stats.drawn_at_click += 1;
        }
    }
    let drawn_others: Vec<(PlayerId, PlayerState)> = others.iter().map(|(p, d)| (p.id, d.0)).collect();
    let hitboxes: Vec<(PlayerId, Hitbox)> = drawn_others.iter().map(|(id, s)| (*id, Hitbox::of(s))).collect();
    // Our timeline as drawn: between the last two predicted ticks; in a
    // frame that held the prediction, carried on by the clock.
    let tick_hz = f64::from(roster.tick_rate().hz());
    let own_time = frame
        .tick
        .map(|t| f64::from(t) + f64::from(frame.fraction))
        .or_else(|| rockets.last_own_time.map(|(t, at)| t + (now - at).clamp(0.0, 0.25) * tick_hz));
    rockets.last_own_time = own_time.map(|t| (t, now));
    let mut fly_own = |r: &mut OwnRocket| -> bool {
        if r.launch.is_none() && now - r.since_s > CLICK_WAIT_S {
            stats.clicks_not_fired += 1;
            return false;
        }
        let flown = match (r.launch, own_time) {
            (Some(l), Some(t)) => l.flown_at(t, dt),
            // No predicted timeline (prediction off): the time since it was seen.
            _ => (now - r.since_s) as f32,
        };
        let (origin, dir) = r.launch.map_or((r.click_origin, r.click_dir), |l| (l.origin, l.dir));
        let alpha = r.fading_s.map_or(1.0, |t| 1.0 - ((now - t) as f32 / FADE_S));
        if alpha <= 0.0 || Launch::spent(flown) {
            return false;
        }
        if r.predicted.is_some() {
            // Blown up already; kept until the server's word for the figures.
            return r.server.is_none()
                && r.fading_s.is_none()
                && now - r.since_s < f64::from(rocket::MAX_FLIGHT_S) + 2.0;
        }
        let (from_m, to_m) = (r.drawn_flown_s.max(0.0) * ROCKET_SPEED_MPS, flown.max(0.0) * ROCKET_SPEED_MPS);
        r.drawn_flown_s = r.drawn_flown_s.max(flown);
        if let Some(launch) = r.launch.filter(|_| r.fading_s.is_none()) {
            // Where it ends as we draw it: a player or the wall.
            let reach = to_m.min(r.wall_m);
            let met = rocket::player_hit(&launch, me, (from_m, reach), &hitboxes);
            let end = match met {
                Some((id, at)) => Some((at, Some(id))),
                None if to_m >= r.wall_m => Some((r.wall_m, None)),
                None => None,
            };
            // The server blew it up before it got there as we draw it: cut it there.
            let passed = r.server.clone().filter(|b| end.is_none() && to_m > (b.point - launch.origin).length() + 1.0);
            if let Some(server) = passed {
                // What we would have predicted: on to the wall.
                push_error(&mut stats, launch.blast_point(r.wall_m).distance(server.point));
                stats.cut += 1;
                blasts.write(BlastDrawn { owner: me, point: server.point, predicted: false });
                return false;
            }
            if let Some((distance_m, direct)) = end {
                let point = launch.blast_point(distance_m);
                let victims = drawn_others
                    .iter()
                    .filter(|(_, s)| s.hurtable())
                    .filter_map(|(id, s)| {
                        rocket::splash(&world, point, &Hitbox::of(s), false, direct == Some(*id))
                            .map(|h| (*id, h.damage))
                    })
                    .collect();
                let own_tick = launch.tick_reaching(distance_m, dt);
                blasts.write(BlastDrawn { owner: me, point, predicted: true });
                if let Some(server) = &r.server {
                    let error = server.point.distance(point);
                    push_error(&mut stats, error);
                    if error > BLAST_MISMATCH_M {
                        stats.blasts_moved += 1;
                        blasts.write(BlastDrawn { owner: me, point: server.point, predicted: false });
                    }
                }
                r.predicted = Some(OwnBlast { point, own_tick, direct, victims });
                return r.server.is_none();
            }
        }
        drawn.0.push(DrawnRocket {
            owner: me,
            tick: r.launch.map(|l| l.tick),
            pos: origin + dir * flown.max(0.0) * ROCKET_SPEED_MPS,
            dir,
            alpha: alpha.clamp(0.0, 1.0),
            own: true,
            flown_m: flown.max(0.0) * ROCKET_SPEED_MPS,
        });
        true
    };
    let mut own = std::mem::take(&mut rockets.own);
    let mut done = Vec::new();
    own.retain_mut(|r| {
        let keep = fly_own(r);
        if !keep && r.launch.is_some() {
            done.push(r.clone());
        }
        keep
    });
    rockets.own = own;
    rockets.judged.extend(done);
    while rockets.judged.len() > MAX_JUDGED {
        rockets.judged.pop_front();
    }
    // Everyone else's, where the others are drawn: the server's flight
    // (its catch-up included) at the render time.
    let render = frame.render_tick;
    rockets.remote.retain(|r| {
        let flown = r.launch.flown_at(render + 1.0, dt) + r.head_start_s;
        if flown * ROCKET_SPEED_MPS >= r.end_m {
            let point = r.blast_point.unwrap_or_else(|| r.launch.blast_point(r.end_m));
            blasts.write(BlastDrawn { owner: r.owner, point, predicted: false });
            return false;
        }
        if Launch::spent(flown) {
            return false;
        }
        if flown > 0.0 {
            drawn.0.push(DrawnRocket {
                owner: r.owner,
                tick: Some(r.launch.tick),
                pos: r.launch.pos(flown),
                dir: r.launch.dir,
                alpha: 1.0,
                own: false,
                flown_m: flown * ROCKET_SPEED_MPS,
            });
        }
        true
    });
}

/// Whether our launcher fires at a click now, as the shared rule will
/// decide it at the command (a click's rocket is drawn on this guess and
/// removed if the command does not fire it).
fn ready(state: &PlayerState, dt_s: f32) -> bool {
    state.alive && state.weapon == Weapon::Rocket && state.fire_cooldown_s <= dt_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_is_ready_only_in_hand_and_cool() {
        let armed = PlayerState { weapon: Weapon::Rocket, ..PlayerState::spawned_at(Vec3::ZERO, 0.0) };
        assert!(ready(&armed, 1.0 / 64.0));
        assert!(!ready(&PlayerState { fire_cooldown_s: 0.5, ..armed }, 1.0 / 64.0));
        assert!(!ready(&PlayerState { weapon: Weapon::Rifle, ..armed }, 1.0 / 64.0));
        assert!(!ready(&PlayerState { alive: false, ..armed }, 1.0 / 64.0));
    }
}
