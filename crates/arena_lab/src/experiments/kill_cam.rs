//! `arena lab killcam`: the two-view kill-cam, measured. A shooter kills a
//! running target again and again over conditioned links (both clients with
//! the kill-cam on); for each death, how soon after the target's client saw
//! itself die the kill-cam came, its size, how far its frozen shot's hitbox
//! is from what the shooter's client drew and from what the server tested,
//! and the gap between the two views.

use arena_client::{KillCamFeed, LocalInput, SkipKillCam};
use arena_protocol::ToClient;
use arena_protocol::kill_cam::KillCam;
use arena_server::ShotLog;
use arena_sim::Hitbox;
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::{LoopbackGame, drawn_self, test_frame, test_frames};

use super::setup::{LabError, LabSettings};

/// Largest distance between the same part's ends in two hitboxes, metres.
pub fn part_gap(a: &Hitbox, b: &Hitbox) -> f32 {
    a.parts().iter().zip(b.parts()).map(|(p, q)| p.a.distance(q.a).max(p.b.distance(q.b))).fold(0.0, f32::max)
}

/// One death as the target's client got it.
#[derive(Clone, Debug)]
pub struct KillSeen {
    pub cam: KillCam,
    /// From the frame the target's client drew itself dead to the frame
    /// the kill-cam was there, seconds (negative: the kill-cam came first).
    pub start_after_death_s: f64,
    /// The kill-cam message's size on the wire, bytes.
    pub bytes: usize,
}

/// Client 0 shoots client 1, who runs to and fro, until client 1's client
/// has a kill-cam and has drawn itself dead (at most `limit_s`).
pub fn kill_once(game: &mut LoopbackGame, limit_s: f64) -> Option<KillSeen> {
    game.clients[1].world_mut().resource_mut::<KillCamFeed>().current = None;
    let (mut died_at, mut cam_at) = (None, None);
    for frame in 0..test_frames(limit_s) {
        game.clients[1].world_mut().resource_mut::<LocalInput>().right = if (frame / 90) % 2 == 0 { 1.0 } else { -1.0 };
        match game.drawn_other(0).filter(|_| died_at.is_none()) {
            Some(target) => {
                game.aim(0, Hitbox::of(&target).body_center());
                game.hold_fire(0, true);
            }
            None => game.hold_fire(0, false),
        }
        game.step(1);
        if died_at.is_none() && drawn_self(&game.clients[1]).is_some_and(|s| !s.alive) {
            died_at = Some(frame);
        }
        if cam_at.is_none() && game.clients[1].world().resource::<KillCamFeed>().current.is_some() {
            cam_at = Some(frame);
        }
        if let (Some(died), Some(came)) = (died_at, cam_at) {
            game.hold_fire(0, false);
            let cam = game.clients[1].world().resource::<KillCamFeed>().current.as_ref()?.cam.clone();
            let bytes = arena_protocol::encode(&ToClient::KillCam(Box::new(cam.clone()))).ok()?.len();
            let start_after_death_s = (came as f64 - died as f64) * test_frame().as_secs_f64();
            return Some(KillSeen { cam, start_after_death_s, bytes });
        }
    }
    None
}

#[derive(Debug, Serialize)]
pub struct KillCamReport {
    pub experiment: &'static str,
    pub fake_latency_ms: f32,
    pub kills_asked: usize,
    pub kill_cams: usize,
    pub kill_cam_bytes_max: usize,
    pub kill_cam_bytes_mean: f64,
    pub kill_cam_start_after_death_s_max: f64,
    /// The frozen shot's hitbox (on the wire's grids) against the one the
    /// shooter's client drew, worst part end, metres.
    pub frozen_vs_drawn_m_max: f64,
    /// What the shooter's client drew against what the server tested.
    pub drawn_vs_tested_m_max: f64,
    /// Kill-cams whose frozen hitbox is exactly the server's tested one.
    pub frozen_is_tested: usize,
    pub gap_m_mean: f64,
    pub gap_ms_mean: f64,
    pub behind_cover: usize,
}

