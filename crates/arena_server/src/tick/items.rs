//! The map's items on their timers, and who takes each: after every
//! player's command has run (the order the client predicts in: the step,
//! its own splash, then the pickup), an item a living player touches and
//! may take ([`arena_sim::items::can_grab`]) goes to the one whose command
//! touched it first in server ticks; within one tick, to the one nearest
//! it (then the lower id). The client is never believed about a pickup: it
//! predicts its own by these rules against the items its snapshots list.

use arena_sim::items::grab;
use arena_sim::{ItemSlot, Taken};
use bevy::prelude::*;

use super::match_flow::MatchState;
use crate::vocabulary::{CombatStats, Items, Roster, ServerPlayer, ServerTick, Sim, SimWorld, TickRate};

/// Most items a server keeps (the map check's cap; a snapshot lists no more).
const MAX_ITEMS: usize = arena_sim::map_check::MAX_ITEMS;

/// Items back on their timers, then this tick's pickups.
#[allow(clippy::too_many_arguments)]
pub(crate) fn take_items(
    world: Res<SimWorld>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    match_state: Res<MatchState>,
    mut items: ResMut<Items>,
    roster: Res<Roster>,
    mut players: Query<(&ServerPlayer, &mut Sim)>,
    mut stats: ResMut<CombatStats>,
    // The map and the match the items are of.
    mut of: Local<Option<(String, u32)>>,
) {
    let map = world.map();
    let wanted = if items.on { map.items.len().min(MAX_ITEMS) } else { 0 };
    // A map change starts a new match: the match's number says it.
    let now_of = (map.name.clone(), match_state.number);
    if items.slots.len() != wanted || of.as_ref() != Some(&now_of) {
        // A new map or a new match (Quake 3 puts every item back at a
        // restart): every item there.
        items.slots = vec![ItemSlot::default(); wanted];
        *of = Some(now_of);
    }
    for (slot, def) in items.slots.iter_mut().zip(&map.items) {
        slot.respawn_by(def.kind, tick.0, **rate);
    }
    if items.slots.is_empty() {
        return;
    }
    // Each player touches at most one item a tick (the nearest it may take);
    // each item goes to the nearest of those touching it.
    let mut claims: Vec<(usize, f32, arena_sim::PlayerId)> = players
        .iter()
        .filter_map(|(player, sim)| {
            let i = map.item_touched(&sim.0, |i| items.slots.get(i).is_some_and(ItemSlot::available))?;
            Some((i, map.items[i].pos.distance_squared(sim.pos), player.id))
        })
        .collect();
    claims.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    claims.dedup_by_key(|c| c.0);
    for (i, _, id) in claims {
        let Some((_, mut sim)) = players.iter_mut().find(|(p, _)| p.id == id) else { continue };
        let kind = map.items[i].kind;
        grab(kind, &mut sim.0);
        items.slots[i].taken = Some(Taken { tick: tick.0, by: id });
        stats.pickups += 1;
        info!("{} took the {}", roster.label(id), kind.name());
    }
}
