//! Demo recording (`--record DIR`): each match into its own demo file, a
//! frame per tick (see `arena_protocol::demo_frame`), a keyframe a second.
//! Memory stays bounded (one open chunk of about 64 KiB, a state and a
//! name per player); the file is finished (its last chunk, its index) when
//! the match ends, when the server stops cleanly or on SIGTERM, and when
//! the server is dropped; the oldest of Arena's demos past `record_keep`
//! are deleted.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arena_protocol::demo::{DemoHeader, DemoWriter};
use arena_protocol::demo_frame::{
    DemoBlast, DemoFrag, DemoFrame, DemoHit, DemoPlayerInfo, DemoRocket, DemoShot, FrameCodec, KeyPlayer, PlayerTick,
    same_state,
};
use arena_sim::{PlayerId, PlayerState};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::match_flow::{MatchState, ScoredFrags};
use super::rockets::RocketLog;
use crate::vocabulary::{
    ClientPrefs, Items, LastRun, PassedChat, Roster, Score, ServerIdentity, ServerPlayer, ServerTick, ShotResolved,
    Sim, TickRate,
};

/// Demo files start with this, so that only Arena's own are ever deleted.
const FILE_PREFIX: &str = "arena-";
const FILE_SUFFIX: &str = ".demo";

/// Where and how many.
#[derive(Resource, Debug, Clone)]
pub(crate) struct RecordTo {
    pub dir: PathBuf,
    pub keep: usize,
}

/// The match being recorded.
struct Open {
    writer: DemoWriter<BufWriter<File>>,
    path: PathBuf,
    match_number: u32,
    first_tick: u32,
    frames: u64,
}

/// The recorder's state: the open demo and what the next frame is coded against.
#[derive(Resource, Default)]
pub(crate) struct Recorder {
    open: Option<Open>,
    codec: FrameCodec,
    /// Each player's state at the end of the last frame.
    expected: BTreeMap<PlayerId, PlayerState>,
    /// Players in the last frame, with their names.
    known: BTreeMap<PlayerId, DemoPlayerInfo>,
    /// Set after a write failed: recording stops, said once.
    failed: bool,
    /// The items as the last frame wrote them (none yet in this demo).
    items: Option<Vec<arena_sim::ItemSlot>>,
}

impl Recorder {
    /// Writes the open demo's last chunk and index.
    fn finish(&mut self, keep: usize) {
        let Some(open) = self.open.take() else { return };
        let (frames, path) = (open.frames, open.path.clone());
        match open.writer.finish() {
            Ok(_) => {
                info!("demo written: {} ({frames} ticks)", path.display());
                if let Some(dir) = path.parent() {
                    prune(dir, keep);
                }
            }
            Err(e) => error!("demo {}: could not finish it: {e}", path.display()),
        }
        self.codec.reset();
        self.expected.clear();
        self.known.clear();
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // The server's world is being dropped (a listen server closing, a
        // test's App): the demo must still be whole.
        self.finish(usize::MAX);
    }
}

/// Deletes the oldest of Arena's demos in `dir` past `keep` (names carry
/// the start time, so they sort by age).
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut demos: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(FILE_PREFIX) && n.ends_with(FILE_SUFFIX))
        })
        .collect();
    if demos.len() <= keep {
        return;
    }
    demos.sort();
    for old in &demos[..demos.len() - keep] {
        match std::fs::remove_file(old) {
            Ok(()) => info!("demo deleted (keeping the newest {keep}): {}", old.display()),
            Err(e) => warn!("demo {}: could not delete it: {e}", old.display()),
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Recorder>().add_systems(Last, finish_on_exit);
}

/// The server is stopping (a clean stop, SIGTERM, --seconds): the demo is
/// finished now, not left to the world's drop.
fn finish_on_exit(mut exits: MessageReader<AppExit>, to: Option<Res<RecordTo>>, mut recorder: ResMut<Recorder>) {
    if exits.read().next().is_some() {
        recorder.finish(to.map_or(usize::MAX, |t| t.keep));
    }
}

/// Whether files (demos, the lab's charts) can be written into `dir`: made if it is missing, and a
/// file created, written and removed in it. A server asked to record checks
/// this before it listens, so an unwritable folder stops it at once.
pub fn check_writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    // Named by process and time: servers sharing a folder (containers are
    // all process 1) do not trip over each other's probe.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(".{FILE_PREFIX}write-check-{}-{nanos}", std::process::id()));
    let written = File::create_new(&probe).and_then(|mut file| std::io::Write::write_all(&mut file, b"arena"));
    // Removed whatever the write gave; a probe left behind would only be
    // a stray empty file, so its removal's own error does not count.
    let _ = std::fs::remove_file(&probe);
    written
}

