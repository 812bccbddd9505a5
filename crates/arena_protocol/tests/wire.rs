//! The wire's promises, end to end without a network: commands quantised on
//! the client run bit for bit the same on the server; a chain of delta
//! snapshots through a lossy, reordering link rebuilds exactly what the server
//! had; a client that lost its baseline gets a whole snapshot.

use std::collections::{BTreeMap, VecDeque};

use arena_protocol::command_packet::CommandPacket;
use arena_protocol::snapshot::{self, Acknowledged, Feedback, Frame, Header, OwnState, RemoteState, SnapshotError};
use arena_sim::rng::SplitMix64;
use arena_sim::{ArenaWorld, Buttons, MapDef, PlayerId, PlayerState, UserCmd, step_player};

const DT_S: f32 = 1.0 / 64.0;

/// Bit for bit, `-0.0` and `0.0` apart.
fn same_bits(a: &PlayerState, b: &PlayerState) -> bool {
    let f = |s: &PlayerState| {
        [s.pos.x, s.pos.y, s.pos.z, s.vel.x, s.vel.y, s.vel.z, s.yaw, s.pitch, s.step_phase]
            .into_iter()
            .chain([s.fire_cooldown_s, s.reload_s, s.protected_s])
            .map(f32::to_bits)
            .collect::<Vec<u32>>()
    };
    f(a) == f(b) && a == b
}

/// A player's input: it runs, strafes, turns, jumps, crouches, fires and
/// reloads, with analogue values off every grid.
fn raw_input(rng: &mut SplitMix64, tick: u32, yaw: &mut f32, pitch: &mut f32) -> UserCmd {
    *yaw += rng.range(-0.08, 0.08);
    *pitch = (*pitch + rng.range(-0.03, 0.03)).clamp(-1.4, 1.4);
    let mut buttons = Buttons::default();
    for (b, p) in [(Buttons::FIRE, 0.3), (Buttons::JUMP, 0.05), (Buttons::CROUCH, 0.1), (Buttons::RELOAD, 0.02)] {
        if rng.next_f32() < p {
            buttons = buttons.union(b);
        }
    }
    UserCmd {
        tick,
        forward: rng.range(-1.0, 1.0),
        right: rng.range(-1.0, 1.0),
        yaw: *yaw,
        pitch: *pitch,
        buttons,
        render_tick: f64::from(tick) - f64::from(rng.range(2.0, 9.0)),
        // Some presses come with a click: the frame's fraction and view.
        click: (rng.next_f32() < 0.2).then(|| arena_sim::Click {
            fraction: rng.next_f32(),
            yaw: *yaw + rng.range(-0.1, 0.1),
            pitch: (*pitch + rng.range(-0.05, 0.05)).clamp(-1.5, 1.5),
        }),
        // Shots say which snapshots they were drawn between: mostly the
        // usual two, sometimes others.
        drawn_between: (rng.next_f32() < 0.8).then(|| {
            let render = f64::from(tick) - f64::from(rng.range(2.0, 9.0));
            let older = render.floor() as u32 - if rng.next_f32() < 0.7 { 0 } else { rng.range(0.0, 5.0) as u32 };
            (older, older + if rng.next_f32() < 0.7 { 1 } else { 1 + rng.range(0.0, 6.0) as u32 })
        }),
    }
}

#[test]
fn quantised_commands_predict_bit_identical_states_on_both_sides() {
    let world = ArenaWorld::new(MapDef::foundry());
    let spawn = &world.map().spawns[0];
    let start = PlayerState::spawned_at(spawn.pos, spawn.yaw_deg.to_radians());
    let (mut client, mut server) = (start, start);
    let (mut client_before, mut server_before) = (start, start);
    let mut rng = SplitMix64::new(21);
    let (mut yaw, mut pitch) = (start.yaw, 0.0);
    let mut window: VecDeque<UserCmd> = VecDeque::new();
    let mut snapshots = 0;
    for tick in 1..=3000u32 {
        // Client: sample, quantise, predict, send with the last five.
        let mut cmd = raw_input(&mut rng, tick, &mut yaw, &mut pitch);
        cmd.sanitize();
        cmd.quantize();
        let (predicted, predicted_events) = step_player(&client_before, &client, &cmd, &world, DT_S);
        (client_before, client) = (client, predicted);
        window.push_back(cmd);
        if window.len() > 6 {
            window.pop_front();
        }
        let bytes = CommandPacket { snapshot_ack: None, cmds: window.iter().copied().collect() }.encode();

        // Server: decode, sanitise (nothing to repair), run the newest.
        let packet = CommandPacket::decode(&bytes, tick).expect("decodes");
        let mut received = *packet.cmds.last().expect("a command");
        assert!(!received.sanitize().any(), "tick {tick}: the server had to repair {received:?}");
        assert_eq!(received, cmd, "tick {tick}: the command arrived as sent");
        let (run, events) = step_player(&server_before, &server, &received, &world, DT_S);
        (server_before, server) = (server, run);
        assert!(same_bits(&client, &server), "tick {tick}: prediction {client:?} != server {server:?}");
        assert_eq!(predicted_events.weapon.shot, events.weapon.shot, "tick {tick}: the same shot, clicked or not");

        // Every other tick, the server's state goes back in a snapshot and
        // lands bit for bit on what the client predicted.
        if tick % 2 == 0 {
            let frame = Frame { tick, own: Some((PlayerId(0), OwnState::of(&server))), ..Frame::default() };
            let bytes = snapshot::encode(&frame, &Feedback::default(), None);
            let (decoded, _) = snapshot::decode(&bytes, |_| None, None, 64, 64).expect("decodes");
            let own = decoded.own.expect("own state").1.to_state();
            assert!(same_bits(&own, &client), "tick {tick}: snapshot {own:?} != prediction {client:?}");
            snapshots += 1;
        }
    }
    assert_eq!(snapshots, 1500);
    assert!(client.pos.distance(start.pos) > 1.0, "the player went somewhere");
}

