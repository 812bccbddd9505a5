//! The fuzz targets: each takes bytes, never panics on any of them, and
//! asserts what must hold of its result. The network pipelines (datagrams
//! and renet packets through the real transports) are in `network.rs`.

use arbitrary::{Arbitrary, Unstructured};
use arena_client::ClockSync;
use arena_client::interpolation::History;
use arena_protocol::command_packet::CommandPacket;
use arena_protocol::messages::state_is_sane;
use arena_protocol::names::{
    MAX_NAME_CHARS, USER_DATA_BYTES, clean_name, is_invisible, name_from_user_data, refuse_name, unique_name,
};
use arena_protocol::rocket::{BlastInfo, RocketBlast, RocketLaunch};
use arena_protocol::snapshot::{self, Baseline, Feedback, Frame, OwnState, RemoteState};
use arena_protocol::{ToClient, ToServer, decode, encode};
use arena_server::{CommandBuffer, RewindBounds, choose_tested_tick, click_wait_ticks, render_time_tolerance_ticks};
use arena_sim::cmd::MAX_PITCH_RAD;
use arena_sim::rocket::{self, Launch};
use arena_sim::{
    ArenaWorld, Buttons, Click, Hitbox, MapDef, PlayerId, PlayerState, UserCmd, Weapon, step_player, tick_dt_s,
};
use glam::Vec3;

use crate::network;
pub use crate::target::Target;

/// Every target, by name.
pub fn all() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(DecodeToServer),
        Box::new(DecodeToClient),
        Box::new(SnapshotBits),
        Box::new(CommandBits),
        Box::new(QueryRequests::default()),
        Box::new(QueryReplies),
        Box::new(Sanitize),
        Box::new(Intake),
        Box::new(StepPlayer::new()),
        Box::new(RenderTime),
        Box::new(ClockSyncTarget),
        Box::new(InterpolationHistory),
        Box::new(Names),
        Box::new(ConfigFile),
        Box::new(Rockets),
        Box::new(Poses),
        Box::new(DemoFiles),
        Box::new(KillCamMessage),
        Box::new(crate::master::MasterReceives::default()),
        Box::new(crate::master::ServerGetInfo::default()),
        Box::new(crate::master::MasterReplies::default()),
        Box::new(crate::nat::RouterAnswers),
        Box::new(crate::nat::ReachMessages::default()),
        Box::new(network::Datagrams::new(network::Side::Server)),
        Box::new(network::Datagrams::new(network::Side::Client)),
        Box::new(network::Payloads::new(network::Side::Server)),
        Box::new(network::Payloads::new(network::Side::Client)),
    ]
}

fn f32_any(u: &mut Unstructured) -> f32 {
    f32::arbitrary(u).unwrap_or(0.0)
}

/// An arbitrary command, before sanitising.
pub fn any_cmd(u: &mut Unstructured) -> UserCmd {
    UserCmd {
        tick: u32::arbitrary(u).unwrap_or(0),
        forward: f32_any(u),
        right: f32_any(u),
        yaw: f32_any(u),
        pitch: f32_any(u),
        buttons: Buttons(u8::arbitrary(u).unwrap_or(0)),
        render_tick: f64::arbitrary(u).unwrap_or(0.0),
        click: if bool::arbitrary(u).unwrap_or(false) {
            Some(Click { fraction: f32_any(u), yaw: f32_any(u), pitch: f32_any(u) })
        } else {
            None
        },
        drawn_between: <Option<(u32, u32)>>::arbitrary(u).unwrap_or(None),
    }
}

/// An arbitrary player state (floats of any bits).
pub fn any_state(u: &mut Unstructured) -> PlayerState {
    let v = |u: &mut Unstructured| Vec3::new(f32_any(u), f32_any(u), f32_any(u));
    PlayerState {
        pos: v(u),
        vel: v(u),
        yaw: f32_any(u),
        pitch: f32_any(u),
        on_ground: bool::arbitrary(u).unwrap_or(true),
        crouched: bool::arbitrary(u).unwrap_or(false),
        jump_held: bool::arbitrary(u).unwrap_or(false),
        step_phase: f32_any(u),
        alive: bool::arbitrary(u).unwrap_or(true),
        health: u8::arbitrary(u).unwrap_or(100),
        ammo: u8::arbitrary(u).unwrap_or(30),
        weapon: if bool::arbitrary(u).unwrap_or(false) { Weapon::Rocket } else { Weapon::Rifle },
        fire_cooldown_s: f32_any(u),
        reload_s: f32_any(u),
        fire_held: bool::arbitrary(u).unwrap_or(false),
        reload_held: bool::arbitrary(u).unwrap_or(false),
        spawn_count: u8::arbitrary(u).unwrap_or(0),
        protected_s: f32_any(u),
        twist: f32_any(u),
        landing: f32_any(u),
    }
}

