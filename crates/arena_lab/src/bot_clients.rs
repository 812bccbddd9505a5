//! `arena bots`: headless bot clients. Each bot is a real network client (the
//! same client plugin as the game, with no window) that plays by a simple
//! script, for filling a server, load tests and experiments like the LAN
//! check. At the end it reports what each bot saw.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use arena_client::{
    ClientPlugin, ClientStats, ConnectTo, Drawn, HitConfirmed, KillNotice, LastDisconnect, LocalInput, NetPlayer,
    PredictedEvents, Roster, Session,
};
use arena_sim::Buttons;
use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy::state::app::StatesPlugin;
use serde::Serialize;

/// How often the bot loop updates every bot by default, per second.
pub const FRAMES_PER_S: f64 = 250.0;

#[derive(Clone, Debug)]
pub struct BotsConfig {
    pub server: SocketAddr,
    pub count: usize,
    pub seconds: f64,
    pub name_prefix: String,
    /// The game's password (open: none).
    pub password: arena_protocol::key::Password,
    pub behavior: Behavior,
    /// Leave and join again at random (after 5-40 s in the game, 1-5 s
    /// away), as players do: for soak tests of a server.
    pub churn: bool,
    /// Each bot's link conditioner.
    pub conditions: arena_client::LinkConditions,
    /// Masters to ask for an introduction (hole punching) when the server
    /// stays silent: `host` or `host:port`.
    pub introducers: Vec<String>,
    /// How often every bot is updated, per second ([`FRAMES_PER_S`] by
    /// default): a low rate plays like a slow machine's window.
    pub frames_per_s: f64,
    /// A chat line each bot says once it is in the game (`--say`)...
    pub say: Option<String>,
    /// ...and again every this many seconds (`--say-every-s`; under a
    /// second is over the server's chat limit: for soak tests).
    pub say_every_s: Option<f64>,
    /// Call a vote now and then (a map vote, or a restart) and vote yes on
    /// every vote shown (`--vote`; for soak tests).
    pub vote: bool,
    /// Join to watch (`--spectate`): never in the world.
    pub spectate: bool,
    /// Play for this team (`--team`; team deathmatch), asked for once in the game.
    pub team: Option<arena_protocol::modes::Team>,
    /// Talk this (voice's samples, mono 16 kHz: `--voice-file`) a second
    /// after getting into the game, the push-to-talk key held while it plays.
    pub voice: Option<std::sync::Arc<Vec<i16>>>,
    /// Write what each bot heard to this WAV file (`--voice-out`; the
    /// second bot's and later ones' with their names before `.wav`).
    pub voice_out: Option<std::path::PathBuf>,
}

/// Where bot `index` (called `name`) writes what it heard, given `--voice-out PATH`.
pub fn voice_out_path(path: &std::path::Path, index: usize, name: &str) -> std::path::PathBuf {
    if index == 0 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map_or_else(|| "voice".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-{name}.wav"))
}

/// How long a churning bot stays, and stays away, seconds.
const CHURN_STAY_S: (f32, f32) = (5.0, 40.0);
const CHURN_AWAY_S: (f32, f32) = (1.0, 5.0);

/// How headless bots play.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Behavior {
    /// Wander: run, turn slowly, jump now and then.
    Roam,
    /// Go to about 12 m from the nearest player, face it, and strafe left
    /// and right: a moving target.
    Strafe,
    /// Strafe, and aim at the nearest player and fire when it is in sight.
    Aim,
    /// Stand where it spawned and do nothing: a sitting target.
    Idle,
}

