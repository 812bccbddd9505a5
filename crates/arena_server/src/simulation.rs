//! The authoritative tick: every player's command for the tick through the
//! shared movement code.

use arena_sim::weapon::Ignored;
use arena_sim::{PlayerState, UserCmd, step_player, tick_dt_s};
use bevy::prelude::*;

use crate::combat::{CombatStats, Dead, PendingShot, PendingShots, RESPAWN_DELAY_S};
use crate::connections::{Roster, ServerPlayer};
use crate::intake::CommandBuffer;
use crate::match_flow::{Frag, MatchState};
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

pub(crate) fn advance_tick(mut tick: ResMut<ServerTick>) {
    tick.0 = tick.0.wrapping_add(1);
}

fn run_commands(
    world: Res<SimWorld>,
    rate: Res<TickRate>,
    mut roster: ResMut<Roster>,
    tick: Res<ServerTick>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &mut CommandBuffer)>,
    mut shots: ResMut<PendingShots>,
    mut combat: ResMut<CombatStats>,
    match_state: Res<MatchState>,
    mut frags: MessageWriter<Frag>,
    mut commands: Commands,
) {
    let dt = tick_dt_s(rate.0);
    for (entity, player, mut sim, mut buffer) in &mut players {
        // No command ever: stand still, looking where the player spawned.
        let mut cmd = buffer.take(tick.0, CommandBuffer::max_repeats(rate.0)).unwrap_or(UserCmd {
            tick: tick.0,
            yaw: sim.yaw,
            pitch: sim.pitch,
            ..Default::default()
        });
        if match_state.is_over() {
            // While the results show, everyone may look around but not act.
            cmd = UserCmd { tick: cmd.tick, yaw: cmd.yaw, pitch: cmd.pitch, ..Default::default() };
        }
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
        if events.movement.fell_out && sim.alive {
            // Out of the world: a death by one's own hand.
            sim.alive = false;
            sim.vel = Vec3::ZERO;
            let respawn_tick = tick.0.wrapping_add((RESPAWN_DELAY_S * rate.0 as f32) as u32);
            commands.entity(entity).insert(Dead { respawn_tick });
            frags.write(Frag { killer: player.id, victim: player.id, zone: arena_sim::HitZone::Body });
        }
        if let Some(entry) = roster.players.get_mut(&player.id) {
            entry.last_pos = sim.pos;
        }
    }
}
