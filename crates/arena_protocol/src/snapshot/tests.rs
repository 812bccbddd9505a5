//! The codec as a whole: frames round trip whole and as deltas, runners cost
//! next to nothing, the field tables hold every value at the edges of their
//! ranges, the layout block over `encode` is the tables', and whatever the
//! decoder accepts from damaged bytes is a frame the encoder sends again.

use super::codec::{read_state, write_state};
use super::fields::{Fields, describe};
use super::model::{Model as ContextModel, Modelled};
use super::state::{REMOTE_VEL_MAX_Q, REMOTE_YAW_BITS};
use super::*;
use crate::range_coder::{RangeIn, RangeOut};
use arena_sim::PlayerId;
use arena_sim::player::PlayerState;
use arena_sim::quant::snap_state;
use arena_sim::rng::SplitMix64;
use std::collections::VecDeque;

/// The newest tick a test client decoded before: near every tick here.
const NEAR: Option<u32> = Some(0);

fn moving(rng: &mut SplitMix64) -> PlayerState {
    snap_state(&PlayerState {
        pos: glam::Vec3::new(rng.range(-30.0, 30.0), rng.range(0.0, 6.0), rng.range(-30.0, 30.0)),
        vel: glam::Vec3::new(rng.range(-7.0, 7.0), rng.range(-10.0, 7.0), rng.range(-7.0, 7.0)),
        yaw: rng.range(-3.0, 3.0),
        pitch: rng.range(-1.0, 1.0),
        on_ground: rng.next_f32() < 0.7,
        crouched: rng.next_f32() < 0.2,
        alive: rng.next_f32() < 0.9,
        health: (rng.next_f32() * 100.0) as u8,
        ammo: (rng.next_f32() * 30.0) as u8,
        fire_cooldown_s: rng.range(-0.015, 0.1),
        reload_s: rng.range(0.0, 1.6),
        step_phase: rng.range(0.0, 2.4),
        protected_s: rng.range(0.0, 1.5),
        spawn_count: rng.below(4) as u8,
        ..PlayerState::default()
    })
}

fn frame(tick: u32, rng: &mut SplitMix64, players: u8) -> Frame {
    Frame {
        tick,
        own: Some((PlayerId(0), OwnState::of(&moving(rng)))),
        others: (1..players).map(|id| (PlayerId(id), RemoteState::of(&moving(rng)))).collect(),
        items: (0..rng.below(12))
            .map(|_| arena_sim::ItemSlot {
                taken: (rng.below(3) == 0).then(|| arena_sim::Taken {
                    tick: tick.wrapping_sub(rng.below(8000) as u32),
                    by: PlayerId(rng.below(usize::from(players.max(1))) as u8),
                }),
            })
            .collect(),
    }
}

#[test]
fn the_own_state_round_trips_exactly() {
    let mut rng = SplitMix64::new(3);
    for _ in 0..1000 {
        let s = moving(&mut rng);
        assert_eq!(OwnState::of(&s).to_state(), s, "a snapped state travels bit for bit");
    }
}

#[test]
fn full_and_delta_snapshots_decode_to_what_was_encoded() {
    let mut rng = SplitMix64::new(5);
    let feedback = Feedback {
        last_cmd_tick: Some(98),
        newest_cmd_tick: Some(101),
        margin_centiticks: Some(-40),
        sent_after_256ths: 3000,
    };
    let a = frame(100, &mut rng, 16);
    let full = encode(&a, &feedback, None);
    assert_eq!(header(&full, NEAR), Ok(Header { tick: 100, baseline: None, before: None }));
    assert_eq!(decode(&full, |_| None, NEAR, 64, 64), Ok((a.clone(), feedback)));
    let mut b = frame(103, &mut rng, 16);
    b.others.remove(&PlayerId(5));
    let delta = encode(&b, &feedback, Some(Baseline::still(&a)));
    assert_eq!(header(&delta, NEAR), Ok(Header { tick: 103, baseline: Some(100), before: None }));
    assert_eq!(decode(&delta, |t| (t == 100).then_some(&a), NEAR, 64, 64), Ok((b.clone(), feedback)));
    assert_eq!(decode(&delta, |_| None, NEAR, 64, 64), Err(SnapshotError::UnknownBaseline(100)));
    // A delta's tick goes as its low 12 bits: a client with no snapshot of
    // its own cannot place it and asks for a whole one.
    assert_eq!(decode(&delta, |t| (t == 100).then_some(&a), None, 64, 64), Err(SnapshotError::UnknownBaseline(103)));
    // With motion from an older snapshot: both are needed.
    let c = frame(107, &mut rng, 16);
    let moving = encode(&c, &feedback, Some(Baseline { frame: &b, before: Some(&a), tick_hz: 64 }));
    assert_eq!(header(&moving, NEAR), Ok(Header { tick: 107, baseline: Some(103), before: Some(100) }));
    let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
    assert_eq!(decode(&moving, kept, NEAR, 64, 64), Ok((c.clone(), feedback)));
    assert_eq!(decode(&moving, |t| (t == 103).then_some(&b), NEAR, 64, 64), Err(SnapshotError::UnknownBaseline(100)));
    // A baseline found under the wrong tick is not used.
    assert_eq!(decode(&moving, |_| Some(&b), NEAR, 64, 64), Err(SnapshotError::UnknownBaseline(100)));
    // Nothing changed and nobody moving: next to nothing sent.
    let same = Frame { tick: 105, ..b.clone() };
    assert!(encode(&same, &Feedback::default(), Some(Baseline::still(&b))).len() <= 13);
}

