//! Snapshot bytes against the age of their baseline, on a recorded game.
//!
//! A delta snapshot says what changed since the newest snapshot the client
//! acknowledged, which is at least a round trip old: the longer the round
//! trip, the more each player has moved, turned and jumped since, and the
//! more there is to say. This plays the `arena lab bandwidth` game (one
//! client running a loop, the rest server bots fighting) headless for a
//! while, records what the server had after every tick, then codes what that
//! client would be sent 32 times a second against baselines of fixed ages,
//! each with the motion seen over the two ticks before it (as the server
//! does when the client acknowledged both) or with none.
//!
//! `cargo run -p arena_lab --example snapshot_sizes -- [SECONDS] [PLAYERS]`
//! (default 20 s, 16 players). Each run of the game is deterministic for
//! its seeds, so codec changes compare on the same game.
//!
//! `... -- train [SECONDS] [PLAYERS] [SEED]` trains the snapshot model's
//! priors instead: it codes every snapshot of a recorded game against
//! baselines of every age above, with a tallying model, and writes what the
//! tally makes of it to `crates/arena_protocol/src/snapshot/priors.rs`
//! (bot seed 2 by default, so the table above, on seed 1, is measured on a
//! game the priors were not trained on).

use std::collections::BTreeMap;
use std::time::Duration;

use arena_client::{LocalInput, NetcodeSettings};
use arena_lab::experiments::{LAB_FRAME_HZ as FRAME_HZ, run_a_loop};
use arena_lab::harness::LoopbackGame;
use arena_protocol::snapshot::{
    AGE_BUCKETS, Baseline, Feedback, Frame, Model, OwnState, RemoteState, Tally, age_bucket, decode, encode,
    encode_with,
};
use arena_server::{ServerConfig, ServerPlayer, ServerTick, Sim};
use arena_sim::{PlayerId, PlayerState};

/// The recorded server's tick rate (the default).
const TICK_HZ: u32 = arena_sim::DEFAULT_TICK_HZ;
/// Ticks between snapshots (32 a second at 64 Hz).
const SNAPSHOT_EVERY: usize = 2;
const AGES: [usize; 9] = [1, 2, 3, 4, 6, 8, 10, 12, 16];

/// Every player's state after each tick, in tick order, and the client's id.
struct Recording {
    ticks: Vec<(u32, Vec<(PlayerId, PlayerState)>)>,
    viewer: PlayerId,
}

fn record(seconds: f64, players: usize, seed: u64) -> Result<Recording, String> {
    let config = ServerConfig {
        bind: ([127, 0, 0, 1], 0).into(),
        bots: players.saturating_sub(1),
        max_clients: 1,
        bot_seed: Some(seed),
        snapshot_hz: 32,
        ..ServerConfig::default()
    };
    let frame = Duration::from_secs_f64(1.0 / FRAME_HZ);
    let mut lab = LoopbackGame::start(&config, &NetcodeSettings::default(), 1, &["Lab"], frame)?;
    lab.step((2.0 * FRAME_HZ) as usize);
    let viewer = lab
        .player("Lab")
        .and_then(|e| lab.server.world().get::<ServerPlayer>(e))
        .map(|p| p.id)
        .ok_or("the client has no player")?;
    let mut ticks = Vec::new();
    let mut last_tick = None;
    for i in 0..(seconds * FRAME_HZ) as usize {
        // The same loop as `arena lab bandwidth`: run, strafe, turn.
        run_a_loop(&mut lab.clients[0].world_mut().resource_mut::<LocalInput>(), i as f64 / FRAME_HZ);
        lab.step(1);
        let tick = lab.server.world().resource::<ServerTick>().0;
        if last_tick != Some(tick) {
            last_tick = Some(tick);
            let world = lab.server.world_mut();
            let mut query = world.query::<(&ServerPlayer, &Sim)>();
            let mut states: Vec<(PlayerId, PlayerState)> = query.iter(world).map(|(p, s)| (p.id, s.0)).collect();
            states.sort_by_key(|(id, _)| *id);
            ticks.push((tick, states));
        }
    }
    Ok(Recording { ticks, viewer })
}

/// What the client is sent after recorded tick `i` (with or without its own player).
fn frame(rec: &Recording, i: usize, with_own: bool) -> Frame {
    let (tick, states) = &rec.ticks[i];
    let mut frame = Frame { tick: *tick, ..Frame::default() };
    for (id, s) in states {
        if *id == rec.viewer {
            frame.own = with_own.then(|| (*id, OwnState::of(s)));
        } else {
            frame.others.insert(*id, RemoteState::of(s));
        }
    }
    frame
}

