//! Pickups as a player sees and hears them: our own, predicted (their
//! sound once, at the tick the prediction first took them, and never again
//! for that item until it has come back), judged against the server's word
//! (granted, or undone when a snapshot says someone else had it first or
//! the server saw no touch); everyone else's, heard at the item when a
//! snapshot first lists it taken; and the figures an experiment reads.

use arena_sim::{ItemKind, PlayerId, TickRate, tick_after, tick_diff};
use bevy::prelude::*;

use crate::prediction::{PredictedEvents, Prediction};
use crate::render_clock::ServerClock;
use crate::vocabulary::{ClientWorld, ItemTable, Roster, SessionState};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<PickupStats>().add_message::<PickupSound>().add_message::<ItemTaken>();
}

/// A pickup to be heard (the view plays it): ours at once, another's at the item.
#[derive(Message, Debug, Clone, Copy)]
pub struct PickupSound {
    pub item: usize,
    pub kind: ItemKind,
    pub at: Vec3,
    pub own: bool,
}

/// A snapshot listed an item taken that was not (for the feed and the log).
#[derive(Message, Debug, Clone, Copy)]
pub struct ItemTaken {
    pub item: usize,
    pub kind: ItemKind,
    pub by: PlayerId,
}

/// One of our predicted pickups, until the server's word on it.
#[derive(Debug, Clone, Copy)]
pub struct PredictedPickup {
    pub item: usize,
    pub tick: u32,
    /// When it was predicted (real time, seconds).
    pub at_s: f64,
}

/// How our pickups went: predicted, granted, undone (and how long each
/// undone one showed), granted without being predicted, and our pickup
/// sounds (two for one item within [`SAME_PICKUP_S`] of server time are one
/// pickup's sound played twice: an item cannot be taken twice so soon).
#[derive(Resource, Debug, Default, Clone)]
pub struct PickupStats {
    pub predicted: u64,
    pub granted: u64,
    pub undone: u64,
    pub undo_ms: Vec<f64>,
    pub unpredicted_grants: u64,
    pub own_sounds: u64,
    pub sounds_twice: u64,
    /// Those not judged yet.
    pub pending: Vec<PredictedPickup>,
    /// Our sounds: (item, the server tick of the pickup).
    played: Vec<(usize, u32)>,
    /// The map the items above are of (a new map forgets them).
    map: Option<String>,
    /// Others' pickups to be heard when their drawn bodies get there (at
    /// the render time): (server tick, sound).
    later: Vec<(u32, PickupSound)>,
    /// The items as the snapshot before the newest listed them.
    seen: Vec<arena_sim::ItemSlot>,
}

/// Server time within which two pickups of one item are one, seconds: far
/// more than a prediction and the server's grant can be apart, far less
/// than the shortest respawn (25 s).
pub(crate) const SAME_PICKUP_S: f32 = 2.0;
/// How long our pickup sounds are remembered, seconds: past the longest
/// respawn (120 s), so the list stays short.
const SOUNDS_KEPT_S: f32 = 130.0;
/// Most undo times kept (the newest): a session's list stays bounded.
const MAX_UNDO_TIMES: usize = 4096;
/// Most others' pickup sounds waiting for their drawn time (a map has at most 64 items).
const MAX_LATER_SOUNDS: usize = 64;

/// Others' pickups heard when the render time reaches them (those of a
/// clock that has not started yet: at once).
pub(crate) fn release_sounds(
    clock: Res<ServerClock>,
    mut stats: ResMut<PickupStats>,
    mut sounds: MessageWriter<PickupSound>,
) {
    if stats.later.is_empty() {
        return;
    }
    let started = clock.started();
    let render_tick = clock.render_tick;
    stats.later.retain(|(tick, sound)| {
        let due = !started || render_tick >= f64::from(*tick);
        if due {
            sounds.write(*sound);
        }
        !due
    });
}

impl PickupStats {
    /// Notes one of our pickup sounds, for the pickup at server tick `tick`
    /// (a second for the same pickup is counted, not hidden: the callers
    /// make sure there is none).
    fn play(&mut self, item: usize, tick: u32, rate: TickRate) {
        let again = self.heard(item, tick, rate);
        let keep = rate.ticks_in(SOUNDS_KEPT_S) as i32;
        self.played.retain(|(_, t)| tick_diff(tick, *t).abs() < keep);
        self.played.push((item, tick));
        self.own_sounds += 1;
        self.sounds_twice += u64::from(again);
    }

    /// Whether one of our sounds for `item` was for a pickup within
    /// [`SAME_PICKUP_S`] of `tick`.
    fn heard(&self, item: usize, tick: u32, rate: TickRate) -> bool {
        let window = rate.ticks_in(SAME_PICKUP_S) as i32;
        self.played.iter().any(|(i, t)| *i == item && tick_diff(tick, *t).abs() <= window)
    }
}