/// What one bot saw, for `--report`.
#[derive(Clone, Debug, Serialize)]
pub struct BotReport {
    pub name: String,
    /// Seconds between being welcomed and the end (or losing the connection).
    pub connected_s: f64,
    /// Seconds from the start to being welcomed the first time.
    pub joined_after_s: Option<f64>,
    /// Whether a master introduced it (hole punching), and the server's
    /// probes that came through.
    pub introduced: bool,
    pub punch_probes: u32,
    /// Whether the master's TURN relay carried the connection (no other
    /// way got through), the relay's address, and the round trip to it.
    pub relayed: bool,
    pub relay: Option<String>,
    pub relay_rtt_ms: Option<f64>,
    /// UDP payload bytes per datagram each way, as the socket saw them
    /// (through a relay: with its 4-byte ChannelData header).
    pub bytes_per_datagram_sent: f64,
    pub bytes_per_datagram_received: f64,
    pub commands_sent: u64,
    pub snapshots_received: u64,
    /// Shots fired, hits the server confirmed, players killed, and deaths.
    pub shots: u64,
    pub hits: u64,
    pub kills: u64,
    pub deaths: u64,
    /// Round-trip time renet measured at the end, milliseconds.
    pub rtt_ms: f64,
    /// Why the connection ended early, if it did.
    pub error: Option<String>,
    /// Times it got into the game (more than one when churning).
    pub sessions: u32,
    /// Chat lines of players it received, and refusals of its own lines.
    pub chat_received: u64,
    pub chat_refused: u64,
    /// Its team at the end (team deathmatch: "red" or "blue"), and whether
    /// it was watching then.
    pub team: Option<String>,
    pub spectator: bool,
    /// Messages it had to drop as bad (snapshots that did not decode among
    /// them), snapshots against a baseline it no longer had, and whole
    /// snapshots received (one per session when all is well).
    pub bad_messages: u64,
    pub unknown_baselines: u64,
    pub full_snapshots: u64,
    /// Ticks whose prediction the server's state contradicted.
    pub mispredictions: u64,
    /// The server's verdicts on our shots.
    pub shot_verdicts: u64,
    /// How far each other player (by name) was drawn moving, metres: what
    /// this client saw of the others (a browser player among them).
    pub seen_moving_m: std::collections::BTreeMap<String, f64>,
    /// Voice frames sent, and frames played (received, recovered), concealed and lost.
    pub voice_frames_sent: u64,
    pub voice_frames_played: u64,
    pub voice_frames_concealed: u64,
    pub voice_frames_lost: u64,
    /// Where what it heard was written (`--voice-out`), or why it was not.
    pub voice_out: Option<String>,
}

/// Where each other player was last drawn, and how far each was drawn moving.
#[derive(Resource, Debug, Default)]
struct SeenMoving {
    last: std::collections::BTreeMap<arena_sim::PlayerId, Vec3>,
    metres: std::collections::BTreeMap<String, f64>,
}

fn see_moving(others: Query<(&NetPlayer, &Drawn)>, roster: Res<Roster>, mut seen: ResMut<SeenMoving>) {
    for (player, drawn) in &others {
        if Some(player.id) == roster.local_id || !drawn.0.alive {
            continue;
        }
        let pos = drawn.0.pos;
        if let Some(last) = seen.last.insert(player.id, pos) {
            // A respawn or a teleport is no walk.
            let step = f64::from(last.distance(pos));
            if step < 2.0
                && let Some(name) = roster.names.get(&player.id)
            {
                *seen.metres.entry(name.clone()).or_default() += step;
            }
        }
    }
}

/// A bot's fight so far, counted from its client's own messages.
#[derive(Resource, Clone, Copy, Debug, Default)]
struct Tally {
    shots: u64,
    verdicts: u64,
    hits: u64,
    kills: u64,
    deaths: u64,
}