/// A state the network could deliver to the client (one that passes
/// [`state_is_sane`]): arbitrary, pulled into bounds when it is not.
fn sane_state(u: &mut Unstructured) -> PlayerState {
    let mut s = any_state(u);
    if !state_is_sane(&s) {
        let squash = |x: f32, max: f32| if x.is_finite() { x.clamp(-max, max) } else { 0.0 };
        s.pos = Vec3::new(squash(s.pos.x, 200.0), squash(s.pos.y, 200.0), squash(s.pos.z, 200.0));
        s.vel = Vec3::new(squash(s.vel.x, 100.0), squash(s.vel.y, 100.0), squash(s.vel.z, 100.0));
        for v in
            [&mut s.yaw, &mut s.pitch, &mut s.step_phase, &mut s.fire_cooldown_s, &mut s.reload_s, &mut s.protected_s]
        {
            *v = squash(*v, 10.0);
        }
    }
    s
}

struct DecodeToServer;

impl Target for DecodeToServer {
    fn name(&self) -> &'static str {
        "decode_to_server"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let cmds = (0..6).map(|t| UserCmd { tick: 1000 + t, forward: 1.0, yaw: 0.3, ..Default::default() }).collect();
        [
            ToServer::Commands(CommandPacket { snapshot_ack: Some(990), cmds }.encode()),
            ToServer::Settings(arena_protocol::ClientSettings {
                lag_compensation: true,
                interp_ms: 31,
                projectile_compensation: true,
                kill_cam: true,
            }),
            ToServer::SkipKillCam,
        ]
        .iter()
        .filter_map(|m| encode(m).ok())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(message) = decode::<ToServer>(input) else { return };
        if message.validate().is_err() {
            return;
        }
        // What decodes encodes again, and that decodes to the same message
        // (compared as bytes: NaN is not equal to itself).
        let again = encode(&message).expect("a decoded message encodes");
        let twice = decode::<ToServer>(&again).expect("an encoded message decodes");
        assert_eq!(encode(&twice).ok(), Some(again));
        if let ToServer::Commands(bytes) = message
            && let Ok(packet) = CommandPacket::decode(&bytes)
        {
            // One reading only: what decodes encodes to bytes that decode the same.
            let canonical = packet.encode();
            let again = CommandPacket::decode(&canonical).expect("a packet made by encode decodes");
            assert_eq!(again.encode(), canonical);
            assert!(packet.cmds.len() <= arena_protocol::MAX_CMDS_PER_PACKET);
            for mut cmd in packet.cmds {
                cmd.sanitize();
            }
        }
    }
}

struct DecodeToClient;

impl Target for DecodeToClient {
    fn name(&self) -> &'static str {
        "decode_to_client"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let (base, next) = frames();
        [
            ToClient::Snapshot(snapshot::encode(&base, &Feedback::default(), None)),
            ToClient::Snapshot(snapshot::encode(&next, &Feedback::default(), Some(Baseline::still(&base)))),
            ToClient::ShotFired { shooter: PlayerId(2), trace: arena_protocol::ShotTrace::new(Vec3::ZERO, Vec3::ONE) },
            ToClient::Welcome(arena_protocol::Welcome {
                your_id: PlayerId(1),
                tick_hz: 64,
                snapshot_hz: 32,
                server_tick: 5,
                map_name: "Foundry".into(),
                players: vec![arena_protocol::PlayerInfo { id: PlayerId(1), name: "Ada".into(), bot: false }],
                range: false,
                subtick: true,
            }),
            ToClient::Range(arena_protocol::RangeReport {
                shots: 4,
                hits: 3,
                miss: Some(arena_protocol::RangeMiss { target: PlayerId(2), right_m: 0.5, up_m: -0.1 }),
            }),
            ToClient::RocketFired { shooter: PlayerId(3), launch: RocketLaunch::new(&seed_launch(), 1.0 / 64.0, 120) },
            ToClient::RocketHit(arena_protocol::HitReport {
                victim: PlayerId(2),
                zone: arena_sim::HitZone::Body,
                damage: 55,
                killed: false,
            }),
            ToClient::RocketExploded {
                owner: PlayerId(3),
                blast: RocketBlast::new(&BlastInfo {
                    tick_low: 1000,
                    point: Vec3::new(4.0, 0.05, 10.0),
                    own_ticks: 12,
                    direct: Some(PlayerId(2)),
                }),
            },
        ]
        .iter()
        .filter_map(|m| encode(m).ok())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(message) = decode::<ToClient>(input) else { return };
        if message.validate().is_ok() {
            match &message {
                ToClient::RocketFired { launch, .. } => fly(&launch.read().launch(1000, 1.0 / 64.0)),
                ToClient::RocketExploded { blast, .. } => {
                    let b = blast.read();
                    assert!(b.point.is_finite());
                    splash_around(b.point, &PlayerState::spawned_at(Vec3::ZERO, 0.0));
                }
                _ => {}
            }
        }
        if message.validate().is_ok()
            && let ToClient::Snapshot(bytes) = &message
        {
            let (base, _) = frames();
            if let Ok((frame, _)) =
                snapshot::decode(bytes, |t| (t == base.tick).then_some(&base), arena_protocol::MAX_PLAYERS, 64)
            {
                assert!(frame.own.iter().all(|(_, s)| state_is_sane(&s.to_state())));
                assert!(frame.others.values().all(|s| state_is_sane(&s.to_state())));
                // What decodes encodes back to a frame that decodes the same.
                let again = snapshot::encode(&frame, &Feedback::default(), None);
                assert_eq!(
                    snapshot::decode(&again, |_| None, arena_protocol::MAX_PLAYERS, 64).map(|(f, _)| f),
                    Ok(frame)
                );
            }
        }
    }
}