fn open_demo(to: &RecordTo, identity: &ServerIdentity, rate: TickRate, number: u32) -> Result<Open, String> {
    std::fs::create_dir_all(&to.dir).map_err(|e| format!("cannot create {}: {e}", to.dir.display()))?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let stamp = time_stamp(now);
    let path = to.dir.join(format!("{FILE_PREFIX}{stamp}-match{number}{FILE_SUFFIX}"));
    let file = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let header = DemoHeader {
        protocol: arena_protocol::PROTOCOL_VERSION,
        tick_hz: u16::try_from(rate.hz()).unwrap_or(u16::MAX),
        map: identity.map.clone(),
        server_name: identity.name.clone(),
        started_unix_s: now,
    };
    let writer = DemoWriter::new(BufWriter::new(file), &header).map_err(|e| format!("{}: {e}", path.display()))?;
    info!("recording match {number} to {}", path.display());
    Ok(Open { writer, path, match_number: number, first_tick: 0, frames: 0 })
}

/// `YYYYMMDD-HHMMSS` (UTC) of a Unix time: demo names that sort by age.
fn time_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// After each tick: its frame.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_tick(
    (tick, rate, to, identity): (Res<ServerTick>, Res<TickRate>, Option<Res<RecordTo>>, Option<Res<ServerIdentity>>),
    match_state: Res<MatchState>,
    roster: Res<Roster>,
    (server, round_trips): (Res<RenetServer>, Res<crate::vocabulary::RoundTrips>),
    players: Query<(&ServerPlayer, &Sim, &LastRun, &Score, Option<&ClientPrefs>)>,
    mut shots: MessageReader<ShotResolved>,
    rocket_log: Res<RocketLog>,
    mut passed_chat: ResMut<PassedChat>,
    (mut recorder, items, scored): (ResMut<Recorder>, Res<Items>, Res<ScoredFrags>),
) {
    // Taken every tick, recording or not: the list never grows.
    let chat = std::mem::take(&mut passed_chat.0);
    let (Some(to), Some(identity)) = (to, identity) else { return };
    let shots: Vec<_> = shots.read().collect();
    if recorder.failed {
        return;
    }
    // A new match, a new demo.
    if recorder.open.as_ref().is_some_and(|o| o.match_number != match_state.number) {
        recorder.finish(to.keep);
    }
    if recorder.open.is_none() {
        match open_demo(&to, &identity, *rate, match_state.number) {
            Ok(mut open) => {
                open.first_tick = tick.0;
                recorder.open = Some(open);
                recorder.items = None;
            }
            Err(e) => {
                error!("recording stops: {e}");
                recorder.failed = true;
                return;
            }
        }
    }
    let mut frame = DemoFrame { tick: tick.0, ..Default::default() };
    let mut ran: Vec<_> = players.iter().filter(|(_, _, run, ..)| run.tick == Some(tick.0)).collect();
    ran.sort_by_key(|(p, ..)| p.id);
    let recorder = &mut *recorder;
    // Who joined and who left, as this frame's players show it.
    let mut present = BTreeMap::new();
    for (player, ..) in &ran {
        let info = DemoPlayerInfo { id: player.id, name: roster.name(player.id).to_string(), bot: player.is_bot() };
        if recorder.known.get(&player.id) != Some(&info) {
            if recorder.known.contains_key(&player.id) {
                frame.left.push(player.id);
            }
            frame.joined.push(info.clone());
            recorder.expected.remove(&player.id);
        }
        present.insert(player.id, info);
    }
    frame.left.extend(recorder.known.keys().filter(|id| !present.contains_key(id)));
    for id in &frame.left {
        recorder.expected.remove(id);
    }
    recorder.known = present;
    for (player, sim, run, ..) in &ran {
        let from = match recorder.expected.get(&player.id) {
            Some(expected) if same_state(expected, &run.from) => None,
            _ => Some(run.from),
        };
        let after = (!same_state(&run.stepped, &sim.0)).then_some(sim.0);
        frame.players.push(PlayerTick { id: player.id, cmd: run.cmd, from, after });
        recorder.expected.insert(player.id, sim.0);
    }
    for resolved in shots {
        let t = &resolved.tested;
        frame.shots.push(DemoShot {
            shooter: t.pending.shooter,
            tested_tick: t.tick,
            lag_compensated: t.compensated,
            hit: resolved.hit.map(|h| DemoHit { victim: h.victim, zone: h.zone, damage: h.damage }),
        });
    }
    // The frags as they were scored, not by the sides or the phase now: a
    // dead victim's waiting switch has been made since.
    frame.frags = scored
        .0
        .iter()
        .map(|(f, score)| DemoFrag { killer: f.killer, victim: f.victim, zone: f.zone, score: *score })
        .collect();
    frame.chat = chat;
    // Rockets launched this tick, and blasts: the newest records, back to
    // those launched longer ago than any rocket flies.
    let oldest = tick.0.wrapping_sub(rate.hz().saturating_mul(10));
    for r in rocket_log.0.iter().rev().take_while(|r| arena_sim::tick_after(r.launched_tick, oldest)) {
        if r.launched_tick == tick.0 {
            let launch = r.launch;
            frame.rockets.push(DemoRocket {
                owner: r.owner,
                origin: launch.origin,
                dir: launch.dir,
                cmd_tick: launch.tick,
            });
        }
        if let Some(b) = r.blast.as_ref().filter(|b| b.tick == tick.0) {
            frame.blasts.push(DemoBlast { owner: r.owner, point: b.point });
        }
    }
    frame.rockets.reverse();
    frame.blasts.reverse();
    let Some(open) = recorder.open.as_mut() else { return };
    let hz = rate.hz().max(1);
    let keyframe = tick.0.wrapping_sub(open.first_tick) % hz == 0;
    // The items when a pickup or a respawn changed them, and at each
    // keyframe (where a seek starts).
    if keyframe || recorder.items.as_deref() != Some(items.slots.as_slice()) {
        frame.items = Some(items.slots.clone());
        recorder.items = Some(items.slots.clone());
    }
    if keyframe {
        frame.keyframe = Some(
            ran.iter()
                .map(|(player, sim, _, score, prefs)| KeyPlayer {
                    info: recorder.known.get(&player.id).cloned().unwrap_or(DemoPlayerInfo {
                        id: player.id,
                        name: String::new(),
                        bot: player.is_bot(),
                    }),
                    state: sim.0,
                    frags: score.frags,
                    deaths: score.deaths,
                    view_delay_ms: view_delay_ms(&round_trips, &server, player, *prefs),
                })
                .collect(),
        );
    }
    // A frame that starts a chunk is coded on its own.
    if open.writer.buffered_bytes() == 0 {
        recorder.codec.reset();
    }
    let bytes = recorder.codec.encode(&frame);
    if let Err(e) = open.writer.push(tick.0, &bytes) {
        error!("recording stops: {}: {e}", open.path.display());
        recorder.failed = true;
        recorder.finish(to.keep);
        return;
    }
    open.frames += 1;
}

