//! `arena lab pickups`: clients run to the map's items through conditioned
//! links, trial after trial. In an uncontested trial one player alone runs
//! over an item; in a contested one two run at it from opposite sides, a
//! tick or two apart. Each client predicts its own pickups by the server's
//! rules; the report says how many of those the server granted, whether
//! both clients and the server ended naming the same winner of each
//! contested item, how the losers' predictions were undone and how long a
//! wrong one showed, and whether any pickup sounded twice.

use arena_client::{ItemTable, LocalInput, NetStats, PickupStats};
use arena_sim::{ArenaWorld, ItemSlot, MapDef, PlayerState};
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{LAB_FRAME_HZ, LabError, LabSettings, frames_for, lab_on, line_clear, percentile};

/// What `arena lab pickups` prints.
#[derive(Debug, Serialize)]
pub struct PickupsReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    pub map: String,
    pub uncontested_trials: usize,
    pub contested_trials: usize,
    /// Over the uncontested trials: the predicted pickups the server granted,
    /// over all predicted.
    pub pickup_agreement: f64,
    pub predicted: u64,
    pub granted: u64,
    /// Over the contested trials: those where both clients and the server
    /// ended naming the same winner: each client's list names the server's,
    /// each client's predicted state holds what the server's does (health,
    /// armour, the quad), only the winner's client took it, and no
    /// prediction of it was left unjudged.
    pub contested_agreement: f64,
    /// Contested losers' predictions undone.
    pub pickups_undone: u64,
    /// How long a wrong prediction showed, milliseconds (95th percentile,
    /// and the largest), from its prediction to the snapshot that undid it.
    pub undo_ms: f64,
    pub undo_ms_max: f64,
    /// The round trip plus two ticks, milliseconds: what `undo_ms` is held to.
    pub undo_bound_ms: f64,
    /// Pickup sounds played twice for one pickup (own sounds, both clients).
    pub sounds_twice: u64,
    /// Our pickups the server granted that no prediction had taken.
    pub unpredicted_grants: u64,
    pub rtt_ms: f64,
    pub frame_hz: f64,
    pub warmup_s: f64,
    /// How long our commands waited at the server before their tick
    /// (the head start the clock sync keeps), milliseconds: a wrong
    /// prediction shows for the round trip and this.
    pub command_hold_ms: f64,
}

/// Where a trial's runners start: `RUN_UP_M` from the item, on open floor.
const RUN_UP_M: f32 = 4.0;
/// How long a runner runs at the item, seconds (4 m from a standstill).
const RUN_S: f64 = 1.0;

/// A start for running at an item from the direction `dir` (unit, level):
/// on floor, with room, and nothing between it and the item.
fn start_towards(world: &ArenaWorld, item: Vec3, dir: Vec3) -> Option<Vec3> {
    let start = item + dir * RUN_UP_M;
    let ground = world.cast_ray(start + Vec3::Y * 1.0, Vec3::NEG_Y, 2.0)?;
    let feet = start + Vec3::Y * (1.0 - ground);
    let knee = Vec3::Y * 0.5;
    let chest = Vec3::Y * 1.4;
    let open = world.player_fits(feet, arena_sim::player::STAND_HEIGHT_M)
        && (feet.y - item.y).abs() < 0.3
        && line_clear(world, feet + knee, item + knee)
        && line_clear(world, feet + chest, item + chest);
    open.then_some(feet)
}

/// Each item with two opposite starts for its runners (the first alone
/// runs the uncontested trials).
fn courses(map: &MapDef) -> Vec<(usize, Vec3, Vec3)> {
    let world = ArenaWorld::new(map.clone());
    map.items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            (0..8).find_map(|k| {
                let a = std::f32::consts::TAU * k as f32 / 8.0;
                let dir = Vec3::new(a.cos(), 0.0, a.sin());
                Some((i, start_towards(&world, item.pos, dir)?, start_towards(&world, item.pos, -dir)?))
            })
        })
        .collect()
}