fn tally(
    mut predicted: MessageReader<PredictedEvents>,
    mut hits: MessageReader<HitConfirmed>,
    mut kills: MessageReader<KillNotice>,
    mut messages: MessageReader<arena_client::GameMessage>,
    roster: Res<Roster>,
    mut tally: ResMut<Tally>,
) {
    tally.verdicts += messages.read().filter(|m| matches!(m.0, arena_protocol::ToClient::ShotResult(_))).count() as u64;
    // Each tick's events are reported once, however often it is replayed.
    tally.shots += predicted.read().filter(|e| e.events.weapon.shot.is_some()).count() as u64;
    tally.hits += hits.read().count() as u64;
    for kill in kills.read() {
        if Some(kill.victim) == roster.local_id {
            tally.deaths += 1;
        } else if Some(kill.killer) == roster.local_id {
            tally.kills += 1;
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub clients: Vec<BotReport>,
}

struct Bot {
    app: App,
    name: String,
    welcomed_at: Option<Instant>,
    lost_at: Option<Instant>,
    /// Churning: when it leaves, and when it comes back.
    leave_at: Option<Instant>,
    rejoin_at: Option<Instant>,
    sessions: u32,
    /// Churning: connections that ended without the bot leaving on purpose.
    failures: Vec<String>,
    rng: arena_sim::rng::SplitMix64,
    phase: f32,
    steering: Steering,
    /// When it last said its line, and last called a vote; the vote it
    /// last voted in.
    said_at: Option<Instant>,
    called_at: Option<Instant>,
    voted_in: Option<u16>,
}

/// What a soaking bot says and votes (`--say-every-s`, `--vote`): its line
/// again when it is due; a call every 20-40 s (a map, now and then a restart); yes to
/// each vote it is shown, once.
fn soak_talk(bot: &mut Bot, config: &BotsConfig) {
    let now = Instant::now();
    if let (Some(every), Some(text)) = (config.say_every_s, &config.say)
        && bot.said_at.is_none_or(|at| now.duration_since(at).as_secs_f64() >= every)
    {
        bot.said_at = Some(now);
        bot.app.world_mut().write_message(arena_client::SayChat { text: text.clone(), team: false });
    }
    if !config.vote {
        return;
    }
    let due = bot.called_at.is_none_or(|at| now.duration_since(at).as_secs_f32() >= 20.0 + 20.0 * bot.phase.fract());
    if due {
        bot.called_at = Some(now);
        // Maps (a server playing a map file, "Tower" in the soak, sends it
        // to everyone), now and then a restart.
        let call = if bot.rng.below(4) == 0 {
            arena_protocol::vote::VoteCall::Restart
        } else {
            arena_protocol::vote::VoteCall::Map(["Foundry", "Spire", "Yard", "Tower"][bot.rng.below(4)].into())
        };
        bot.app.world_mut().write_message(arena_client::VoteAction::Call(call));
    }
    let open = bot
        .app
        .world()
        .resource::<arena_client::VoteBoard>()
        .shown
        .as_ref()
        .and_then(|v| (v.status.outcome == arena_protocol::vote::VoteOutcome::Open).then_some(v.status.number));
    if let Some(number) = open.filter(|n| bot.voted_in != Some(*n)) {
        bot.voted_in = Some(number);
        bot.app.world_mut().write_message(arena_client::VoteAction::Ballot(true));
    }
}

/// How a fighting bot strafes: which way (+1 or -1), and when it turns.
#[derive(Clone, Copy, Debug)]
pub struct Steering {
    strafe: f32,
    next_turn_s: f32,
}

impl Default for Steering {
    fn default() -> Self {
        Self { strafe: 1.0, next_turn_s: 1.0 }
    }
}

/// A headless network client with the game's client plugin (no window),
/// asked to join `server` as `name`.
pub fn headless_client(server: SocketAddr, name: &str, password: arena_protocol::key::Password) -> App {
    headless_client_via(server, (name, false), password, &[])
}

/// [`headless_client`], asking these masters for an introduction if the
/// server stays silent.
pub fn headless_client_via(
    server: SocketAddr,
    (name, spectate): (&str, bool),
    password: arena_protocol::key::Password,
    introducers: &[String],
) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins.set(ScheduleRunnerPlugin::run_once()), StatesPlugin, ClientPlugin));
    if !introducers.is_empty() {
        app.insert_resource(arena_client::Introducers(introducers.to_vec()));
    }
    app.world_mut().trigger(ConnectTo { addr: server, name: name.to_string(), password, spectate });
    app
}