/// How far behind the present a player's client draws the others:
/// its round trip and its interpolation delay, milliseconds.
fn view_delay_ms(
    round_trips: &crate::vocabulary::RoundTrips,
    server: &RenetServer,
    player: &ServerPlayer,
    prefs: Option<&ClientPrefs>,
) -> u16 {
    let Some(client) = player.client_id else { return 0 };
    let rtt_ms = round_trips.of(client, server) * 1000.0;
    let interp = prefs.map_or(0.0, |p| f64::from(p.0.interp_ms));
    (rtt_ms + interp).round().clamp(0.0, f64::from(u16::MAX)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::Frag;
    use arena_protocol::modes::{Mode, Side};
    use arena_sim::HitZone;
    use bevy::time::TimeUpdateStrategy;

    /// A server App recording into a fresh folder named after `name`, on
    /// fixed frames of one tick each (no wall clock): the App, the folder,
    /// and the tick rate.
    fn recording_server(name: &str, config: crate::ServerConfig) -> (App, std::path::PathBuf, u32) {
        let dir = std::env::temp_dir().join(format!("arena-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = crate::ServerConfig {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            record_dir: Some(dir.clone()),
            ..config
        };
        let mut app = App::new();
        app.add_plugins(MinimalPlugins.set(bevy::app::ScheduleRunnerPlugin::run_once()));
        crate::add_server(&mut app, &config).unwrap();
        let hz = config.tick_hz;
        app.insert_resource(TimeUpdateStrategy::ManualDuration(std::time::Duration::from_secs_f64(
            1.0 / f64::from(hz),
        )));
        (app, dir, hz)
    }

    /// Stops the server (which finishes its file) and verifies the demo it
    /// wrote; the folder is removed.
    fn verify_recorded(app: App, dir: &std::path::Path) -> arena_replay::VerifyReport {
        drop(app);
        let demo = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "demo"));
        let report = arena_replay::verify_file(&demo.expect("a demo")).unwrap();
        std::fs::remove_dir_all(dir).ok();
        report
    }

    /// A team deathmatch with friendly fire, recorded: a frag on a
    /// teammate takes one off its killer (as Quake scores it), and the
    /// demo's replay must count it the same way, or `arena demo verify`
    /// calls a faithful recording wrong.
    #[test]
    fn a_friendly_fire_team_kill_verifies_in_the_recorded_demo() {
        let config = crate::ServerConfig {
            mode: Mode::Tdm,
            friendly_fire: true,
            bots: 4,
            bot_seed: Some(7),
            ..Default::default()
        };
        let (mut app, dir, hz) = recording_server("teamkill", config);
        let run = |app: &mut App, seconds: u32| {
            for _ in 0..seconds * hz {
                app.update();
            }
        };
        run(&mut app, 3);
        let score = |app: &mut App, id: PlayerId| {
            let mut q = app.world_mut().query::<(&ServerPlayer, &Score)>();
            q.iter(app.world()).find(|(p, _)| p.id == id).map_or(0, |(_, s)| s.frags)
        };
        let team = |app: &App, team: arena_protocol::modes::Team| -> Vec<(PlayerId, Entity)> {
            let roster = app.world().resource::<Roster>();
            roster.players.iter().filter(|(_, e)| e.side == Side::Team(team)).map(|(id, e)| (*id, e.entity)).collect()
        };
        use arena_protocol::modes::Team::{Blue, Red};
        let (red, blue) = (team(&app, Red), team(&app, Blue));
        assert!(red.len() >= 2 && !blue.is_empty(), "teams: {red:?} {blue:?}");
        // A red bot kills a red bot: one off its killer.
        let before = score(&mut app, red[0].0);
        app.world_mut().write_message(Frag { killer: red[0].0, victim: red[1].0, zone: HitZone::Body });
        app.update();
        assert_eq!(score(&mut app, red[0].0), before - 1, "a team kill costs its killer a frag");
        run(&mut app, 2);
        // A blue bot kills a red bot waiting to switch to blue at its death:
        // the kill was of an enemy (one more), though the victim is blue by
        // the end of the tick, when the frame is recorded.
        let (killer, (victim, victim_entity)) = (blue[0].0, red[1]);
        let tick = app.world().resource::<ServerTick>().0;
        app.world_mut().entity_mut(victim_entity).insert((
            crate::vocabulary::SideSwitch(Side::Team(Blue)),
            crate::vocabulary::Dead { respawn_tick: tick + 64 },
        ));
        let before = score(&mut app, killer);
        app.world_mut().write_message(Frag { killer, victim, zone: HitZone::Head });
        app.update();
        assert_eq!(score(&mut app, killer), before + 1, "an enemy's kill counts one");
        assert_eq!(app.world().resource::<Roster>().side(victim), Side::Team(Blue), "the switch was made");
        run(&mut app, 3);
        let report = verify_recorded(app, &dir);
        assert!(report.ok && report.keyframes >= 5, "{report:?}");
    }

    /// A match over, its results showing: a fall, a life forfeited to
    /// watch or a rocket still in flight kills, and the score stands (the
    /// server counts nothing while the results show). The demo must say so,
    /// or its replay counts a death and a frag the server never did (the
    /// soak's red CI: "recorded (9, 4), replayed (8, 5)").
    #[test]
    fn a_frag_after_the_match_ended_is_recorded_as_not_counted() {
        let config = crate::ServerConfig { bots: 3, bot_seed: Some(11), ..Default::default() };
        let (mut app, dir, hz) = recording_server("overfrag", config);
        let run = |app: &mut App, ticks: u32| {
            for _ in 0..ticks {
                app.update();
            }
        };
        run(&mut app, 2 * hz);
        let scores = |app: &mut App| -> Vec<(PlayerId, i16, u16)> {
            let mut q = app.world_mut().query::<(&ServerPlayer, &Score)>();
            let mut all: Vec<_> = q.iter(app.world()).map(|(p, s)| (p.id, s.frags, s.deaths)).collect();
            all.sort();
            all
        };
        // The time is up: the match ends at the next tick.
        let now = app.world().resource::<ServerTick>().0;
        app.world_mut().resource_mut::<MatchState>().phase_ends_tick = now;
        app.update();
        assert!(app.world().resource::<MatchState>().is_over());
        let stood = scores(&mut app);
        let (a, b) = (stood[0].0, stood[1].0);
        app.world_mut().write_message(Frag { killer: a, victim: a, zone: HitZone::Body });
        app.world_mut().write_message(Frag { killer: a, victim: b, zone: HitZone::Head });
        app.update();
        assert_eq!(scores(&mut app), stood, "the results stand");
        // Keyframes while the results show, then the file is finished.
        run(&mut app, 2 * hz);
        assert!(app.world().resource::<MatchState>().is_over(), "still the same match's results");
        let report = verify_recorded(app, &dir);
        assert!(report.ok && report.keyframes >= 4, "{report:?}");
    }

    #[test]
    fn names_sort_by_age() {
        assert_eq!(time_stamp(0), "19700101-000000");
        assert_eq!(time_stamp(1_795_000_000), "20261118-110640");
        assert_eq!(time_stamp(951_782_400), "20000229-000000");
    }

    #[test]
    fn only_arenas_own_old_demos_are_deleted() {
        let dir = std::env::temp_dir().join(format!("arena-prune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["arena-1.demo", "arena-2.demo", "arena-3.demo", "mine.demo", "arena-0.txt"] {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        prune(&dir, 2);
        let mut left: Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["arena-0.txt", "arena-2.demo", "arena-3.demo", "mine.demo"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
