//! The authoritative tick: every player's command for the tick through the
//! shared movement code. A shot becomes a pending shot for the combat rules,
//! a rocket a pending launch; a rocket's splash on its own shooter lands
//! after the shooter's tick it was due in (as its client predicts); a fall
//! out of the world is a death.

use arena_sim::weapon::Ignored;
use arena_sim::{HitZone, UserCmd, step_player};
use bevy::prelude::*;

use super::intake::CommandBuffer;
use super::life::kill;
use super::match_flow::MatchState;
use super::rockets::{OwnSplashes, land};
use crate::vocabulary::{
    CombatStats, Frag, LastRun, PendingRockets, PendingShot, PendingShots, Range, ServerPlayer, ServerTick, Sim,
    SimBefore, SimWorld, SubTickShots, TickRate,
};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ServerTick>();
}

pub(crate) fn advance_tick(mut tick: ResMut<ServerTick>) {
    tick.0 = tick.0.wrapping_add(1);
}

/// A watcher's commands are taken off its buffer, tick by tick, and run
/// nowhere: its snapshots' feedback then keeps its clock in step as a
/// player's does (the command it sends carries no act: see intake).
pub(crate) fn pass_watchers(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    mut watchers: Query<&mut CommandBuffer, Without<Sim>>,
) {
    for mut buffer in &mut watchers {
        buffer.take(tick.0, CommandBuffer::max_repeats(**rate));
    }
}

pub(crate) fn run_commands(
    world: Res<SimWorld>,
    rate: Res<TickRate>,
    tick: Res<ServerTick>,
    subtick: Res<SubTickShots>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &mut SimBefore, &mut CommandBuffer, &mut LastRun)>,
    (mut shots, mut rockets, mut own_splashes): (ResMut<PendingShots>, ResMut<PendingRockets>, ResMut<OwnSplashes>),
    range: Option<Res<Range>>,
    mut combat: ResMut<CombatStats>,
    match_state: Res<MatchState>,
    mut frags: MessageWriter<Frag>,
    mut commands: Commands,
) {
    for (entity, player, mut sim, mut before, mut buffer, mut last_run) in &mut players {
        // No command ever: stand still, looking where the player spawned.
        let mut cmd = buffer.take(tick.0, CommandBuffer::max_repeats(**rate)).unwrap_or(UserCmd {
            tick: tick.0,
            yaw: sim.yaw,
            pitch: sim.pitch,
            ..Default::default()
        });
        if match_state.is_over() {
            // While the results show, everyone may look around but not act.
            cmd = UserCmd { tick: cmd.tick, yaw: cmd.yaw, pitch: cmd.pitch, ..Default::default() };
        }
        if !subtick.0 {
            cmd.click = None;
        }
        let (next, events) = step_player(&before.0, &sim.0, &cmd, &world, rate.dt_s());
        *last_run = LastRun { tick: Some(tick.0), cmd, from: sim.0, stepped: next };
        before.0 = sim.0;
        sim.0 = next;
        let margin_ticks = buffer.last_margin.unwrap_or(0.0);
        let repeated = buffer.last_repeated;
        if let Some(shot) = events.weapon.shot {
            shots.0.push(PendingShot { shooter: player.id, cmd, shot, margin_ticks, repeated });
        }
        if let Some(aim) = events.weapon.rocket {
            rockets.0.push((PendingShot { shooter: player.id, cmd, shot: aim.shot, margin_ticks, repeated }, aim.at_s));
        }
        for point in own_splashes.take(player.id, cmd.tick) {
            let at = (player.id, entity);
            land(&world, point, &mut sim.0, at, (*tick, *rate), range.is_some(), &mut frags, &mut commands);
        }
        combat.pad_launches += u64::from(events.movement.launched);
        combat.teleports += u64::from(events.movement.teleported);
        match events.weapon.ignored {
            Some(Ignored::Dead) => combat.fire_while_dead += 1,
            Some(Ignored::FullMagazine) => combat.reload_when_full += 1,
            Some(Ignored::TooSoon) => combat.fire_too_soon += 1,
            None => {}
        }
        if events.movement.fell_out && sim.alive {
            // Out of the world: a death by one's own hand.
            let frag = Frag { killer: player.id, victim: player.id, zone: HitZone::Body };
            kill(&mut commands, entity, &mut sim.0, frag, *tick, *rate, &mut frags);
        }
    }
}