/// Runs the bots for `config.seconds` and reports on each.
pub fn run(config: &BotsConfig) -> Report {
    let mut bots: Vec<Bot> = (0..config.count)
        .map(|i| {
            let name = format!("{}{}", config.name_prefix, i + 1);
            let mut app = headless_client_via(
                config.server,
                (&name, config.spectate),
                config.password.clone(),
                &config.introducers,
            );
            {
                let mut netcode = app.world_mut().resource_mut::<arena_client::NetcodeSettings>();
                netcode.conditions = config.conditions;
                netcode.conditioner_seed = Some(0xB07 + i as u64);
            }
            app.init_resource::<Tally>().init_resource::<SeenMoving>().add_systems(Update, (tally, see_moving));
            if let Some(samples) = &config.voice {
                app.insert_resource(arena_client::voice::VoiceFile::new(std::sync::Arc::clone(samples), 1.0));
            }
            if config.voice_out.is_some() {
                app.init_resource::<arena_client::voice::VoiceRecording>();
            }
            Bot {
                app,
                name,
                welcomed_at: None,
                lost_at: None,
                leave_at: None,
                rejoin_at: None,
                sessions: 0,
                failures: Vec::new(),
                said_at: None,
                called_at: None,
                voted_in: None,
                rng: arena_sim::rng::SplitMix64::new(0x5EED + i as u64),
                phase: i as f32 * 1.7,
                steering: Steering::default(),
            }
        })
        .collect();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(config.seconds);
    let frame = Duration::from_secs_f64(1.0 / config.frames_per_s.clamp(1.0, 1000.0));
    let mut next_frame = start;
    while Instant::now() < end {
        // Stop early once no bot is in the game or still trying to get in.
        let gave_up = |bot: &Bot| {
            let world = bot.app.world();
            *world.resource::<State<Session>>().get() == Session::Offline
                && world.resource::<LastDisconnect>().0.is_some()
        };
        if !config.churn && bots.iter().all(gave_up) {
            warn!("every bot is out of the game; stopping early");
            break;
        }
        for bot in &mut bots {
            bot.app.update();
            let in_game = *bot.app.world().resource::<State<Session>>().get() == Session::InGame;
            if config.churn {
                churn(bot, config, in_game);
            }
            match (in_game, bot.welcomed_at, bot.lost_at) {
                (true, None, _) => {
                    info!("{} is in the game", bot.name);
                    bot.welcomed_at = Some(Instant::now());
                    if let Some(text) = &config.say {
                        bot.app.world_mut().write_message(arena_client::SayChat { text: text.clone(), team: false });
                    }
                    if let Some(team) = config.team {
                        let choice = arena_protocol::modes::SideChoice::Team(team);
                        bot.app.world_mut().write_message(arena_client::ChooseSide(choice));
                    }
                }
                (false, Some(_), None) if !config.churn => bot.lost_at = Some(Instant::now()),
                _ => {}
            }
            if in_game {
                soak_talk(bot, config);
            }
            if in_game {
                let t = start.elapsed().as_secs_f32() + bot.phase;
                match config.behavior {
                    Behavior::Roam => roam(&mut bot.app.world_mut().resource_mut::<LocalInput>(), t),
                    Behavior::Strafe | Behavior::Aim => {
                        engage(&mut bot.app, &mut bot.steering, t, config.behavior == Behavior::Aim)
                    }
                    Behavior::Idle => {}
                }
            }
        }
        next_frame += frame;
        let now = Instant::now();
        if next_frame > now {
            std::thread::sleep(next_frame - now);
        } else {
            next_frame = now;
        }
    }
    let finished = Instant::now();
    let clients = bots
        .iter_mut()
        .enumerate()
        .map(|(index, bot)| {
            let world = bot.app.world();
            let voice_stats = world.get_resource::<arena_client::voice::VoiceStats>().cloned().unwrap_or_default();
            let voice_counts = arena_client::voice::voice_counts(&voice_stats, world);
            let voice_out = config.voice_out.as_ref().map(|path| {
                let path = voice_out_path(path, index, &bot.name);
                let heard = world.get_resource::<arena_client::voice::VoiceRecording>().map_or(&[][..], |r| &r.0[..]);
                match arena_client::voice::write_wav(&path, heard) {
                    Ok(()) => path.display().to_string(),
                    Err(e) => format!("not written: {e}"),
                }
            });
            let stats = world.resource::<ClientStats>().clone();
            let fight = *world.resource::<Tally>();
            let mispredictions = world.resource::<arena_client::Prediction>().mispredictions;
            let chat = world.resource::<arena_client::ChatLog>();
            let (chat_received, chat_refused) = (chat.received, chat.refused);
            let side = world.resource::<arena_client::Roster>().local_side();
            let (team, spectator) = (side.team().map(|t| t.name().to_string()), side.watches());
            // The client's own measure (renet's times only renet's packets, whose
            // acknowledgements wait: see `arena_protocol::ack_pace`).
            let rtt_ms = world.get_resource::<arena_client::NetStats>().map_or(0.0, |n| n.rtt_ms);
            let error = match (bot.welcomed_at, bot.lost_at) {
                _ if !bot.failures.is_empty() => Some(bot.failures.join("; ")),
                (None, _) => Some(
                    world.resource::<LastDisconnect>().0.clone().unwrap_or_else(|| "never got into the game".into()),
                ),
                (Some(_), Some(_)) => world.resource::<LastDisconnect>().0.clone().or(Some("disconnected".into())),
                _ => None,
            };
            let connected_s =
                bot.welcomed_at.map(|w| bot.lost_at.unwrap_or(finished).duration_since(w).as_secs_f64()).unwrap_or(0.0);
            let introduction = world
                .get_resource::<arena_client::transport::UdpTransport>()
                .and_then(|t| t.introduction().map(|i| (i.started, i.probes)));
            let (introduced, punch_probes) = introduction.unwrap_or((false, 0));
            let transport = world.get_resource::<arena_client::transport::UdpTransport>();
            let via_relay = transport.and_then(|t| t.via_relay());
            let counters = transport.map(|t| t.counters()).unwrap_or_default();
            let per = |bytes: u64, datagrams: u64| if datagrams == 0 { 0.0 } else { bytes as f64 / datagrams as f64 };
            let seen_moving_m = world
                .get_resource::<SeenMoving>()
                .map(|s| s.metres.iter().map(|(name, m)| (name.clone(), (m * 10.0).round() / 10.0)).collect())
                .unwrap_or_default();
            // Leave politely so the server removes the player at once.
            bot.app.world_mut().trigger(arena_client::Disconnect);
            bot.app.update();
            BotReport {
                name: bot.name.clone(),
                connected_s,
                joined_after_s: bot.welcomed_at.map(|w| w.duration_since(start).as_secs_f64()),
                introduced,
                punch_probes,
                relayed: via_relay.is_some(),
                relay: via_relay.map(|v| v.turn.to_string()),
                relay_rtt_ms: via_relay.and_then(|v| v.round_trip).map(|d| d.as_secs_f64() * 1000.0),
                bytes_per_datagram_sent: per(counters.bytes_sent, counters.datagrams_sent),
                bytes_per_datagram_received: per(counters.bytes_received, counters.datagrams_received),
                commands_sent: stats.commands_sent,
                snapshots_received: stats.snapshots_received,
                shots: fight.shots,
                hits: fight.hits,
                kills: fight.kills,
                deaths: fight.deaths,
                rtt_ms,
                error,
                sessions: bot.sessions.max(u32::from(bot.welcomed_at.is_some())),
                chat_received,
                chat_refused,
                team,
                spectator,
                bad_messages: stats.bad_messages,
                unknown_baselines: stats.unknown_baselines,
                full_snapshots: stats.full_snapshots,
                mispredictions,
                shot_verdicts: fight.verdicts,
                seen_moving_m,
                voice_frames_sent: voice_stats.sent_frames,
                voice_frames_played: voice_counts.played + voice_counts.recovered,
                voice_frames_concealed: voice_counts.concealed,
                voice_frames_lost: voice_counts.lost,
                voice_out,
            }
        })
        .collect();
    Report { clients }
}