/// Players running in straight lines at steady speeds and turning at
/// steady rates, at `tick`.
fn runners(tick: u32) -> Frame {
    let mut rng = SplitMix64::new(8);
    Frame {
        tick,
        others: (1..16)
            .map(|id| {
                let (vx, vz) = (rng.below(40) as i32 - 20, rng.below(40) as i32 - 20);
                let turn = rng.below(9) as i32 - 4;
                let s = RemoteState {
                    pos: [vx * tick as i32, 0, vz * tick as i32],
                    yaw: (turn * tick as i32).rem_euclid(1 << REMOTE_YAW_BITS) as u16,
                    flags: RemoteState::ALIVE | RemoteState::ON_GROUND,
                    ..RemoteState::default()
                };
                (PlayerId(id), s)
            })
            .collect(),
        ..Frame::default()
    }
}

#[test]
fn players_running_straight_cost_a_bit_each_however_old_the_baseline() {
    let feedback = Feedback::default();
    let (a, b) = (runners(100), runners(102));
    let first_delta = encode(&b, &feedback, Some(Baseline::still(&a))).len();
    assert!(first_delta > 30, "without motion every runner is news ({first_delta} bytes)");
    for age in [2, 8, 16, 30] {
        let c = runners(102 + age);
        let bytes = encode(&c, &feedback, Some(Baseline { frame: &b, before: Some(&a), tick_hz: 64 }));
        let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
        assert_eq!(decode(&bytes, kept, NEAR, 64, 64).map(|(f, _)| f), Ok(c));
        assert!(bytes.len() <= 10, "{} bytes, {age} ticks on", bytes.len());
    }
}

#[test]
fn the_dead_and_the_respawned_are_not_carried_on() {
    let (a, b) = (runners(100), runners(102));
    let mut c = runners(110);
    // One died where it stood at the baseline; another respawned far away.
    let died = c.others.get_mut(&PlayerId(3)).expect("player 3");
    *died = RemoteState { flags: 0, ..*b.others.get(&PlayerId(3)).expect("listed") };
    let respawned = c.others.get_mut(&PlayerId(4)).expect("player 4");
    respawned.pos = [9000, 0, -9000];
    respawned.spawn_count = 1;
    let bytes = encode(&c, &Feedback::default(), Some(Baseline { frame: &b, before: Some(&a), tick_hz: 64 }));
    let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
    assert_eq!(decode(&bytes, kept, NEAR, 64, 64).map(|(f, _)| f), Ok(c.clone()));
    // And from that baseline on, they are expected to stay put.
    let d = Frame { tick: 114, ..c.clone() };
    let bytes = encode(&d, &Feedback::default(), Some(Baseline { frame: &c, before: Some(&b), tick_hz: 64 }));
    let kept = |t: u32| [&b, &c].into_iter().find(|f| f.tick == t);
    let (decoded, _) = decode(&bytes, kept, NEAR, 64, 64).expect("decodes");
    assert_eq!(*decoded.others.get(&PlayerId(3)).expect("listed"), *c.others.get(&PlayerId(3)).expect("listed"));
    assert_eq!(*decoded.others.get(&PlayerId(4)).expect("listed"), *c.others.get(&PlayerId(4)).expect("listed"));
}