/// Snapshot bodies straight from the bits (no bincode envelope to get
/// past), against a baseline whose players are moving, as an older
/// snapshot shows (so deltas carry them forward).
struct SnapshotBits;

impl Target for SnapshotBits {
    fn name(&self) -> &'static str {
        "snapshot_bits"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let (base, next) = frames();
        let feedback = Feedback {
            last_cmd_tick: Some(99),
            newest_cmd_tick: Some(103),
            margin_centiticks: Some(-250),
            sent_after_256ths: 300,
        };
        let full = snapshot::encode(&base, &feedback, None);
        let delta = snapshot::encode(&next, &feedback, Some(Baseline::still(&base)));
        let mut later = next.clone();
        later.tick = 110;
        let carried =
            snapshot::encode(&later, &feedback, Some(Baseline { frame: &next, before: Some(&base), tick_hz: 64 }));
        vec![full, delta, carried]
    }

    fn run(&mut self, input: &[u8]) {
        let (base, next) = frames();
        let baseline_of = |t: u32| [&base, &next].into_iter().find(|f| f.tick == t);
        let Ok((frame, feedback)) = snapshot::decode(input, baseline_of, arena_protocol::MAX_PLAYERS, 64) else {
            return;
        };
        assert!(frame.own.iter().all(|(_, s)| state_is_sane(&s.to_state())));
        assert!(frame.others.values().all(|s| state_is_sane(&s.to_state())));
        assert!(frame.others.len() <= arena_protocol::MAX_PLAYERS);
        assert!(frame.own.is_none_or(|(id, _)| !frame.others.contains_key(&id)));
        let header = snapshot::header(input).expect("a decoded snapshot has a header");
        assert_eq!(header.tick, frame.tick);
        // Whatever decodes is a frame the encoder can say, whole or as a
        // delta against the same baselines, and it reads back the same.
        let baseline = header.baseline.and_then(baseline_of).map(|frame| Baseline {
            frame,
            before: header.before.and_then(baseline_of),
            tick_hz: 64,
        });
        let bytes = snapshot::encode(&frame, &feedback, None);
        let again = snapshot::decode(&bytes, |_| None, arena_protocol::MAX_PLAYERS, 64);
        assert_eq!(again, Ok((frame.clone(), feedback)));
        let bytes = snapshot::encode(&frame, &feedback, baseline);
        let again = snapshot::decode(&bytes, baseline_of, arena_protocol::MAX_PLAYERS, 64);
        assert_eq!(again, Ok((frame, feedback)));
    }
}

/// Command packets straight from the bits.
struct CommandBits;