fn connect_to(config: &BotsConfig, name: &str) -> ConnectTo {
    ConnectTo {
        addr: config.server,
        name: name.to_string(),
        password: config.password.clone(),
        spectate: config.spectate,
    }
}

/// Leaves after a random stay, and comes back after a random absence.
fn churn(bot: &mut Bot, config: &BotsConfig, in_game: bool) {
    let now = Instant::now();
    let random_s =
        |rng: &mut arena_sim::rng::SplitMix64, (lo, hi): (f32, f32)| Duration::from_secs_f32(rng.range(lo, hi));
    match (in_game, bot.leave_at, bot.rejoin_at) {
        // Just got in: decide when to leave.
        (true, None, _) => {
            bot.sessions += 1;
            bot.leave_at = Some(now + random_s(&mut bot.rng, CHURN_STAY_S));
            bot.rejoin_at = None;
        }
        (true, Some(leave), _) if now >= leave => {
            bot.app.world_mut().trigger(arena_client::Disconnect);
            bot.rejoin_at = Some(now + random_s(&mut bot.rng, CHURN_AWAY_S));
        }
        // Out of the game without having left on purpose: a failure.
        (false, Some(_), None) => {
            let reason = bot.app.world().resource::<LastDisconnect>().0.clone();
            bot.failures.push(reason.unwrap_or_else(|| "disconnected".into()));
            bot.leave_at = None;
            bot.rejoin_at = Some(now + random_s(&mut bot.rng, CHURN_AWAY_S));
        }
        (false, _, Some(rejoin)) if now >= rejoin => {
            let session = *bot.app.world().resource::<State<Session>>().get();
            if session == Session::Offline {
                bot.leave_at = None;
                bot.rejoin_at = None;
                let connect = connect_to(config, &bot.name);
                bot.app.world_mut().trigger(connect);
            }
        }
        _ => {}
    }
}

