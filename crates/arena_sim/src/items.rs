//! The map's items and what taking one does (Quake 3's `bg_misc.c`):
//! health, the mega health, armour and the quad damage, each with its amount,
//! its cap and its respawn time; whether a player touches and may take one
//! ([`can_grab`], Quake's `BG_CanItemBeGrabbed`); what armour absorbs and what
//! the quad multiplies; and the state of one item on a server (taken when,
//! by whom), which both ends use, so the client predicts its own pickups by
//! the server's rules.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::player::{MAX_HEALTH, PlayerId, PlayerState};
use crate::time::{TickRate, tick_diff};

/// Most health the mega health lifts a player to.
pub const MEGA_HEALTH_CAP: u8 = 200;
/// Most armour a player carries.
pub const MAX_ARMOUR: u8 = 200;
/// The share of damage armour takes while it lasts (Quake 3's `ARMOR_PROTECTION`).
pub const ARMOUR_PROTECTION: f32 = 2.0 / 3.0;
/// What the quad damage multiplies a player's damage by (Quake 3's `g_quadfactor`).
pub const QUAD_FACTOR: u32 = 3;
/// How long one quad damage lasts, seconds (Quake 3's quantity, 30).
pub const QUAD_S: f32 = 30.0;
/// Longest a quad may run when two are taken back to back, seconds (the timer's grid holds 60).
pub const MAX_QUAD_S: f32 = 60.0;
/// How far from an item's spot (horizontally) a player's centre takes it,
/// metres: the player's radius and the item's half-width (Quake's item box is 15 units).
pub const PICKUP_REACH_M: f32 = crate::player::PLAYER_RADIUS_M + 0.5;
/// How far above the item's spot a body still touches it, metres (the item stands 1 m tall).
pub const PICKUP_HEIGHT_M: f32 = 1.0;

/// What lies on the floor to be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ItemKind {
    /// +25 health, up to 100.
    Health,
    /// +50 health, up to 100.
    LargeHealth,
    /// +100 health, up to 200; above 100 it wears off a point a second.
    MegaHealth,
    /// +50 armour, up to 200.
    YellowArmour,
    /// +100 armour, up to 200.
    RedArmour,
    /// Three times the damage for 30 s.
    QuadDamage,
}

impl ItemKind {
    pub const ALL: [ItemKind; 6] = [
        ItemKind::Health,
        ItemKind::LargeHealth,
        ItemKind::MegaHealth,
        ItemKind::YellowArmour,
        ItemKind::RedArmour,
        ItemKind::QuadDamage,
    ];

    /// Its name, as the HUD, the log and the kill feed say it.
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Health => "Health",
            ItemKind::LargeHealth => "Large Health",
            ItemKind::MegaHealth => "Mega Health",
            ItemKind::YellowArmour => "Yellow Armour",
            ItemKind::RedArmour => "Red Armour",
            ItemKind::QuadDamage => "Quad Damage",
        }
    }

    /// Seconds from being taken to being back (Quake 3's: health 35, armour
    /// 25, the mega 35, a power-up 120).
    pub fn respawn_s(self) -> f32 {
        match self {
            ItemKind::Health | ItemKind::LargeHealth | ItemKind::MegaHealth => 35.0,
            ItemKind::YellowArmour | ItemKind::RedArmour => 25.0,
            ItemKind::QuadDamage => 120.0,
        }
    }

    /// Whether the server names it in the kill feed (the items worth fighting over).
    pub fn announced(self) -> bool {
        matches!(self, ItemKind::MegaHealth | ItemKind::RedArmour | ItemKind::QuadDamage)
    }
}

/// Whether `state` may take an item of `kind` now (Quake 3's
/// `BG_CanItemBeGrabbed`): alive, and not already full of what it gives.
pub fn can_grab(kind: ItemKind, state: &PlayerState) -> bool {
    if !state.alive {
        return false;
    }
    match kind {
        ItemKind::Health | ItemKind::LargeHealth => state.health < MAX_HEALTH,
        ItemKind::MegaHealth => state.health < MEGA_HEALTH_CAP,
        ItemKind::YellowArmour | ItemKind::RedArmour => state.armour < MAX_ARMOUR,
        ItemKind::QuadDamage => true,
    }
}