impl Target for CommandBits {
    fn name(&self) -> &'static str {
        "command_bits"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let cmd = |t: u32, b: Buttons| {
            let mut c = UserCmd {
                tick: 1000 + t,
                forward: 0.7,
                right: -0.2 * t as f32,
                yaw: 0.3 + t as f32 * 0.01,
                pitch: -0.1,
                buttons: b,
                render_tick: f64::from(1000 + t) - 5.5,
                // The newest fires with a click.
                click: (t == 5).then_some(Click { fraction: 0.4, yaw: 0.36, pitch: -0.12 }),
                // Drawn between the usual two, and once between others.
                drawn_between: Some(if t == 3 { (992, 995) } else { (995 + t, 996 + t) }),
            };
            c.quantize();
            c
        };
        vec![
            CommandPacket { snapshot_ack: Some(990), cmds: (0..6).map(|t| cmd(t, Buttons::FIRE)).collect() }.encode(),
            CommandPacket { snapshot_ack: None, cmds: (0..3).map(|t| cmd(t * 3, Buttons::JUMP)).collect() }.encode(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(packet) = CommandPacket::decode(input) else { return };
        assert!(packet.cmds.len() <= arena_protocol::MAX_CMDS_PER_PACKET);
        let canonical = packet.encode();
        let again = CommandPacket::decode(&canonical).expect("a packet made by encode decodes");
        assert_eq!(again.encode(), canonical);
        for mut cmd in packet.cmds {
            // What the grids allow needs no repair but may still be hostile:
            // sanitising leaves it in range.
            cmd.sanitize();
            assert!(cmd.forward.is_finite() && cmd.yaw.is_finite() && cmd.render_tick.is_finite());
            assert!(cmd.click.is_none_or(|c| c.fraction.is_finite() && c.yaw.is_finite() && c.pitch.is_finite()));
        }
    }
}

/// Server queries (A2S) as the server's guard judges them, before netcode
/// sees a byte: whatever comes in, a reply never outgrows the request.
struct QueryRequests {
    guard: arena_server::Guard,
    now_ms: u64,
}

impl Default for QueryRequests {
    fn default() -> Self {
        Self { guard: arena_server::Guard::new(arena_protocol::key::OPEN_KEY, arena_protocol::PROTOCOL_ID), now_ms: 0 }
    }
}

impl Target for QueryRequests {
    fn name(&self) -> &'static str {
        "query_requests"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::query::{QueryKind, Request};
        [QueryKind::Info, QueryKind::Players, QueryKind::Rules]
            .into_iter()
            .flat_map(|kind| [None, Some(-1), Some(0x1234_5678)].map(|challenge| Request { kind, challenge }.encode()))
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::query::Request;
        if let Ok(request) = Request::parse(input) {
            let again = Request::parse(&request.encode()).expect("an encoded request parses");
            assert_eq!(again, request);
        }
        // Time moves on so that the rate limits and challenge periods turn.
        self.now_ms += 7;
        let from = std::net::SocketAddr::from(([192, 0, 2, (self.now_ms % 7) as u8], 27_000));
        let mut datagram = input.to_vec();
        let now = std::time::Duration::from_millis(self.now_ms);
        if let arena_server::Verdict::Reply(reply) = self.guard.judge(from, &mut datagram, now, 0) {
            assert!(reply.len() <= input.len(), "{} bytes answered {} bytes", reply.len(), input.len());
        }
    }
}

/// Server query replies as the LAN browser and `arena servers` read them:
/// whole, or in parts to reassemble.
struct QueryReplies;

impl Target for QueryReplies {
    fn name(&self) -> &'static str {
        "query_replies"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::query::{PlayerEntry, Reply};
        let players = Reply::Players(
            (0..40)
                .map(|i| PlayerEntry { name: format!("Player {i}"), score: i, duration_s: 1.5 * i as f32 })
                .collect(),
        );
        let mut seeds = players.datagrams(7);
        seeds.extend(Reply::Challenge(99).datagrams(0));
        seeds.extend(Reply::Rules(vec![("tick_hz".into(), "64".into())]).datagrams(0));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::query::{Reassembly, Reply};
        if let Ok(reply) = Reply::parse(input) {
            // What parses can be said again, and reads back the same.
            let mut joined = Reassembly::default();
            let parts = reply.datagrams(3);
            let back = parts.iter().filter_map(|d| joined.accept(d)).next_back();
            assert!(matches!(back, Some(Ok(_))), "{reply:?} came back as {back:?}");
        }
        // The input cut in pieces as parts of one reply (or not).
        let mut joined = Reassembly::default();
        for piece in input.chunks(37) {
            let _ = joined.accept(piece);
        }
    }
}

/// Two snapshots' frames, the second moved on from the first.
fn frames() -> (Frame, Frame) {
    let state = |x: f32| arena_sim::quant::snap_state(&PlayerState::spawned_at(Vec3::new(x, 0.0, 2.0), 0.5));
    let base = Frame {
        tick: 100,
        own: Some((PlayerId(0), OwnState::of(&state(1.0)))),
        others: (1..6).map(|i| (PlayerId(i), RemoteState::of(&state(f32::from(i))))).collect(),
    };
    let mut next = base.clone();
    next.tick = 102;
    for s in next.others.values_mut() {
        s.pos[0] += 40;
        s.yaw = s.yaw.wrapping_add(300);
    }
    next.others.remove(&PlayerId(3));
    (base, next)
}

struct Sanitize;

impl Target for Sanitize {
    fn name(&self) -> &'static str {
        "sanitize"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut cmd = any_cmd(&mut u);
        cmd.sanitize();
        assert!(cmd.forward.is_finite() && cmd.right.is_finite() && cmd.yaw.is_finite() && cmd.pitch.is_finite());
        assert!(cmd.forward * cmd.forward + cmd.right * cmd.right <= 1.0 + 1e-4, "{cmd:?}");
        assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&cmd.yaw), "{cmd:?}");
        assert!(cmd.pitch.abs() <= MAX_PITCH_RAD, "{cmd:?}");
        assert!(cmd.render_tick.is_finite() && cmd.render_tick >= 0.0);
        assert_eq!(cmd.buttons.0 & !Buttons::ALL.0, 0);
        if let Some(click) = cmd.click {
            assert!(cmd.held(Buttons::FIRE), "a click only with fire: {cmd:?}");
            assert!((0.0..=arena_sim::cmd::MAX_CLICK_FRACTION).contains(&click.fraction), "{cmd:?}");
            assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&click.yaw), "{cmd:?}");
            assert!(click.pitch.abs() <= MAX_PITCH_RAD, "{cmd:?}");
        }
        let once = cmd;
        assert!(!cmd.sanitize().any(), "sanitising twice changes nothing: {once:?}");
        assert_eq!(once, cmd);
    }
}