/// Mean bytes of the snapshots coded against baselines `age` ticks old.
fn mean_bytes(rec: &Recording, age: usize, motion: bool, with_own: bool) -> Result<f64, String> {
    let frames: BTreeMap<usize, Frame> = (0..rec.ticks.len()).map(|i| (i, frame(rec, i, with_own))).collect();
    let (mut bytes, mut count) = (0usize, 0usize);
    // A snapshot every SNAPSHOT_EVERY ticks; baselines of any age.
    for (i, f) in frames.iter().step_by(SNAPSHOT_EVERY) {
        let (Some(base), Some(before)) = (i.checked_sub(age), i.checked_sub(age + SNAPSHOT_EVERY)) else { continue };
        let (Some(base), Some(before)) = (frames.get(&base), frames.get(&before)) else { continue };
        let baseline = Baseline { frame: base, before: motion.then_some(before), tick_hz: TICK_HZ };
        let feedback = feedback(f);
        let coded = encode(f, &feedback, Some(baseline));
        let kept = |t: u32| [base, before].into_iter().find(|b| b.tick == t);
        if decode(&coded, kept, Some(base.tick), arena_protocol::MAX_PLAYERS, TICK_HZ) != Ok((f.clone(), feedback)) {
            return Err(format!("tick {}: the snapshot did not decode to what was coded", f.tick));
        }
        bytes += coded.len();
        count += 1;
    }
    Ok(bytes as f64 / count.max(1) as f64)
}

/// The feedback every coded snapshot carries here (as a client at rest has).
fn feedback(f: &Frame) -> Feedback {
    Feedback {
        last_cmd_tick: Some(f.tick),
        newest_cmd_tick: Some(f.tick + 2),
        margin_centiticks: Some(150),
        sent_after_256ths: 128,
    }
}

/// Tallies every snapshot of `rec` against baselines of every age, with
/// motion and without, and writes the priors it trains.
fn train(rec: &Recording) -> Result<(), String> {
    let frames: BTreeMap<usize, Frame> = (0..rec.ticks.len()).map(|i| (i, frame(rec, i, true))).collect();
    let mut tallies = vec![Tally::default(); AGE_BUCKETS];
    for age in AGES {
        for motion in [true, false] {
            for (i, f) in frames.iter().step_by(SNAPSHOT_EVERY) {
                let (Some(base), Some(before)) = (i.checked_sub(age), i.checked_sub(age + SNAPSHOT_EVERY)) else {
                    continue;
                };
                let (Some(base), Some(before)) = (frames.get(&base), frames.get(&before)) else { continue };
                let baseline = Baseline { frame: base, before: motion.then_some(before), tick_hz: TICK_HZ };
                let bucket = age_bucket(age as u32);
                let mut model = Model::tallying(std::mem::take(&mut tallies[bucket]));
                encode_with(&mut model, f, &feedback(f), Some(baseline));
                tallies[bucket] = model.into_tally().ok_or("the model lost its tally")?;
            }
        }
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../arena_protocol/src/snapshot/priors.rs");
    std::fs::write(path, Tally::priors_source(&tallies)).map_err(|e| format!("{path}: {e}"))?;
    println!("trained on {} snapshots a baseline age; wrote {path}", frames.len().div_ceil(SNAPSHOT_EVERY));
    for (bucket, tally) in tallies.iter().enumerate() {
        let ages: Vec<usize> = AGES.iter().copied().filter(|a| age_bucket(*a as u32) == bucket).collect();
        let count = (frames.len().div_ceil(SNAPSHOT_EVERY) * ages.len() * 2).max(1) as f64;
        println!(
            "ages {ages:?}: {:.1} bytes a snapshot at even priors, {:.1} at the new ones (without adapting); by what they say:",
            tally.bits_at(&Model::with_priors(&[])) / 8.0 / count,
            tally.bits_at(&Model::with_priors(&tally.priors())) / 8.0 / count,
        );
        let report = tally.report(&Model::with_priors(&tally.priors()));
        println!(
            "  {:.2} bytes with the even bits (ids, ticks, the rest of each mantissa)",
            report.iter().map(|(_, b)| b).sum::<f64>() / 8.0 / count
        );
        for (group, bits) in report.iter().take(12) {
            println!("  {:6.2}  {group}", bits / 8.0 / count);
        }
    }
    Ok(())
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1).peekable();
    let training = args.next_if(|a| a == "train").is_some();
    let seconds: f64 = args.next().map(|s| s.parse().map_err(|e| format!("seconds: {e}"))).transpose()?.unwrap_or(20.0);
    let players: usize = args.next().map(|s| s.parse().map_err(|e| format!("players: {e}"))).transpose()?.unwrap_or(16);
    let seed: u64 = args.next().map(|s| s.parse().map_err(|e| format!("seed: {e}"))).transpose()?.unwrap_or(2);
    if training {
        return train(&record(seconds, players, seed)?);
    }
    let rec = record(seconds, players, 1)?;
    println!("{} ticks recorded, {players} players; mean snapshot bytes by baseline age", rec.ticks.len());
    println!("age ticks  age ms  with motion   own  others  without motion");
    for age in AGES {
        let all = mean_bytes(&rec, age, true, true)?;
        let others = mean_bytes(&rec, age, true, false)?;
        let still = mean_bytes(&rec, age, false, true)?;
        let ms = age as f64 * 1000.0 / 64.0;
        println!("{age:9}  {ms:6.1}  {all:11.1}  {:4.1}  {others:6.1}  {still:14.1}", all - others);
    }
    Ok(())
}