#[test]
fn a_motion_span_out_of_range_is_not_used() {
    let (a, b) = (runners(100), runners(102));
    let too_old = runners(100 - MAX_MOTION_GAP_TICKS - 1);
    for before in [&too_old, &b] {
        let bytes = encode(&b, &Feedback::default(), Some(Baseline { frame: &a, before: Some(before), tick_hz: 64 }));
        assert_eq!(header(&bytes, NEAR).map(|h| h.before), Ok(None));
        assert_eq!(decode(&bytes, |t| (t == 100).then_some(&a), NEAR, 64, 64).map(|(f, _)| f), Ok(b.clone()));
    }
}

#[test]
fn a_deltas_tick_is_placed_nearest_the_newest_decoded_across_the_wrap() {
    let mut rng = SplitMix64::new(31);
    for (base_tick, tick, near) in [
        (u32::MAX - 1, 2, u32::MAX - 1),
        (65_530, 65_540, 65_530),
        (1_000_000, 1_000_004, 1_000_002),
        (4_090, 4_100, 4_094),
        (1_000_000, 1_000_004, 1_000_004 + 2_000),
        (1_000_000, 1_000_004, 1_000_004 - 2_000),
    ] {
        let a = frame(base_tick, &mut rng, 4);
        let b = frame(tick, &mut rng, 4);
        let bytes = encode(&b, &Feedback::default(), Some(Baseline::still(&a)));
        assert_eq!(header(&bytes, Some(near)).map(|h| (h.tick, h.baseline)), Ok((tick, Some(base_tick))));
        let decoded = decode(&bytes, |t| (t == base_tick).then_some(&a), Some(near), 64, 64);
        assert_eq!(decoded.map(|(f, _)| f), Ok(b), "{base_tick} {tick} {near}");
    }
}

#[test]
fn a_player_at_the_pitch_limits_travels_whole_and_as_a_delta() {
    let limit = arena_sim::cmd::MAX_PITCH_RAD;
    let at = |pitch: f32, tick: u32| {
        let s = PlayerState { pitch, ..PlayerState::spawned_at(glam::Vec3::ZERO, 0.0) };
        Frame { tick, own: None, others: [(PlayerId(1), RemoteState::of(&s))].into(), items: vec![] }
    };
    for (from, to) in [(0.0, limit), (0.0, -limit), (limit, -limit), (-limit, limit)] {
        let (a, b) = (at(from, 100), at(to, 102));
        let whole = encode(&b, &Feedback::default(), None);
        assert_eq!(decode(&whole, |_| None, None, 64, 64).map(|(f, _)| f), Ok(b.clone()), "whole, {to}");
        let delta = encode(&b, &Feedback::default(), Some(Baseline::still(&a)));
        let decoded = decode(&delta, |t| (t == 100).then_some(&a), Some(100), 64, 64);
        assert_eq!(decoded.map(|(f, _)| f), Ok(b.clone()), "{from} to {to}");
        let drawn = b.others.get(&PlayerId(1)).expect("listed").to_state().pitch;
        assert!((drawn.abs() - limit).abs() < 0.7f32.to_radians(), "drawn within a step of the limit: {drawn}");
    }
}

#[test]
fn a_baseline_as_old_as_a_deltas_tick_can_say_is_used_and_an_older_one_is_not() {
    let mut rng = SplitMix64::new(8);
    for (age, delta) in [(2047u32, true), (2048, false)] {
        let (a, b) = (frame(1_000, &mut rng, 4), frame(1_000 + age, &mut rng, 4));
        let bytes = encode(&b, &Feedback::default(), Some(Baseline::still(&a)));
        let head = header(&bytes, Some(1_000));
        assert_eq!(head.map(|h| h.baseline.is_some()), Ok(delta), "age {age}");
        let decoded = decode(&bytes, |t| (t == 1_000).then_some(&a), Some(1_000), 64, 64);
        assert_eq!(decoded.map(|(f, _)| f), Ok(b), "age {age}");
    }
}

/// `new` written against `old` (or whole), then read back against `old`.
fn round_trip<S: Modelled + PartialEq + std::fmt::Debug>(new: &S, old: Option<&S>) -> S {
    round_trip_after(new, old, None)
}

/// [`round_trip`], with `before` as the state before the baseline (`old`):
/// the fields that changed between them are coded as changing ones.
fn round_trip_after<S: Modelled + PartialEq + std::fmt::Debug>(new: &S, old: Option<&S>, before: Option<&S>) -> S {
    let mut out = RangeOut::new();
    write_state(&mut ContextModel::trained(), &mut out, new, old, (old, before), (2, 64));
    let bytes = out.finish();
    let mut input = RangeIn::new(&bytes).expect("the encoder's bytes");
    let back = read_state(&mut ContextModel::trained(), &mut input, old, (old, before), (2, 64)).expect("reads back");
    assert_eq!(input.finish(), Ok(()), "nothing left over");
    back
}