/// Offers and takes on a player's command buffer, in any order.
#[derive(Default)]
struct Intake;

impl Target for Intake {
    fn name(&self) -> &'static str {
        "intake"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut buffer = CommandBuffer::default();
        let max_ahead = u.int_in_range(0..=256u32).unwrap_or(64);
        let max_repeats = u.int_in_range(0..=16u32).unwrap_or(6);
        let mut server_tick = u32::arbitrary(&mut u).unwrap_or(0);
        while !u.is_empty() {
            if bool::arbitrary(&mut u).unwrap_or(false) {
                let mut cmd = any_cmd(&mut u);
                cmd.sanitize();
                if bool::arbitrary(&mut u).unwrap_or(true) {
                    // Near the server's tick, where the interesting cases are.
                    let offset = i8::arbitrary(&mut u).unwrap_or(0);
                    cmd.tick = server_tick.wrapping_add_signed(i32::from(offset));
                }
                let since = f32_any(&mut u);
                buffer.offer(cmd, server_tick, since, max_ahead);
            } else {
                server_tick = server_tick.wrapping_add(1);
                if let Some(cmd) = buffer.take(server_tick, max_repeats) {
                    assert_eq!(cmd.tick, server_tick, "the command run is stamped with its tick");
                }
            }
            assert!(buffer.queued() <= max_ahead as usize + 1, "the buffer holds at most the budget");
            let jitter = buffer.arrival_jitter_ticks();
            assert!(jitter.is_finite() && jitter >= 0.0, "jitter {jitter}");
        }
    }
}

struct StepPlayer {
    world: ArenaWorld,
}

impl StepPlayer {
    fn new() -> Self {
        Self { world: ArenaWorld::new(MapDef::foundry()) }
    }
}

impl Target for StepPlayer {
    fn name(&self) -> &'static str {
        "step_player"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut state = sane_state(&mut u);
        // Any state before it: a click blends the two.
        let mut before = sane_state(&mut u);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        for _ in 0..u.int_in_range(1..=8u8).unwrap_or(1) {
            let mut cmd = any_cmd(&mut u);
            cmd.sanitize();
            let (next, events) = step_player(&before, &state, &cmd, &self.world, tick_dt_s(tick_hz));
            if let Some(shot) = events.weapon.shot {
                assert!(shot.origin.is_finite() && shot.dir.is_finite(), "{shot:?}");
            }
            (before, state) = (state, next);
            assert!(state.pos.is_finite() && state.vel.is_finite(), "{state:?}");
        }
    }
}

struct RenderTime;

impl Target for RenderTime {
    fn name(&self) -> &'static str {
        "render_time"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let jitter = f32_any(&mut u);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        let tolerance = render_time_tolerance_ticks(jitter, tick_hz);
        assert!(tolerance.is_finite() && tolerance >= 0.0);
        // A click's wait moves the floor back by at most two ticks, whatever
        // the fraction says.
        let click = Click { fraction: f32_any(&mut u), yaw: 0.0, pitch: 0.0 };
        let wait = click_wait_ticks(bool::arbitrary(&mut u).unwrap_or(true).then_some(click), tick_hz);
        assert!((0.0..=2.0).contains(&wait), "{wait} for {click:?}");
        let oldest = u32::arbitrary(&mut u).unwrap_or(0);
        let span = (oldest, oldest.saturating_add(u.int_in_range(0..=200u32).unwrap_or(80)));
        let bounds = RewindBounds {
            estimate: f64::arbitrary(&mut u).unwrap_or(0.0),
            tolerance,
            frame_allowance: f64::arbitrary(&mut u).unwrap_or(0.0),
            oldest: f64::arbitrary(&mut u).unwrap_or(0.0),
            span,
        };
        let claimed = f64::arbitrary(&mut u).unwrap_or(0.0);
        let chosen = choose_tested_tick(claimed, bounds);
        assert!(chosen.tick >= f64::from(span.0) && chosen.tick <= f64::from(span.1), "{chosen:?} outside {span:?}");
    }
}

struct ClockSyncTarget;