/// The server side of the chain: a world of players who run, stop, turn,
/// jump, die, respawn, leave and join.
struct World {
    rng: SplitMix64,
    players: BTreeMap<PlayerId, (PlayerState, glam::Vec3)>,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut world = Self { rng: SplitMix64::new(seed), players: BTreeMap::new() };
        for id in 0..12 {
            world.join(PlayerId(id));
        }
        world
    }

    fn join(&mut self, id: PlayerId) {
        let pos = glam::Vec3::new(self.rng.range(-30.0, 30.0), 0.0, self.rng.range(-30.0, 30.0));
        let s = arena_sim::quant::snap_state(&PlayerState::spawned_at(pos, self.rng.range(-3.0, 3.0)));
        self.players.insert(id, (s, glam::Vec3::ZERO));
    }

    fn step(&mut self) {
        let rng = &mut self.rng;
        for (s, vel) in self.players.values_mut() {
            if rng.next_f32() < 0.05 {
                // A new heading, or a stop.
                *vel = if rng.next_f32() < 0.2 {
                    glam::Vec3::ZERO
                } else {
                    glam::Vec3::new(rng.range(-7.0, 7.0), 0.0, rng.range(-7.0, 7.0))
                };
            }
            s.pos += *vel * DT_S;
            s.pos.y = if rng.next_f32() < 0.02 { rng.range(0.0, 1.2) } else { s.pos.y * 0.9 };
            s.yaw = arena_sim::cmd::wrap_angle(s.yaw + rng.range(-0.05, 0.05));
            s.pitch = (s.pitch + rng.range(-0.02, 0.02)).clamp(-1.5, 1.5);
            s.crouched = rng.next_f32() < 0.1;
            if rng.next_f32() < 0.003 {
                s.alive = !s.alive;
                if s.alive {
                    s.spawn_count = s.spawn_count.wrapping_add(1);
                    s.pos = glam::Vec3::new(rng.range(-30.0, 30.0), 0.0, rng.range(-30.0, 30.0));
                }
            }
            s.ammo = rng.below(30) as u8;
            *s = arena_sim::quant::snap_state(s);
        }
        if self.rng.next_f32() < 0.01 {
            let id = PlayerId(1 + self.rng.below(14) as u8);
            if self.players.remove(&id).is_none() {
                self.join(id);
            }
        }
    }

    fn frame_for(&self, tick: u32, viewer: PlayerId) -> Frame {
        let mut frame = Frame { tick, ..Frame::default() };
        for (id, (s, _)) in &self.players {
            if *id == viewer {
                frame.own = Some((*id, OwnState::of(s)));
            } else {
                frame.others.insert(*id, RemoteState::of(s));
            }
        }
        frame
    }
}

/// A link that loses, delays and so reorders what goes through it.
struct Link<T> {
    rng: SplitMix64,
    loss: f32,
    in_flight: Vec<(u32, T)>,
}

impl<T> Link<T> {
    fn new(seed: u64, loss: f32) -> Self {
        Self { rng: SplitMix64::new(seed), loss, in_flight: Vec::new() }
    }

    fn send(&mut self, now: u32, item: T) {
        if self.rng.next_f32() >= self.loss {
            let delay = 1 + self.rng.below(8) as u32;
            self.in_flight.push((now + delay, item));
        }
    }

    fn arrived(&mut self, now: u32) -> Vec<T> {
        let (due, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.in_flight).into_iter().partition(|(t, _)| *t <= now);
        self.in_flight = later;
        due.into_iter().map(|(_, item)| item).collect()
    }
}