/// Our pickups, the first (and only) time a tick is predicted: heard at once.
pub(crate) fn note_predicted(
    mut events: MessageReader<PredictedEvents>,
    world: Res<ClientWorld>,
    roster: Res<Roster>,
    time: Res<Time<Real>>,
    mut stats: ResMut<PickupStats>,
    mut sounds: MessageWriter<PickupSound>,
) {
    let now_s = time.elapsed_secs_f64();
    for PredictedEvents { tick, events } in events.read() {
        let Some(item) = events.picked else { continue };
        let Some(def) = world.map().items.get(item) else { continue };
        stats.predicted += 1;
        stats.pending.push(PredictedPickup { item, tick: *tick, at_s: now_s });
        // Taken again by a later prediction after a replay let it go: heard
        // already, not again.
        if !stats.heard(item, *tick, roster.tick_rate()) {
            stats.play(item, *tick, roster.tick_rate());
            sounds.write(PickupSound { item, kind: def.kind, at: def.pos, own: true });
        }
    }
}

/// After each snapshot: our predicted pickups judged (granted: the server
/// lists the item taken by us at that tick; undone: it lists someone else,
/// or ran that tick without a touch), and every item newly listed taken
/// heard and told.
pub(crate) fn judge_pickups(
    items: Res<ItemTable>,
    prediction: Res<Prediction>,
    roster: Res<Roster>,
    world: Res<ClientWorld>,
    time: Res<Time<Real>>,
    mut stats: ResMut<PickupStats>,
    (mut sounds, mut taken): (MessageWriter<PickupSound>, MessageWriter<ItemTaken>),
) {
    if !items.is_changed() {
        return;
    }
    let map = world.map();
    if items.slots.len() != map.items.len() {
        return;
    }
    let now_s = time.elapsed_secs_f64();
    let (Some(me), ack) = (roster.local_id, prediction.last_ack) else { return };
    let stats = &mut *stats;
    if stats.map.as_deref() != Some(map.name.as_str()) {
        // Another map: nothing judged or seen of the last one's items.
        stats.map = Some(map.name.clone());
        stats.pending.clear();
        stats.seen.clear();
        stats.later.clear();
    }
    let rate = roster.tick_rate();
    let same = rate.ticks_in(SAME_PICKUP_S) as i32;
    stats.pending.retain(|p| {
        let Some(slot) = items.slots.get(p.item) else { return false };
        // Ours: taken by us at the tick predicted (or near it: a command the
        // server ran as a repeat of the one before).
        let ours = slot.taken.is_some_and(|t| t.by == me && tick_diff(t.tick, p.tick).abs() <= same);
        // Someone else's, and not back by the tick we took it at.
        let back = map.items.get(p.item).is_some_and(|def| items.there_at(p.item, def.kind, p.tick, rate));
        let theirs = slot.taken.is_some_and(|t| t.by != me) && !back;
        let run = ack.is_some_and(|ack| !tick_after(p.tick, ack));
        if ours {
            stats.granted += 1;
            false
        } else if theirs || run {
            stats.undone += 1;
            if stats.undo_ms.len() >= MAX_UNDO_TIMES {
                stats.undo_ms.remove(0);
            }
            stats.undo_ms.push((now_s - p.at_s) * 1000.0);
            false
        } else {
            true
        }
    });
    let before = std::mem::replace(&mut stats.seen, items.slots.clone());
    if before.len() != items.slots.len() {
        // A new map or the first snapshot: nothing was seen taken.
        return;
    }
    for (i, (old, new)) in before.iter().zip(&items.slots).enumerate() {
        let Some(t) = new.taken.filter(|t| old.taken != Some(*t)) else { continue };
        let def = map.items[i];
        taken.write(ItemTaken { item: i, kind: def.kind, by: t.by });
        if def.kind.announced() {
            info!("{} took the {}", roster.name(t.by), def.kind.name());
        }
        if t.by != me {
            // Heard when the taker's drawn body gets there, the render
            // time's delay after the server's tick.
            if stats.later.len() < MAX_LATER_SOUNDS {
                stats.later.push((t.tick, PickupSound { item: i, kind: def.kind, at: def.pos, own: false }));
            }
        } else if !stats.heard(i, t.tick, rate) {
            // Granted, not predicted (prediction off, or a touch this client
            // did not foresee): heard now, once.
            stats.unpredicted_grants += 1;
            stats.play(i, t.tick, rate);
            sounds.write(PickupSound { item: i, kind: def.kind, at: def.pos, own: true });
        }
    }
}
