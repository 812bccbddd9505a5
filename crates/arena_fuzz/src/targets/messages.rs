//! Fuzz targets of the game's messages on the wire: whatever decodes, each
//! way, encodes again to the same bytes; snapshots and command packets
//! straight from their bits.

use arena_protocol::command_packet::CommandPacket;
use arena_protocol::messages::state_is_sane;
use arena_protocol::modes::{Side, SideChoice, Team};
use arena_protocol::rocket::{BlastInfo, RocketBlast, RocketLaunch};
use arena_protocol::snapshot::{self, Baseline, Feedback, Frame, OwnState, RemoteState};
use arena_protocol::{ToClient, ToServer, decode, encode};
use arena_sim::{Buttons, Click, PlayerId, PlayerState, UserCmd};
use glam::Vec3;

use super::hits::{fly, seed_launch, splash_around};
use crate::target::Target;

/// The server tick the fuzzed command packets are read at (their newest
/// tick comes as its low bits, placed nearest it): near the seeds' ticks.
const FUZZ_SERVER_TICK: u32 = 1000;

pub struct DecodeToServer;

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
                update_rate: 20,
                rate: 25_000,
                voice: true,
            }),
            ToServer::SkipKillCam,
            ToServer::Chat { text: "gg \u{202E}wp".into(), team: false },
            ToServer::ChooseSide(SideChoice::Team(Team::Blue)),
            ToServer::ChooseSide(SideChoice::Spectate),
            ToServer::ChooseSide(SideChoice::Play),
            ToServer::CallVote(arena_protocol::vote::VoteCall::Map("Spire".into())),
            ToServer::CallVote(arena_protocol::vote::VoteCall::Kick(PlayerId(3))),
            ToServer::CallVote(arena_protocol::vote::VoteCall::Mode(arena_protocol::modes::Mode::Duel)),
            ToServer::Vote { yes: true },
            ToServer::WantMap,
            ToServer::MapLoaded { hash: [7; 32] },
            ToServer::Voice(arena_protocol::voice::VoiceFrame { seq: 65535, last: true, opus: vec![0x78, 1, 2, 3] }),
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
        if let ToServer::Chat { text, .. } = &message {
            // What the server would pass on: short, and nothing that steers
            // a reader's screen.
            let cleaned = arena_protocol::chat::clean_chat(text);
            assert!(cleaned.chars().count() <= arena_protocol::chat::MAX_CHAT_CHARS);
            assert!(!cleaned.chars().any(|c| c.is_control() || ('\u{202A}'..='\u{202E}').contains(&c)));
            assert_eq!(arena_protocol::chat::clean_chat(&cleaned), cleaned, "cleaning twice changes nothing");
        }
        if let ToServer::Commands(bytes) = message
            && let Ok(packet) = CommandPacket::decode(&bytes, FUZZ_SERVER_TICK)
        {
            // One reading only: what decodes encodes to bytes that decode the same.
            let canonical = packet.encode();
            let again = CommandPacket::decode(&canonical, FUZZ_SERVER_TICK).expect("a packet made by encode decodes");
            assert_eq!(again.encode(), canonical);
            assert!(packet.cmds.len() <= arena_protocol::MAX_CMDS_PER_PACKET);
            for mut cmd in packet.cmds {
                cmd.sanitize();
            }
        }
    }
}

pub struct DecodeToClient;

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
            ToClient::Chat { from: PlayerId(2), text: "gg wp".into(), team: false },
            ToClient::Voice {
                from: PlayerId(2),
                frame: arena_protocol::voice::VoiceFrame { seq: 7, last: false, opus: vec![0x78, 9, 9] },
            },
            ToClient::ChatRefused(arena_protocol::chat::ChatRefusal::TooFast),
            ToClient::Notice { text: "Ada was kicked by the server's operator".into() },
            ToClient::ChangeMap(arena_protocol::map_transfer::MapId::of("Spire", b"(name: \"Spire\")")),
            ToClient::MapData { tag: 7, offset: 1024, bytes: vec![b'('; 40] },
            ToClient::MapRefused { retry_in_s: 4 },
            ToClient::ModeChanged { mode: arena_protocol::modes::Mode::Tdm },
            ToClient::VoteRefused(arena_protocol::vote::VoteRefusal::TooSoon(42)),
            ToClient::Vote(arena_protocol::vote::VoteStatus {
                number: 2,
                caller: PlayerId(1),
                call: arena_protocol::vote::VoteCall::Restart,
                yes: 2,
                no: 1,
                voters: 4,
                left_ds: 150,
                outcome: arena_protocol::vote::VoteOutcome::Open,
            }),
            ToClient::SideChanged { id: PlayerId(3), side: Side::Team(Team::Blue) },
            ToClient::SideChanged { id: PlayerId(4), side: Side::Waiting },
            ToClient::Refused(arena_protocol::Refusal::Full { spectators: true }),
            ToClient::Match(arena_protocol::MatchInfo {
                number: 3,
                phase: arena_protocol::MatchPhase::Over { winner: None, team: Some(Team::Red) },
                frag_limit: 30,
                seconds_left: 8,
                team_frags: Some([30, 12]),
            }),
            ToClient::Welcome(arena_protocol::Welcome {
                your_id: PlayerId(1),
                tick_hz: 64,
                snapshot_hz: 32,
                server_tick: 5,
                map: arena_protocol::map_transfer::MapId::of("Foundry", arena_sim::map::FOUNDRY_RON.as_bytes()),
                players: vec![arena_protocol::PlayerInfo {
                    id: PlayerId(1),
                    name: "Ada".into(),
                    bot: false,
                    side: Side::Team(Team::Red),
                }],
                range: false,
                subtick: true,
                mode: arena_protocol::modes::Mode::Tdm,
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
            if let Ok((frame, _)) = snapshot::decode(
                bytes,
                |t| (t == base.tick).then_some(&base),
                Some(base.tick),
                arena_protocol::MAX_PLAYERS,
                64,
            ) {
                assert!(frame.own.iter().all(|(_, s)| state_is_sane(&s.to_state())));
                assert!(frame.others.values().all(|s| state_is_sane(&s.to_state())));
                // What decodes encodes back to a frame that decodes the same.
                let again = snapshot::encode(&frame, &Feedback::default(), None);
                assert_eq!(
                    snapshot::decode(&again, |_| None, None, arena_protocol::MAX_PLAYERS, 64).map(|(f, _)| f),
                    Ok(frame)
                );
            }
        }
    }
}