/// The client side of the chain: what it keeps, as the game's client does.
#[derive(Default)]
struct Client {
    frames: VecDeque<Frame>,
    newest: Option<u32>,
    want_full: bool,
    unknown_baselines: u32,
    fulls: u32,
    deltas: u32,
    /// Deltas that carried players on at the speed an older snapshot showed.
    with_motion: u32,
}

impl Client {
    const KEPT: usize = 80;

    fn receive(&mut self, bytes: &[u8]) -> Option<Frame> {
        let frames = &self.frames;
        let near = frames.iter().map(|f| f.tick).max();
        match snapshot::decode(bytes, |t| frames.iter().find(|f| f.tick == t), near, 64, 64) {
            Ok((frame, _)) => {
                match snapshot::header(bytes, near) {
                    Ok(Header { baseline: None, .. }) => self.fulls += 1,
                    Ok(Header { before, .. }) => {
                        self.deltas += 1;
                        self.with_motion += u32::from(before.is_some());
                    }
                    Err(e) => panic!("a decoded snapshot's header: {e}"),
                }
                if !self.frames.iter().any(|f| f.tick == frame.tick) {
                    self.frames.push_back(frame.clone());
                    while self.frames.len() > Self::KEPT {
                        self.frames.pop_front();
                    }
                }
                if self.newest.is_none_or(|n| frame.tick > n) {
                    self.newest = Some(frame.tick);
                    self.want_full = false;
                }
                Some(frame)
            }
            Err(SnapshotError::UnknownBaseline(_)) => {
                self.unknown_baselines += 1;
                self.want_full = true;
                None
            }
            Err(e) => panic!("an honest snapshot did not decode: {e}"),
        }
    }

    fn ack(&self) -> Option<u32> {
        if self.want_full { None } else { self.newest }
    }
}

/// Runs the chain: the server snapshots every other tick against the newest
/// acknowledged baseline it still has; `forget_at` wipes the client's
/// baselines at those ticks (as a client that fell far behind would find).
fn run_chain(seed: u64, loss: f32, forget_at: &[u32]) -> Client {
    let viewer = PlayerId(0);
    let mut world = World::new(seed);
    let mut down: Link<Vec<u8>> = Link::new(seed + 1, loss);
    let mut up: Link<Option<u32>> = Link::new(seed + 2, loss);
    let mut sent: VecDeque<Frame> = VecDeque::new();
    let mut truth: BTreeMap<u32, Frame> = BTreeMap::new();
    let mut acked = Acknowledged::default();
    let mut client = Client::default();
    for tick in 1..=4000u32 {
        world.step();
        if tick % 2 == 0 {
            let frame = world.frame_for(tick, viewer);
            let bytes = snapshot::encode(&frame, &Feedback::default(), acked.baseline(&sent, 64));
            truth.insert(tick, frame.clone());
            sent.push_back(frame);
            while sent.len() > 64 {
                sent.pop_front();
            }
            down.send(tick, bytes);
        }
        if forget_at.contains(&tick) {
            client.frames.clear();
        }
        for bytes in down.arrived(tick) {
            if let Some(frame) = client.receive(&bytes) {
                // Exactly what the server had.
                assert_eq!(Some(&frame), truth.get(&frame.tick), "tick {}", frame.tick);
            }
        }
        up.send(tick, client.ack());
        for ack in up.arrived(tick) {
            // "None" asks for a whole one.
            acked.note(ack);
        }
    }
    client
}

#[test]
fn a_delta_chain_through_loss_and_reordering_rebuilds_what_the_server_had() {
    for (seed, loss) in [(1, 0.0), (2, 0.05), (3, 0.2), (4, 0.5)] {
        let client = run_chain(seed, loss, &[]);
        assert!(client.deltas > 500, "loss {loss}: {} deltas", client.deltas);
        assert!(
            client.with_motion > client.deltas / 2,
            "loss {loss}: {} of {} with motion",
            client.with_motion,
            client.deltas
        );
        assert_eq!(client.unknown_baselines, 0, "loss {loss}: the server deltas only against what the client has");
    }
}

#[test]
fn a_client_without_its_baseline_gets_a_whole_snapshot_and_carries_on() {
    let client = run_chain(7, 0.05, &[1000, 2500]);
    assert!(client.unknown_baselines > 0, "the forgotten baselines were missed");
    // The first snapshot and one after each loss of baselines (at least).
    assert!(client.fulls >= 3, "{} whole snapshots", client.fulls);
    assert!(client.newest.is_some_and(|n| n >= 3980), "snapshots kept coming: newest {:?}", client.newest);
}