impl Target for ClockSyncTarget {
    fn name(&self) -> &'static str {
        "clock_sync"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut sync = ClockSync::new(u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64));
        let server = u32::arbitrary(&mut u).unwrap_or(0);
        let rtt = std::time::Duration::from_millis(u.int_in_range(0..=10_000u64).unwrap_or(0));
        let mut client_tick = sync.initial_tick(server, rtt);
        while !u.is_empty() {
            let snapshot_tick = u32::arbitrary(&mut u).unwrap_or(0);
            let newest = Option::<u32>::arbitrary(&mut u).unwrap_or(None);
            let margin = Option::<f32>::arbitrary(&mut u).unwrap_or(None);
            let jump = sync.on_feedback(snapshot_tick, newest, margin, client_tick);
            client_tick = client_tick.wrapping_add(jump);
            assert!(jump <= arena_client::MAX_JUMP_TICKS && sync.hold_ticks <= arena_client::MAX_JUMP_TICKS);
            let rate = sync.rate;
            assert!(rate.is_finite() && (rate - 1.0).abs() <= arena_client::MAX_RATE_ADJUST + 1e-9, "{rate}");
            assert!(sync.timestep().as_secs_f64() > 0.0);
        }
    }
}

struct InterpolationHistory;

impl Target for InterpolationHistory {
    fn name(&self) -> &'static str {
        "interp_history"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        let mut history = History::default();
        // The adaptive delay takes what a server's ticks and our clock make
        // of each gap: anything at all from a hostile server.
        let mut delay = arena_client::InterpDelay::default();
        let interval_s = 1.0 / f64::from(tick_hz);
        let max_s = f64::from(arena_protocol::MAX_INTERP_MS) / 1000.0;
        let mut tick = u32::arbitrary(&mut u).unwrap_or(0);
        while !u.is_empty() {
            if u8::arbitrary(&mut u).unwrap_or(0).is_multiple_of(4) {
                let (now_s, need_s) = (f64::arbitrary(&mut u).unwrap_or(0.0), f64::arbitrary(&mut u).unwrap_or(0.0));
                delay.observe(now_s, need_s, interval_s);
                let d = delay.update(now_s, interval_s);
                assert!(d.is_finite() && (0.0..=max_s.max(2.0 * interval_s)).contains(&d), "delay {d}");
            } else if bool::arbitrary(&mut u).unwrap_or(true) {
                tick = tick.wrapping_add_signed(i32::from(i8::arbitrary(&mut u).unwrap_or(1)));
                history.push(tick, sane_state(&mut u), tick_hz);
                assert!(history.entries.len() <= 2 * tick_hz as usize + 2, "bounded: {}", history.entries.len());
            } else {
                let at = f64::arbitrary(&mut u).unwrap_or(0.0);
                if let Some((state, _)) = history.sample(at, tick_hz) {
                    assert!(state.pos.is_finite(), "{state:?} at {at}");
                }
            }
        }
    }
}

struct ConfigFile;

impl Target for ConfigFile {
    fn name(&self) -> &'static str {
        "config_file"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "(name: \"Friday\", bind: \"0.0.0.0:27015\", public_addr: [\"203.0.113.7:27015\"], bots: 4, tick: 64)",
            "(no_subtick: true, max_unlag_ms: 300, password_file: \"/run/secrets/arena\", time_limit_min: 12.5)",
            "(tickrate: 128)",
            "((((((((((((((((((((",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        // The reader refuses more than this before parsing.
        let input = &input[..input.len().min(arena_server::MAX_CONFIG_FILE_BYTES as usize)];
        let _ = arena_server::check_config_file(&String::from_utf8_lossy(input));
    }
}

struct Names;

impl Target for Names {
    fn name(&self) -> &'static str {
        "names"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        ["Ada", "Аda", "Bob (bot)", "\u{202E}evil", "Z\u{0300}\u{0301}\u{0302}", "Ian"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        let name = clean_name(&text);
        assert!(!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS);
        assert!(!name.chars().any(is_invisible), "{name:?}");
        assert_eq!(clean_name(&name), name, "cleaning is idempotent");
        let taken = ["Ada", "Bob", "Player", "Ian 2"];
        let _ = refuse_name(&name, taken.iter().copied());
        let unique = unique_name(&name, taken.iter().copied());
        assert!(unique.chars().count() <= MAX_NAME_CHARS);
        assert!(!taken.iter().any(|t| t.to_lowercase() == unique.to_lowercase()), "{unique}");
        let mut data = [0u8; USER_DATA_BYTES];
        let n = input.len().min(USER_DATA_BYTES);
        data[..n].copy_from_slice(&input[..n]);
        let from_data = name_from_user_data(&data);
        assert_eq!(clean_name(&from_data), from_data);
    }
}

fn seed_launch() -> Launch {
    Launch { origin: Vec3::new(1.0, 1.6, 20.0), dir: Vec3::NEG_Z, tick: 1000, at_s: -0.004 }
}

/// The arena, built once: rockets are tested against its walls.
fn arena() -> &'static ArenaWorld {
    static WORLD: std::sync::OnceLock<ArenaWorld> = std::sync::OnceLock::new();
    WORLD.get_or_init(|| ArenaWorld::new(MapDef::foundry()))
}