/// Snapshot bodies straight from the bits (no bincode envelope to get
/// past), against a baseline whose players are moving, as an older
/// snapshot shows (so deltas carry them forward).
pub struct SnapshotBits;

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
        let Ok((frame, feedback)) =
            snapshot::decode(input, baseline_of, Some(next.tick), arena_protocol::MAX_PLAYERS, 64)
        else {
            return;
        };
        assert!(frame.own.iter().all(|(_, s)| state_is_sane(&s.to_state())));
        assert!(frame.others.values().all(|s| state_is_sane(&s.to_state())));
        assert!(frame.others.len() <= arena_protocol::MAX_PLAYERS);
        assert!(frame.own.is_none_or(|(id, _)| !frame.others.contains_key(&id)));
        let header = snapshot::header(input, Some(next.tick)).expect("a decoded snapshot has a header");
        assert_eq!(header.tick, frame.tick);
        // Whatever decodes is a frame the encoder can say, whole or as a
        // delta against the same baselines, and it reads back the same.
        let baseline = header.baseline.and_then(baseline_of).map(|frame| Baseline {
            frame,
            before: header.before.and_then(baseline_of),
            tick_hz: 64,
        });
        let bytes = snapshot::encode(&frame, &feedback, None);
        let again = snapshot::decode(&bytes, |_| None, None, arena_protocol::MAX_PLAYERS, 64);
        assert_eq!(again, Ok((frame.clone(), feedback)));
        let bytes = snapshot::encode(&frame, &feedback, baseline);
        let again = snapshot::decode(&bytes, baseline_of, Some(next.tick), arena_protocol::MAX_PLAYERS, 64);
        assert_eq!(again, Ok((frame, feedback)));
    }
}

/// Command packets straight from the bits.
pub struct CommandBits;

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
        let Ok(packet) = CommandPacket::decode(input, FUZZ_SERVER_TICK) else { return };
        assert!(packet.cmds.len() <= arena_protocol::MAX_CMDS_PER_PACKET);
        let canonical = packet.encode();
        let again = CommandPacket::decode(&canonical, FUZZ_SERVER_TICK).expect("a packet made by encode decodes");
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

/// Two snapshots' frames, the second moved on from the first.
fn frames() -> (Frame, Frame) {
    let state = |x: f32| arena_sim::quant::snap_state(&PlayerState::spawned_at(Vec3::new(x, 0.0, 2.0), 0.5));
    let base = Frame {
        tick: 100,
        own: Some((PlayerId(0), OwnState::of(&state(1.0)))),
        others: (1..6).map(|i| (PlayerId(i), RemoteState::of(&state(f32::from(i))))).collect(),
        items: (0..8)
            .map(|i| arena_sim::ItemSlot {
                taken: (i % 3 == 0).then_some(arena_sim::Taken { tick: 40 + i, by: PlayerId(i as u8 % 6) }),
            })
            .collect(),
    };
    let mut next = base.clone();
    // One item taken since, one back.
    next.items[1].taken = Some(arena_sim::Taken { tick: 101, by: PlayerId(2) });
    next.items[3].taken = None;
    next.tick = 102;
    for (id, s) in next.others.iter_mut() {
        // Moved on and turned, on the wire's own grids (a yaw past them
        // would be a baseline no client can hold).
        let turned = PlayerState { yaw: 2.3, ..state(f32::from(id.0)) };
        *s = RemoteState { pos: [s.pos[0] + 40, s.pos[1], s.pos[2]], ..RemoteState::of(&turned) };
    }
    next.others.remove(&PlayerId(3));
    (base, next)
}