/// The two ends of every field's range, and the middle.
fn edges_of_own() -> [OwnState; 3] {
    let (p, v) = (OwnState::max_pos_q() as i32, OwnState::max_vel_q() as i32);
    let low = OwnState {
        pos: [-p; 3],
        vel: [-v; 3],
        yaw: 0,
        pitch: -i16::MAX,
        flags: 0,
        step_phase: 0,
        health: 0,
        ammo: 0,
        fire_cooldown: -i16::MAX,
        reload: 0,
        spawn_count: 0,
        protected: 0,
        twist: -arena_sim::quant::twist_to_q(arena_sim::player::MAX_TWIST_RAD),
        landing: 0,
        armour: 0,
        quad: 0,
    };
    let high = OwnState {
        pos: [p; 3],
        vel: [v; 3],
        yaw: u16::MAX,
        pitch: i16::MAX,
        flags: 63,
        step_phase: u16::MAX,
        health: u8::MAX,
        ammo: u8::MAX,
        fire_cooldown: i16::MAX,
        reload: u16::MAX,
        spawn_count: u8::MAX,
        protected: u16::MAX,
        twist: arena_sim::quant::twist_to_q(arena_sim::player::MAX_TWIST_RAD),
        landing: u8::MAX,
        armour: arena_sim::items::MAX_ARMOUR,
        quad: arena_sim::quant::powerup_to_q(arena_sim::items::MAX_QUAD_S),
    };
    [low, high, OwnState { pos: [1, -1, 0], yaw: 32768, ..low }]
}

fn edges_of_remote() -> [RemoteState; 3] {
    let p = RemoteState::max_pos_q() as i32;
    let low = RemoteState {
        pos: [-p; 3],
        yaw: 0,
        pitch: -RemoteState::max_pitch(),
        flags: 0,
        spawn_count: 0,
        vel: [-REMOTE_VEL_MAX_Q; 2],
        gait: 0,
        twist: -63,
        landing: 0,
    };
    let high = RemoteState {
        pos: [p; 3],
        yaw: (1 << REMOTE_YAW_BITS) - 1,
        pitch: RemoteState::max_pitch(),
        flags: 15,
        spawn_count: u8::MAX,
        vel: [REMOTE_VEL_MAX_Q; 2],
        gait: 63,
        twist: 63,
        landing: 15,
    };
    [low, high, RemoteState { yaw: 1 << (REMOTE_YAW_BITS - 1), ..low }]
}

#[test]
fn the_field_tables_round_trip_at_the_edges_of_every_range() {
    let own = edges_of_own();
    let remote = edges_of_remote();
    for a in &own {
        assert_eq!(&round_trip(a, None), a);
        for b in &own {
            assert_eq!(&round_trip(a, Some(b)), a, "{a:?} against {b:?}");
            for c in &own {
                assert_eq!(&round_trip_after(a, Some(b), Some(c)), a, "{a:?} against {b:?} after {c:?}");
            }
        }
    }
    for a in &remote {
        assert_eq!(&round_trip(a, None), a);
        for b in &remote {
            assert_eq!(&round_trip(a, Some(b)), a, "{a:?} against {b:?}");
            for c in &remote {
                assert_eq!(&round_trip_after(a, Some(b), Some(c)), a, "{a:?} against {b:?} after {c:?}");
            }
        }
    }
    // And any state on the grids, against any other.
    let mut rng = SplitMix64::new(21);
    for _ in 0..2000 {
        let (a, b) = (moving(&mut rng), moving(&mut rng));
        let (oa, ob) = (OwnState::of(&a), OwnState::of(&b));
        assert_eq!(round_trip(&oa, Some(&ob)), oa);
        let (ra, rb) = (RemoteState::of(&a), RemoteState::of(&b));
        assert_eq!(round_trip(&ra, Some(&rb)), ra);
        // Unchanged costs at most a bit a field.
        let mut out = RangeOut::new();
        write_state(&mut ContextModel::trained(), &mut out, &ra, Some(&ra), (None, None), (2, 64));
        assert!(out.finish().len() <= RemoteState::TABLE.len().div_ceil(8));
    }
}