/// A rocket from a launch as a client reads one: its flight, its wall, the
/// tick it gets there, a player in its way; every figure finite.
fn fly(launch: &Launch) {
    let dt = 1.0 / 64.0;
    assert!(launch.origin.is_finite() && launch.dir.is_finite() && launch.at_s.is_finite());
    let wall = launch.wall_distance(arena());
    assert!(wall.is_finite() && wall >= 0.0);
    let tick = launch.tick_reaching(wall, dt);
    assert!(arena_sim::tick_diff(tick, launch.tick) >= 0);
    assert!(launch.pos(launch.flown_s(tick, dt)).is_finite());
    let someone = [(PlayerId(1), Hitbox::of(&PlayerState::spawned_at(launch.blast_point(wall), 0.0)))];
    if let Some((_, at)) = rocket::player_hit(launch, PlayerId(0), (0.0, wall), &someone) {
        assert!(at.is_finite() && at <= wall + 1e-3);
    }
}

/// A blast at `point` on `state`: the splash and its kick stay finite and bounded.
fn splash_around(point: Vec3, state: &PlayerState) {
    if let Some(hit) = rocket::splash(arena(), point, &Hitbox::of(state), false, true) {
        assert!(hit.kick.is_finite() && hit.kick.length() <= rocket::KNOCKBACK_MPS + 1e-3);
        assert!((0.0..=1.0).contains(&hit.falloff));
    }
    if let Some((kicked, _)) = rocket::own_splash(arena(), point, state) {
        assert!(!state_is_sane(state) || state_is_sane(&kicked));
    }
}

/// Rockets from hostile bytes: launches and blasts packed by anyone, and
/// the shared flight and splash rules on any launch and any state (a
/// client's own rocket comes from its own, sanitised, command).
struct Rockets;

impl Target for Rockets {
    fn name(&self) -> &'static str {
        "rockets"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let launch_bytes: [u8; 16] = <[u8; 16]>::arbitrary(&mut u).unwrap_or([0; 16]);
        let blast_bytes: [u8; 12] = <[u8; 12]>::arbitrary(&mut u).unwrap_or([0; 12]);
        let near = u32::arbitrary(&mut u).unwrap_or(0);
        let launch = arena_protocol::decode::<RocketLaunch>(&launch_bytes).map(|l| l.read().launch(near, 1.0 / 64.0));
        if let Ok(launch) = launch {
            fly(&launch);
        }
        if let Ok(blast) = arena_protocol::decode::<RocketBlast>(&blast_bytes) {
            let state = sane_state(&mut u);
            splash_around(blast.read().point, &state);
        }
        // A launch from a command: the eye of a sane state along any view.
        let state = sane_state(&mut u);
        let dir = arena_sim::player::view_forward(f32_any(&mut u), f32_any(&mut u));
        if dir.is_finite() {
            let at_s = f32_any(&mut u);
            let at_s = if at_s.is_finite() { at_s.clamp(-1.0 / 64.0, 1.0 / 64.0) } else { 0.0 };
            fly(&Launch { origin: state.eye_pos(), dir, tick: near, at_s });
        }
        let point = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u));
        splash_around(point, &state);
    }
}

/// Poses and hitboxes from any state: a state through the wire's grids for
/// others gives the same bits on a second trip (so the server and a client
/// pose it alike) and a finite pose; hitboxes with any fields (a hostile
/// server's shot result), their blends and rays never panic.
struct Poses;

impl Target for Poses {
    fn name(&self) -> &'static str {
        "poses"
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::snapshot::RemoteState;
        let mut u = Unstructured::new(input);
        let (a, b) = (any_state(&mut u), any_state(&mut u));
        let t = f32_any(&mut u);
        let seen = RemoteState::of(&a).to_state();
        assert_eq!(RemoteState::of(&seen), RemoteState::of(&a), "the wire's grids are stable");
        let parts = Hitbox::of(&seen).parts();
        assert!(parts.iter().all(|c| c.a.is_finite() && c.b.is_finite()), "{seen:?}");
        let blended = Hitbox::of(&a).lerp(&Hitbox::of(&b), t);
        let origin = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u));
        let dir = Vec3::new(f32_any(&mut u), f32_any(&mut u), f32_any(&mut u)).normalize_or_zero();
        for hitbox in [Hitbox::of(&seen), blended] {
            if let Some((d, _)) = hitbox.ray_part(origin, dir, arena_sim::weapon::RANGE_M) {
                assert!(d <= arena_sim::weapon::RANGE_M, "{d}");
            }
            let _ = hitbox.nearest_point(origin);
        }
    }
}

/// Demo files as read from disk: any bytes, and (through the seeds' mutations)
/// real demos damaged anywhere, are opened and every chunk read; an error is
/// fine, a panic or an allocation past the limits is not.
struct DemoFiles;