/// What taking an item of `kind` does to `state` (call [`can_grab`] first).
pub fn grab(kind: ItemKind, state: &mut PlayerState) {
    let add = |value: u8, amount: u8, cap: u8| value.saturating_add(amount).min(cap).max(value);
    match kind {
        ItemKind::Health => state.health = add(state.health, 25, MAX_HEALTH),
        ItemKind::LargeHealth => state.health = add(state.health, 50, MAX_HEALTH),
        ItemKind::MegaHealth => state.health = add(state.health, 100, MEGA_HEALTH_CAP),
        ItemKind::YellowArmour => state.armour = add(state.armour, 50, MAX_ARMOUR),
        ItemKind::RedArmour => state.armour = add(state.armour, 100, MAX_ARMOUR),
        ItemKind::QuadDamage => state.quad_s = (state.quad_s.max(0.0) + QUAD_S).min(MAX_QUAD_S),
    }
}

/// Whether a body with its feet at `feet` touches an item standing at `spot`.
pub fn touches(spot: Vec3, feet: Vec3, height_m: f32) -> bool {
    let d = Vec3::new(feet.x - spot.x, 0.0, feet.z - spot.z);
    d.length_squared() <= PICKUP_REACH_M * PICKUP_REACH_M
        && feet.y <= spot.y + PICKUP_HEIGHT_M
        && feet.y + height_m >= spot.y
}

/// Damage `amount` on `state`: armour takes two thirds of it while it lasts
/// (Quake 3's `CheckArmor`); what is left comes off health. Returns the
/// health lost.
pub fn take_damage(state: &mut PlayerState, amount: u32) -> u32 {
    let saved = ((amount as f32 * ARMOUR_PROTECTION).ceil() as u32).min(u32::from(state.armour));
    state.armour -= saved as u8;
    let lost = (amount - saved).min(u32::from(state.health));
    state.health -= lost as u8;
    lost
}

/// The damage a shot or blast of `base` does when fired by `shooter`.
pub fn dealt(base: u32, shooter: &PlayerState) -> u32 {
    if shooter.quad_s > 0.0 { base.saturating_mul(QUAD_FACTOR) } else { base }
}

/// One tick of what wears off: the quad's time, and health above 100 a point
/// each whole second of server time (Quake 3's `ClientTimerActions`), so both
/// ends take the point on the same tick.
pub fn wear_off(state: &mut PlayerState, tick: u32, dt_s: f32) {
    state.quad_s = if state.alive { (state.quad_s - dt_s).max(0.0) } else { 0.0 };
    let hz = TickRate::new((1.0 / dt_s).round() as u32).hz();
    if state.alive && state.health > MAX_HEALTH && tick.is_multiple_of(hz) {
        state.health -= 1;
    }
}

/// Who took an item, and on which server tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Taken {
    pub tick: u32,
    pub by: PlayerId,
}

/// One item of the map on a server: there, or taken (and so back at
/// [`ItemSlot::back_at`]). The server keeps these, sends them in every
/// snapshot, and the client predicts its own pickups against them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ItemSlot {
    pub taken: Option<Taken>,
}

impl ItemSlot {
    pub fn available(&self) -> bool {
        self.taken.is_none()
    }

    /// The tick an item of `kind` taken as this one was comes back.
    pub fn back_at(&self, kind: ItemKind, rate: TickRate) -> Option<u32> {
        self.taken.map(|t| t.tick.wrapping_add(rate.ticks_in(kind.respawn_s())))
    }