/// What `client` predicted its player to be after command `tick` (the
/// state it was told, if the server has acknowledged that tick already).
fn predicted_at(client: &App, tick: u32) -> Option<PlayerState> {
    let prediction = client.world().resource::<arena_client::Prediction>();
    if let Some((_, state)) = prediction.states.iter().find(|(t, _)| *t == tick) {
        return Some(*state);
    }
    if prediction.last_ack != Some(tick) {
        return None;
    }
    let world = client.world();
    let mut query = world.try_query_filtered::<&arena_client::NetState, With<arena_client::LocalPlayer>>()?;
    query.iter(world).next().map(|n| n.state)
}

/// Runs `arena lab pickups`.
pub fn pickups(settings: LabSettings, map_name: &str) -> Result<PickupsReport, LabError> {
    settings.validate()?;
    let map = MapDef::built_in(map_name).ok_or_else(|| LabError::Map(map_name.to_string()))?;
    let courses = courses(&map);
    if courses.is_empty() {
        return Err(LabError::Map(format!("{} has no item two players can run at from open floor", map.name)));
    }
    let names = ["Alice", "Bob"];
    let mut lab = lab_on(&settings, &map.name, names)?;
    let rtt_s = f64::from(settings.fake_latency_ms) / 1000.0 + 2.0 * f64::from(settings.fake_jitter_ms) / 1000.0;
    let settle = frames_for(0.4 + rtt_s * 2.0);
    let tick_s = 1.0 / f64::from(settings.tick);
    let trial_s = 2.0 * (0.4 + rtt_s * 2.0) + RUN_S;
    let trials = ((settings.seconds / trial_s).floor() as usize).max(2);
    let (mut uncontested, mut contested, mut agreed_trials) = (0usize, 0usize, 0usize);
    let mut uncontested_stats = (0u64, 0u64);
    let mut contested_undone = 0u64;
    let mut rng = arena_sim::rng::SplitMix64::new(settings.seed ^ 0x1234);
    for trial in 0..trials {
        let (item, from_a, from_b) = courses[trial / 2 % courses.len()];
        let spot = map.items[item].pos;
        let contest = trial % 2 == 1;
        // Everyone back, fresh enough to take anything: the runners at
        // their starts, the one who sits out at the spawn farthest from the
        // item; the item there.
        let parked = map.spawns.iter().map(|s| s.pos).max_by(|a, b| a.distance(spot).total_cmp(&b.distance(spot)));
        for (k, name) in names.iter().enumerate() {
            let runs = k == 0 || contest;
            let at = if runs { [from_a, from_b][k] } else { parked.unwrap_or(from_b) };
            let yaw = arena_sim::yaw_towards(spot - at);
            lab.teleport(name, at, yaw);
            lab.edit_sim(name, |s| *s = PlayerState { health: 50, armour: 0, quad_s: 0.0, ..*s });
            let mut input = lab.clients[k].world_mut().resource_mut::<LocalInput>();
            (input.forward, input.right, input.yaw, input.pitch) = (0.0, 0.0, yaw, 0.0);
        }
        if let Some(mut items) = lab.server.world_mut().get_resource_mut::<arena_server::Items>()
            && let Some(slot) = items.slots.get_mut(item)
        {
            *slot = ItemSlot::default();
        }
        // Until the runners' clients list the item as there.
        let listed = |lab: &crate::harness::LoopbackGame, k: usize| {
            lab.clients[k].world().resource::<ItemTable>().slots.get(item).is_some_and(ItemSlot::available)
        };
        lab.step_until(settle, |lab| (0..2).all(|k| listed(lab, k)));
        lab.step(frames_for(0.2));
        let before: Vec<PickupStats> =
            (0..2).map(|k| lab.clients[k].world().resource::<PickupStats>().clone()).collect();
        // Run: the second runner a tick or two behind (or ahead).
        let lag_frames = if contest { (rng.below(5) as f64 * tick_s * LAB_FRAME_HZ / 2.0).round() as usize } else { 0 };
        for frame in 0..frames_for(RUN_S) {
            for k in 0..2 {
                let starts = if k == 1 { lag_frames } else { 0 };
                let runs = (k == 0 || contest) && frame >= starts;
                lab.clients[k].world_mut().resource_mut::<LocalInput>().forward = if runs { 1.0 } else { 0.0 };
            }
            lab.step(1);
        }
        for k in 0..2 {
            lab.clients[k].world_mut().resource_mut::<LocalInput>().forward = 0.0;
        }
        lab.step(settle);
        let after: Vec<PickupStats> =
            (0..2).map(|k| lab.clients[k].world().resource::<PickupStats>().clone()).collect();
        let server_winner = lab
            .server
            .world()
            .get_resource::<arena_server::Items>()
            .and_then(|items| items.slots.get(item).copied())
            .and_then(|slot| slot.taken)
            .map(|t| t.by);
        if contest {
            contested += 1;
            // Agreed: the server gave it to one of the two; each client's
            // list names that one, each client's own state (as predicted
            // now, with the replays) is the server's in what the items
            // give, the winner's client took it (predicted and granted, or
            // granted and heard) and the loser's holds no pickup of it.
            let ids = [lab.id_of(names[0]), lab.id_of(names[1])];
            let winner = server_winner.and_then(|w| ids.iter().position(|id| *id == Some(w)));
            let named = |k: usize| {
                let table = lab.clients[k].world().resource::<ItemTable>();
                table.slots.get(item).and_then(|s| s.taken).map(|t| t.by)
            };
            let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
            let holds_as_server = |k: usize| {
                let predicted = predicted_at(&lab.clients[k], tick);
                let server = lab.sim(names[k]);
                predicted
                    .zip(server)
                    .is_some_and(|(p, s)| (p.health, p.armour, p.quad_s) == (s.health, s.armour, s.quad_s))
            };
            let took = |k: usize| {
                (after[k].granted - before[k].granted) + (after[k].unpredicted_grants - before[k].unpredicted_grants)
            };
            let settled = (0..2).all(|k| after[k].pending.iter().all(|p| p.item != item));
            let agreed = winner.is_some_and(|w| {
                (0..2).all(|k| named(k) == server_winner && holds_as_server(k) && took(k) == u64::from(k == w))
            });
            agreed_trials += usize::from(agreed && settled);
            contested_undone += (0..2).map(|k| after[k].undone - before[k].undone).sum::<u64>();
        } else {
            uncontested += 1;
            uncontested_stats.0 += after[0].predicted - before[0].predicted;
            uncontested_stats.1 += after[0].granted - before[0].granted;
        }
    }
    let stats: Vec<PickupStats> = (0..2).map(|k| lab.clients[k].world().resource::<PickupStats>().clone()).collect();
    let mut undo: Vec<f64> = stats.iter().flat_map(|s| s.undo_ms.iter().copied()).collect();
    undo.sort_by(f64::total_cmp);
    let net = lab.clients[0].world().resource::<NetStats>();
    let rtt_ms = net.rtt_ms;
    // The mean head start, not `command_margin_ticks` (the worst margin
    // lately: one late command makes that negative, as at 250 ms it was).
    let command_hold_ms = f64::from(net.head_start_ticks.unwrap_or(0.0)) * tick_s * 1000.0;
    Ok(PickupsReport {
        experiment: "pickups",
        map: map.name.clone(),
        uncontested_trials: uncontested,
        contested_trials: contested,
        pickup_agreement: uncontested_stats.1 as f64 / uncontested_stats.0.max(1) as f64,
        predicted: uncontested_stats.0,
        granted: uncontested_stats.1,
        contested_agreement: agreed_trials as f64 / contested.max(1) as f64,
        pickups_undone: contested_undone,
        undo_ms: if undo.is_empty() { 0.0 } else { percentile(&undo, 0.95) },
        undo_ms_max: undo.last().copied().unwrap_or(0.0),
        undo_bound_ms: rtt_ms + 2000.0 * tick_s,
        sounds_twice: stats.iter().map(|s| s.sounds_twice).sum(),
        unpredicted_grants: stats.iter().map(|s| s.unpredicted_grants).sum(),
        rtt_ms,
        command_hold_ms,
        frame_hz: super::setup::LAB_FRAME_HZ,
        warmup_s: super::setup::WARMUP_S,
        settings,
    })
}