impl Target for DemoFiles {
    fn name(&self) -> &'static str {
        "demo_files"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        // Real recordings (frames as a server codes them), short and long.
        [3u32, 70, 700]
            .iter()
            .filter_map(|&ticks| arena_protocol::replay::example_demo(ticks, true, |_, _| {}).ok())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::demo::{DemoReader, MAX_CHUNK_BYTES, MAX_FRAME_BYTES};
        use arena_protocol::replay::{Mismatch, ReplayWorld, chunk_frames, world_of};
        /// Player ticks replayed per input: enough to run every path of a
        /// replay on what decoded, few enough for millions of inputs.
        const REPLAY_BUDGET: usize = 48;
        let Ok(reader) = DemoReader::open(input) else { return };
        for i in 0..reader.chunks.len() {
            if let Ok(frames) = reader.read_chunk(i) {
                let bytes: usize = frames.iter().map(|(_, b)| b.len()).sum();
                assert!(bytes <= MAX_CHUNK_BYTES && frames.iter().all(|(_, b)| b.len() <= MAX_FRAME_BYTES));
            }
        }
        let _ = reader.chunk_for(u32::MAX);
        // The frames decoded, and replayed through the shared rules: an
        // error or a mismatch is fine, a panic is not.
        let Ok(world) = world_of(&reader) else { return };
        let mut replay = ReplayWorld::default();
        let mut mismatches: Vec<Mismatch> = Vec::new();
        let mut budget = REPLAY_BUDGET;
        for i in 0..reader.chunks.len() {
            let Ok(frames) = chunk_frames(&reader, i) else { continue };
            for frame in &frames {
                budget = budget.saturating_sub(frame.players.len().max(1));
                if budget == 0 {
                    return;
                }
                replay.apply(frame, &world, 1.0 / 64.0, &mut mismatches);
            }
        }
    }
}

/// The kill-cam message from a hostile server: any bytes decoded as one,
/// checked, and (when it passes) everything the view computes from it:
/// each frame's pose and hitboxes, the eye and view, the gap between the
/// two views, re-encoding within its budget.
struct KillCamMessage;

impl Target for KillCamMessage {
    fn name(&self) -> &'static str {
        "kill_cam"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::kill_cam::{CamFrame, EyeQ, FatalShot, KillCam, PoseQ};
        let h = |x: f32| {
            Hitbox::of(&arena_sim::quant::snap_state(&PlayerState {
                pos: Vec3::new(x, 0.0, 3.0),
                vel: Vec3::new(4.0, 0.0, 0.0),
                alive: true,
                on_ground: true,
                ..Default::default()
            }))
        };
        let cam = |frames: usize, shot: bool| KillCam {
            killer: PlayerId(1),
            victim: PlayerId(2),
            zone: arena_sim::HitZone::Body,
            tick_hz: 64,
            step_ticks: 1,
            frames: (0..frames)
                .map(|i| CamFrame {
                    killer: EyeQ::of(Vec3::new(-9.0, 1.6, i as f32 * 0.02), 0.3, 0.0),
                    victim: PoseQ::of(&h(i as f32 * 0.06)),
                })
                .collect(),
            shot: shot.then(|| FatalShot {
                origin: Vec3::new(-9.0, 1.6, 3.0),
                dir: Vec3::X,
                tested_tick: 500.25,
                server_tick: 512,
                drawn: h(2.0),
                server: h(2.4),
                server_in_cover: false,
            }),
        };
        [cam(1, false), cam(40, true), cam(160, true)]
            .into_iter()
            .filter_map(|c| encode(&ToClient::KillCam(Box::new(c))).ok())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::kill_cam::MAX_KILL_CAM_BYTES;
        let Ok(ToClient::KillCam(cam)) = decode::<ToClient>(input) else { return };
        if cam.validate().is_err() {
            return;
        }
        for f in &cam.frames {
            let victim = f.victim.hitbox();
            assert!(victim.parts().iter().all(|c| c.a.is_finite() && c.b.is_finite()), "{f:?}");
            let eye = f.killer.pos();
            let forward = arena_sim::player::view_forward(f.killer.yaw(), f.killer.pitch());
            assert!(eye.is_finite() && forward.is_finite());
            let _ = victim.ray_part(eye, forward, arena_sim::weapon::RANGE_M);
        }
        if let Some((m, ms)) = cam.gap() {
            assert!(m.is_finite() && ms.is_finite(), "{m} {ms}");
        }
        if let Some(shot) = &cam.shot {
            let _ = shot.drawn.ray_part(shot.origin, shot.dir, arena_sim::weapon::RANGE_M);
            let _ = shot.server.lerp(&shot.drawn, 0.5).parts();
        }
        let again = encode(&ToClient::KillCam(cam)).map(|b| b.len());
        assert!(again.as_ref().is_ok_and(|n| *n <= MAX_KILL_CAM_BYTES), "{again:?}");
    }
}