    /// Puts the item back if its time has come by `tick`; whether it did.
    pub fn respawn_by(&mut self, kind: ItemKind, tick: u32, rate: TickRate) -> bool {
        match self.back_at(kind, rate) {
            Some(back) if tick_diff(tick, back) >= 0 => {
                self.taken = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player(health: u8, armour: u8) -> PlayerState {
        PlayerState { health, armour, ..PlayerState::spawned_at(Vec3::ZERO, 0.0) }
    }

    #[test]
    fn each_item_gives_its_amount_up_to_its_cap_and_full_players_leave_it() {
        let mut p = player(60, 0);
        grab(ItemKind::Health, &mut p);
        assert_eq!(p.health, 85);
        grab(ItemKind::LargeHealth, &mut p);
        assert_eq!(p.health, 100);
        assert!(!can_grab(ItemKind::Health, &p) && !can_grab(ItemKind::LargeHealth, &p));
        assert!(can_grab(ItemKind::MegaHealth, &p));
        grab(ItemKind::MegaHealth, &mut p);
        assert_eq!(p.health, 200);
        assert!(!can_grab(ItemKind::MegaHealth, &p));
        grab(ItemKind::RedArmour, &mut p);
        grab(ItemKind::YellowArmour, &mut p);
        assert_eq!(p.armour, 150);
        grab(ItemKind::RedArmour, &mut p);
        assert_eq!(p.armour, 200);
        assert!(!can_grab(ItemKind::YellowArmour, &p));
        grab(ItemKind::QuadDamage, &mut p);
        grab(ItemKind::QuadDamage, &mut p);
        grab(ItemKind::QuadDamage, &mut p);
        assert_eq!(p.quad_s, MAX_QUAD_S);
        let dead = PlayerState { alive: false, ..player(10, 0) };
        assert!(ItemKind::ALL.iter().all(|k| !can_grab(*k, &dead)), "the dead take nothing");
    }

    #[test]
    fn armour_takes_two_thirds_while_it_lasts() {
        let mut p = player(100, 50);
        assert_eq!(take_damage(&mut p, 30), 10);
        assert_eq!((p.health, p.armour), (90, 30));
        assert_eq!(take_damage(&mut p, 90), 60);
        assert_eq!((p.health, p.armour), (30, 0));
        assert_eq!(take_damage(&mut p, 500), 30);
        assert_eq!(p.health, 0);
        let quad = PlayerState { quad_s: 1.0, ..player(100, 0) };
        assert_eq!(dealt(25, &quad), 75);
        assert_eq!(dealt(25, &player(100, 0)), 25);
    }

    #[test]
    fn the_mega_wears_off_a_point_a_second_at_any_tick_rate_and_the_quad_runs_out() {
        for hz in [20u32, 64, 128] {
            let dt = crate::time::tick_dt_s(hz);
            let mut p = PlayerState { quad_s: 2.0, ..player(200, 0) };
            for tick in 1..=(10 * hz) {
                wear_off(&mut p, tick, dt);
            }
            assert_eq!(p.health, 190, "{hz} Hz");
            assert_eq!(p.quad_s, 0.0);
        }
    }

    #[test]
    fn a_taken_item_comes_back_on_its_timer() {
        let rate = TickRate::new(64);
        let mut slot = ItemSlot { taken: Some(Taken { tick: 1000, by: PlayerId(3) }) };
        assert_eq!(slot.back_at(ItemKind::RedArmour, rate), Some(1000 + 25 * 64));
        assert!(!slot.respawn_by(ItemKind::RedArmour, 1000 + 25 * 64 - 1, rate));
        assert!(!slot.available());
        assert!(slot.respawn_by(ItemKind::RedArmour, 1000 + 25 * 64, rate));
        assert!(slot.available());
    }

    #[test]
    fn touching_is_a_box_around_the_spot() {
        let spot = Vec3::new(5.0, 0.0, 5.0);
        assert!(touches(spot, Vec3::new(5.8, 0.0, 5.0), 1.8));
        assert!(!touches(spot, Vec3::new(6.0, 0.0, 5.0), 1.8));
        assert!(!touches(spot, Vec3::new(5.0, 1.1, 5.0), 1.8), "jumping over it");
        assert!(!touches(spot, Vec3::new(5.0, -2.0, 5.0), 1.8), "under the floor it stands on");
    }
}