/// Runs `arena lab killcam`: `kills` deaths.
pub fn kill_cam(settings: LabSettings, kills: usize) -> Result<KillCamReport, LabError> {
    settings.validate()?;
    let netcode = arena_client::NetcodeSettings { kill_cam: true, ..settings.netcode() };
    let mut game =
        LoopbackGame::start(&settings.server_config(), &netcode, settings.seed, &["Shooter", "Target"], test_frame())
            .map_err(|_| LabError::NotJoined)?;
    game.step(test_frames(2.0));
    let target = game.id_of("Target").ok_or(LabError::NotJoined)?;
    let mut seen = Vec::new();
    for _ in 0..kills {
        game.teleport("Shooter", Vec3::new(0.0, 0.0, 10.0), 0.0);
        game.teleport("Target", Vec3::new(8.0, 0.0, 4.0), 0.0);
        game.server.world_mut().resource_mut::<ShotLog>().0.clear();
        game.step(test_frames(0.5));
        let Some(kill) = kill_once(&mut game, 12.0) else { continue };
        let log: Vec<_> = game.server.world().resource::<ShotLog>().0.iter().cloned().collect();
        let fatal = log.iter().find(|r| r.hit.is_some_and(|h| h.killed && h.victim == target));
        let tested = fatal.and_then(|r| r.tested.iter().find(|(id, _)| *id == target)).map(|(_, h)| *h);
        let drawn = fatal.and_then(|r| {
            let comparisons = game.clients[0].world().resource::<arena_client::ShotComparisons>();
            let c = comparisons.0.iter().find(|c| c.fired.cmd_tick == r.cmd_tick)?;
            c.fired.seen.iter().find(|(id, _)| *id == target).map(|(_, h)| *h)
        });
        seen.push((kill, tested, drawn));
        // Back to life: skip the rest.
        game.clients[1].world_mut().write_message(SkipKillCam);
        game.step_until(test_frames(4.0), |g| g.sim("Target").is_some_and(|s| s.alive));
    }
    let n = seen.len();
    let mean = |f: &dyn Fn(&KillSeen) -> f64| seen.iter().map(|(k, ..)| f(k)).sum::<f64>() / n.max(1) as f64;
    let worst = |v: Vec<f64>| v.into_iter().fold(f64::NAN, f64::max);
    Ok(KillCamReport {
        experiment: "killcam",
        fake_latency_ms: settings.fake_latency_ms,
        kills_asked: kills,
        kill_cams: n,
        kill_cam_bytes_max: seen.iter().map(|(k, ..)| k.bytes).max().unwrap_or(0),
        kill_cam_bytes_mean: mean(&|k| k.bytes as f64),
        kill_cam_start_after_death_s_max: worst(seen.iter().map(|(k, ..)| k.start_after_death_s).collect()),
        frozen_vs_drawn_m_max: worst(
            seen.iter()
                .filter_map(|(k, _, d)| {
                    let frozen = k.cam.frames.last()?.victim.hitbox();
                    Some(f64::from(part_gap(&frozen, d.as_ref()?)))
                })
                .collect(),
        ),
        drawn_vs_tested_m_max: worst(
            seen.iter().filter_map(|(_, t, d)| Some(f64::from(part_gap(t.as_ref()?, d.as_ref()?)))).collect(),
        ),
        frozen_is_tested: seen.iter().filter(|(k, t, _)| k.cam.shot.is_some_and(|s| Some(s.drawn) == *t)).count(),
        gap_m_mean: mean(&|k| k.cam.gap().map_or(f64::NAN, |(m, _)| f64::from(m))),
        gap_ms_mean: mean(&|k| k.cam.gap().map_or(f64::NAN, |(_, ms)| f64::from(ms))),
        behind_cover: seen.iter().filter(|(k, ..)| k.cam.shot.is_some_and(|s| s.server_in_cover)).count(),
    })
}