/// A wandering walk: forward with a slowly turning view, an occasional strafe and jump.
fn roam(input: &mut LocalInput, t: f32) {
    input.forward = 1.0;
    input.right = (t * 0.9).sin() * 0.5;
    input.yaw = arena_sim::cmd::wrap_angle(input.yaw + 0.004 * (t * 0.3).sin());
    input.pitch = 0.0;
    input.held = Buttons::default();
    if (t % 3.0) < 0.02 {
        input.press(Buttons::JUMP);
    }
}

/// Keeps about 12 m from the nearest living player, facing it, strafing and
/// changing direction every second or two (standing still on a range); with
/// `fire`, shoots when it has a clear line.
pub fn engage(app: &mut App, steering: &mut Steering, t: f32, fire: bool) {
    const RANGE_M: f32 = 12.0;
    let Some(me) = crate::harness::drawn_self(app) else { return };
    let others = crate::harness::drawn_others(app);
    let world = app.world_mut();
    let eye = me.eye_pos();
    let nearest = others
        .into_iter()
        .map(|(_, s)| s)
        .filter(|s| s.alive)
        .min_by(|a, b| a.pos.distance_squared(me.pos).total_cmp(&b.pos.distance_squared(me.pos)));
    let Some(target) = nearest else {
        roam(&mut world.resource_mut::<LocalInput>(), t);
        return;
    };
    let aim_point = arena_sim::Hitbox::of(&target).body_center();
    let dir = (aim_point - eye).normalize_or_zero();
    let distance = eye.distance(aim_point);
    let (yaw, pitch) = arena_sim::look_at(eye, aim_point);
    let in_sight = world.resource::<arena_client::ClientWorld>().cast_ray(eye, dir, distance).is_none();
    // On a shooting range, a shooter stays on the firing line where it
    // joined, facing the lanes, as a person there would: the targets cross
    // its view, and the lead they need is their speed times the delay.
    let on_range = world.resource::<Roster>().range;
    if t >= steering.next_turn_s {
        steering.strafe = -steering.strafe;
        steering.next_turn_s = t + 1.0 + (t * 7.3).sin().abs();
    }
    let mut input = world.resource_mut::<LocalInput>();
    input.yaw = yaw;
    input.pitch = pitch;
    input.forward = if on_range { 0.0 } else { ((distance - RANGE_M) / 4.0).clamp(-1.0, 1.0) };
    input.right = if on_range { 0.0 } else { steering.strafe };
    input.held = if fire && in_sight { Buttons::FIRE } else { Buttons::default() };
}
