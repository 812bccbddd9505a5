//! The authoritative tick: every player's command for the tick through the
//! shared movement code.

use arena_sim::weapon::Ignored;
use arena_sim::{PlayerState, UserCmd, step_player, tick_dt_s};
use bevy::prelude::*;

use crate::combat::{CombatStats, PendingShot, PendingShots};
use crate::connections::{Roster, ServerPlayer};
use crate::intake::CommandBuffer;
use crate::{ServerSet, SimWorld, TickRate};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ServerTick>()
        .add_systems(FixedUpdate, (advance_tick, run_commands).chain().in_set(ServerSet::Simulate));
}

/// The number of the tick being simulated (or last simulated).
#[derive(Resource, Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTick(pub u32);

/// A player's authoritative state.
#[derive(Component, Debug, Clone, Copy, Deref, DerefMut)]
pub struct Sim(pub PlayerState);

fn advance_tick(mut tick: ResMut<ServerTick>) {
    tick.0 = tick.0.wrapping_add(1);
}

fn run_commands(
    world: Res<SimWorld>,
    rate: Res<TickRate>,
    mut roster: ResMut<Roster>,
    tick: Res<ServerTick>,
    mut players: Query<(&ServerPlayer, &mut Sim, &mut CommandBuffer)>,
    mut shots: ResMut<PendingShots>,
    mut combat: ResMut<CombatStats>,
) {
    let dt = tick_dt_s(rate.0);
    for (player, mut sim, mut buffer) in &mut players {
        // No command ever: stand still, looking where the player spawned.
        let cmd = buffer.take(tick.0).unwrap_or(UserCmd {
            tick: tick.0,
            yaw: sim.yaw,
            pitch: sim.pitch,
            ..Default::default()
        });
        let (next, events) = step_player(&sim.0, &cmd, &world, dt);
        sim.0 = next;
        if let Some(shot) = events.weapon.shot {
            let margin_ticks = buffer.last_margin.unwrap_or(0.0);
            shots.0.push(PendingShot { shooter: player.id, cmd, shot, margin_ticks });
        }
        match events.weapon.ignored {
            Some(Ignored::Dead) => combat.fire_while_dead += 1,
            Some(Ignored::FullMagazine) => combat.reload_when_full += 1,
            Some(Ignored::TooSoon) => combat.fire_too_soon += 1,
            None => {}
        }
        if events.movement.fell_out {
            let (pos, yaw) = roster.choose_spawn(&world, Some(player.id));
            sim.0 = sim.respawned_at(pos, yaw);
        }
        if let Some(entry) = roster.players.get_mut(&player.id) {
            entry.last_pos = sim.pos;
        }
    }
}