#[test]
fn the_layout_block_over_encode_is_the_field_tables() {
    let source = include_str!("codec.rs");
    let rows = OwnState::TABLE.iter().chain(RemoteState::TABLE).map(describe);
    let missing: Vec<String> = rows.filter(|row| !source.contains(&format!("/// {row}\n"))).collect();
    assert!(missing.is_empty(), "the layout block in codec.rs should have these rows:\n{}", missing.join("\n"));
}

/// Damaged copies of real snapshots: bits flipped, bytes changed, cut or added.
fn damaged(rng: &mut SplitMix64, good: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = good[rng.below(good.len())].clone();
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(3) {
                let bit = rng.below(bytes.len() * 8);
                bytes[bit / 8] ^= 0x80 >> (bit % 8);
            }
        }
        1 => {
            let at = rng.below(bytes.len());
            bytes[at] = rng.next_u64() as u8;
        }
        2 => bytes.truncate(rng.below(bytes.len())),
        _ => bytes.push(rng.next_u64() as u8),
    }
    bytes
}

#[test]
fn what_the_decoder_accepts_from_damaged_bytes_it_sends_again_unchanged() {
    let mut rng = SplitMix64::new(9);
    let feedback = Feedback {
        last_cmd_tick: Some(8),
        newest_cmd_tick: Some(12),
        margin_centiticks: Some(25),
        sent_after_256ths: 77,
    };
    let (a, b, c) = (frame(10, &mut rng, 8), frame(12, &mut rng, 8), frame(15, &mut rng, 8));
    let good = vec![
        encode(&a, &feedback, None),
        encode(&b, &feedback, Some(Baseline::still(&a))),
        encode(&c, &feedback, Some(Baseline { frame: &b, before: Some(&a), tick_hz: 64 })),
    ];
    let kept = |t: u32| [&a, &b].into_iter().find(|f| f.tick == t);
    let (mut accepted, mut rejected) = (0, 0);
    for _ in 0..20_000 {
        let bytes = damaged(&mut rng, &good);
        let Ok((frame, said)) = decode(&bytes, kept, NEAR, 64, 64) else {
            rejected += 1;
            continue;
        };
        accepted += 1;
        let h = header(&bytes, NEAR).expect("a decoded snapshot has a header");
        let baseline =
            h.baseline.and_then(kept).map(|frame| Baseline { frame, before: h.before.and_then(kept), tick_hz: 64 });
        let again = encode(&frame, &said, baseline);
        assert_eq!(decode(&again, kept, NEAR, 64, 64), Ok((frame, said)), "accepted {bytes:?}");
    }
    // Both outcomes are common, so the property is not vacuous. (Range-coded
    // bytes have little redundancy: much damage decodes to another valid
    // snapshot. On the wire netcode's MAC refuses damaged datagrams first.)
    assert!(accepted > 1000 && rejected > 1000, "{accepted} accepted, {rejected} rejected");
}

#[test]
fn acknowledged_baselines_in_a_stream_of_snapshots_decode_in_order() {
    // The server's side (what it sent, what was acknowledged) and the
    // client's (what it decoded) over a stream with every third lost.
    let mut rng = SplitMix64::new(4);
    let mut sent = VecDeque::new();
    let mut acked = Acknowledged::default();
    let mut decoded: Vec<Frame> = Vec::new();
    for tick in (100..300).step_by(2) {
        let f = frame(tick, &mut rng, 6);
        let bytes = encode(&f, &Feedback::default(), acked.baseline(&sent, 64));
        sent.push_back(f.clone());
        if tick % 3 == 0 {
            continue;
        }
        let (got, _) = decode(&bytes, |t| decoded.iter().find(|d| d.tick == t), NEAR, 64, 64).expect("decodes");
        assert_eq!(got, f);
        decoded.push(got);
        // The acknowledgement reaches the server a tick later.
        acked.note(Some(tick));
    }
}

