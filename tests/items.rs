//! Items, jump pads and teleporters as a player would notice them, over
//! real UDP on 127.0.0.1 with the link conditioner at a 150 ms round trip:
//! a predicted pickup the server grants is heard once; two players at one
//! item end agreeing on who has it, the loser's prediction undone; an item
//! comes back on its timer (and a server without items lists none); a jump
//! pad's launch and a teleport are predicted without a miss, no watcher
//! draws a teleporting body between the two ends, and no shot is tested
//! against it there; bots take items and use the pads and teleporters.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_lab::experiments::{LabSettings, Switch, pickups, teleport};
use arena_lab::harness::{loopback_config, server_app_with_frame, tick};
use arena_server::{Items, ServerConfig, ServerTick};
use arena_sim::{ItemKind, ItemSlot, MapDef, PlayerId, Taken};

/// The lab's settings at a 150 ms round trip (10 ms jitter, 2% loss), for `seconds`.
fn at_150_ms(seconds: f64) -> LabSettings {
    LabSettings {
        prediction: Switch::On,
        reconciliation: Switch::On,
        interpolation: Switch::On,
        lag_compensation: Switch::On,
        subtick: Switch::On,
        projectile_compensation: Switch::On,
        bot_rockets: Switch::On,
        interp_ms: None,
        update_rate: 0,
        cmd_rate: 0,
        rate: 0,
        snapshot_rate: None,
        max_unlag_ms: arena_server::DEFAULT_MAX_UNLAG_MS,
        fake_latency_ms: 150.0,
        fake_jitter_ms: 10.0,
        fake_loss: 0.02,
        tick: 64,
        seconds,
        seed: 7,
    }
}

#[test]
fn a_predicted_pickup_is_granted_and_heard_once_and_a_contested_one_ends_agreed() {
    // Four trials: alone, contested, alone, contested.
    let report = pickups(at_150_ms(10.0), "foundry").expect("runs");
    assert!(report.uncontested_trials >= 2 && report.contested_trials >= 2, "{report:?}");
    assert!(report.predicted >= 2, "the runners' clients took the items at once: {report:?}");
    assert_eq!(report.granted, report.predicted, "every uncontested prediction granted");
    assert_eq!(report.sounds_twice, 0, "each pickup heard once");
    assert_eq!(report.unpredicted_grants, 0, "none granted that was not predicted (and heard then)");
    assert_eq!(report.contested_agreement, 1.0, "both clients name the server's winner");
    assert!(report.pickups_undone >= 1, "the losers' predictions undone: {report:?}");
}

#[test]
fn an_item_comes_back_on_its_timer_and_a_server_without_items_lists_none() {
    let hz = 64;
    let config = ServerConfig { items: true, ..loopback_config(hz) };
    let (mut server, _) = server_app_with_frame(&config, tick(hz));
    // A few ticks (the fixed clock's first frame runs none).
    for _ in 0..3 {
        server.update();
    }
    let map = MapDef::foundry();
    let armour = map.items.iter().position(|i| i.kind == ItemKind::RedArmour).expect("Foundry has red armour");
    assert_eq!(server.world().resource::<Items>().slots.len(), map.items.len());
    let now = server.world().resource::<ServerTick>().0;
    server.world_mut().resource_mut::<Items>().slots[armour] =
        ItemSlot { taken: Some(Taken { tick: now, by: PlayerId(0) }) };
    let back_after = (ItemKind::RedArmour.respawn_s() * hz as f32).ceil() as u32;
    for _ in 0..back_after - 1 {
        server.update();
    }
    let slot = server.world().resource::<Items>().slots[armour];
    assert!(!slot.available(), "still taken a tick before its 25 s are up");
    server.update();
    let ticked = server.world().resource::<ServerTick>().0;
    assert_eq!(ticked, now + back_after);
    assert!(server.world().resource::<Items>().slots[armour].available(), "back on its timer");

    let (mut bare, _) = server_app_with_frame(&ServerConfig { items: false, ..loopback_config(hz) }, tick(hz));
    for _ in 0..10 {
        bare.update();
    }
    assert!(bare.world().resource::<Items>().slots.is_empty(), "--no-items: none listed");
}

#[test]
fn bots_take_items_and_use_jump_pads_and_teleporters() {
    // Six bots on Yard for two minutes of server time, the server alone.
    let hz = 64;
    let config = ServerConfig { items: true, map: "Yard".into(), bots: 6, bot_seed: Some(11), ..loopback_config(hz) };
    let (mut server, _) = server_app_with_frame(&config, tick(hz));
    for _ in 0..120 * hz {
        server.update();
    }
    let stats = server.world().resource::<arena_server::CombatStats>();
    eprintln!("{} pickups, {} pad launches, {} teleports", stats.pickups, stats.pad_launches, stats.teleports);
    assert!(stats.pickups > 0 && stats.pad_launches > 0 && stats.teleports > 0, "{stats:?}");
}

#[test]
fn pads_and_teleporters_at_150_ms_mispredict_nothing_draw_nobody_between_and_rewind_one_side() {
    let report = teleport(at_150_ms(14.0), None).expect("runs");
    assert!(report.teleports >= 2 && report.pad_launches >= 2, "{report:?}");
    assert_eq!(report.mispredictions, 0, "a launch and a teleport are in the shared movement");
    assert!(report.frames_around_teleports > 100, "{report:?}");
    assert_eq!(report.drawn_between_ends, 0, "never drawn between the ends: {report:?}");
    assert!(report.shots_around_teleports > 0, "{report:?}");
    assert_eq!(report.rewind_between_ends, 0, "never tested between the ends: {report:?}");
}