/// A played game's snapshots, as three clients on a lossy link get them:
/// 24 players running, strafing, jumping and turning about Foundry through
/// the shared movement (some dying and coming back), snapshots every other
/// tick, each client acknowledging what it decoded a few ticks later, with
/// some lost. Every byte the encoder sends and the decoder's reading of
/// it, hashed (64-bit FNV-1a).
fn played_game_snapshots() -> (u64, usize) {
    use arena_sim::{ArenaWorld, Buttons, MapDef, UserCmd, step_player};
    const PLAYERS: u8 = 24;
    const HZ: u32 = 64;
    let map = MapDef::foundry();
    let world = ArenaWorld::new(map.clone());
    let mut rng = SplitMix64::new(61);
    let spawn = |rng: &mut SplitMix64| {
        let s = &map.spawns[rng.below(map.spawns.len())];
        PlayerState::spawned_at(s.pos, s.yaw_deg.to_radians())
    };
    let mut players: Vec<(PlayerState, PlayerState)> = (0..PLAYERS)
        .map(|_| {
            let s = spawn(&mut rng);
            (s, s)
        })
        .collect();
    // What each of three viewers (players 0, 7 and 19) was sent, acknowledged and decoded.
    let viewers = [0u8, 7, 19];
    let mut sent: Vec<VecDeque<Frame>> = vec![VecDeque::new(); 3];
    let mut acked: Vec<Acknowledged> = vec![Acknowledged::default(); 3];
    let mut decoded: Vec<Vec<Frame>> = vec![Vec::new(); 3];
    let mut in_flight: Vec<(u32, usize, u32)> = Vec::new();
    let (mut hash, mut bytes_sent) = (0xcbf2_9ce4_8422_2325_u64, 0usize);
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for tick in 1..=(12 * HZ) {
        for (i, (before, now)) in players.iter_mut().enumerate() {
            let seed = (u64::from(tick) / 40) * 131 + i as u64;
            let mut plan = SplitMix64::new(seed);
            let cmd = UserCmd {
                tick,
                forward: plan.range(-1.0, 1.0).clamp(-0.2, 1.0),
                right: plan.range(-1.0, 1.0),
                yaw: now.yaw + plan.range(-0.03, 0.03),
                pitch: plan.range(-0.3, 0.3),
                buttons: if rng.below(50) == 0 { Buttons::JUMP } else { Buttons::default() },
                ..UserCmd::default()
            };
            let (next, _) = step_player(before, now, &cmd, &world, 1.0 / HZ as f32);
            *before = *now;
            *now = snap_state(&next);
            // A death now and then; back a second later elsewhere.
            if now.alive && rng.below(900) == 0 {
                now.alive = false;
                now.health = 0;
            } else if !now.alive && rng.below(64) == 0 {
                let count = now.spawn_count.wrapping_add(1);
                *now = PlayerState { spawn_count: count, ..spawn(&mut rng) };
                *before = *now;
            }
        }
        // Acknowledgements that have arrived.
        in_flight.retain(|(due, v, acked_tick)| {
            if *due <= tick {
                acked[*v].note(Some(*acked_tick));
                false
            } else {
                true
            }
        });
        if tick % 2 != 0 {
            continue;
        }
        for (v, viewer) in viewers.iter().enumerate() {
            let frame = Frame {
                tick,
                own: Some((PlayerId(*viewer), OwnState::of(&players[usize::from(*viewer)].1))),
                others: (0..PLAYERS)
                    .filter(|id| id != viewer)
                    .map(|id| (PlayerId(id), RemoteState::of(&players[usize::from(id)].1)))
                    .collect(),
                items: Vec::new(),
            };
            let feedback = Feedback {
                last_cmd_tick: Some(tick),
                newest_cmd_tick: Some(tick + 2),
                margin_centiticks: Some(rng.below(300) as i16 - 50),
                sent_after_256ths: rng.below(4000) as u16,
            };
            let bytes = encode(&frame, &feedback, acked[v].baseline(&sent[v], HZ));
            eat(&bytes);
            bytes_sent += bytes.len();
            sent[v].push_back(frame.clone());
            while sent[v].len() > 64 {
                sent[v].pop_front();
            }
            if rng.below(10) == 0 {
                continue; // lost
            }
            let newest = decoded[v].last().map(|f| f.tick);
            let (got, said) = decode(&bytes, |t| decoded[v].iter().find(|d| d.tick == t), newest, 64, HZ)
                .expect("every snapshot sent decodes");
            assert_eq!((&got, said), (&frame, feedback));
            decoded[v].push(got);
            if decoded[v].len() > 64 {
                decoded[v].remove(0);
            }
            in_flight.push((tick + 3 + rng.below(3) as u32, v, tick));
        }
    }
    (hash, bytes_sent)
}

/// The bytes on the wire, pinned: a change to how snapshots are coded
/// (faster, or in other storage) must send exactly these (issue 61: the
/// server's cost cut without a change to the wire). A deliberate change of
/// the format changes the figures here with the protocol's version.
#[test]
fn a_played_games_snapshots_are_the_same_bytes() {
    let (hash, bytes) = played_game_snapshots();
    assert_eq!((hash, bytes), (6_700_407_153_327_036_825, 98_879), "the snapshots' bytes changed");
}
