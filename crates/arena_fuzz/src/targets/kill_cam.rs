//! Fuzz target of the kill-cam message from a hostile server, and of
//! everything the view computes from one.

use arena_protocol::{ToClient, decode, encode};
use arena_sim::{Hitbox, PlayerId, PlayerState};
use glam::Vec3;

use crate::target::Target;

/// The kill-cam message from a hostile server: any bytes decoded as one,
/// checked, and (when it passes) everything the view computes from it:
/// each frame's pose and hitboxes, the eye and view, the gap between the
/// two views, re-encoding within its budget.
pub struct KillCamMessage;

impl Target for KillCamMessage {
    fn name(&self) -> &'static str {
        "kill_cam"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::kill_cam::{CamFrame, EyeQ, FatalShot, KillCam, PoseQ};
        let h = |x: f32| {
            Hitbox::of(&arena_sim::quant::snap_state(&PlayerState {
                pos: Vec3::new(x, 0.0, 3.0),
                vel: Vec3::new(4.0, 0.0, 0.0),
                alive: true,
                on_ground: true,
                ..Default::default()
            }))
        };
        let cam = |frames: usize, shot: bool, blast: Option<Vec3>| KillCam {
            killer: PlayerId(1),
            victim: PlayerId(2),
            zone: arena_sim::HitZone::Body,
            tick_hz: 64,
            step_ticks: 1,
            frames: (0..frames)
                .map(|i| CamFrame {
                    killer: EyeQ::of(Vec3::new(-9.0, 1.6, i as f32 * 0.02), 0.3, 0.0),
                    victim: PoseQ::of(&h(i as f32 * 0.06)),
                })
                .collect(),
            shot: shot.then(|| FatalShot {
                origin: Vec3::new(-9.0, 1.6, 3.0),
                dir: Vec3::X,
                tested_tick: 500.25,
                server_tick: 512,
                drawn: h(2.0),
                server: h(2.4),
                server_in_cover: false,
                blast,
            }),
        };
        [cam(1, false, None), cam(40, true, None), cam(160, true, None), cam(80, true, Some(Vec3::new(1.8, 0.4, 3.0)))]
            .into_iter()
            .filter_map(|c| encode(&ToClient::KillCam(Box::new(c))).ok())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::kill_cam::MAX_KILL_CAM_BYTES;
        let Ok(ToClient::KillCam(cam)) = decode::<ToClient>(input) else { return };
        if cam.validate().is_err() {
            return;
        }
        for f in &cam.frames {
            let victim = f.victim.hitbox();
            assert!(victim.parts().iter().all(|c| c.a.is_finite() && c.b.is_finite()), "{f:?}");
            let eye = f.killer.pos();
            let forward = arena_sim::player::view_forward(f.killer.yaw(), f.killer.pitch());
            assert!(eye.is_finite() && forward.is_finite());
            let _ = victim.ray_part(eye, forward, arena_sim::weapon::RANGE_M);
        }
        if let Some((m, ms)) = cam.gap() {
            assert!(m.is_finite() && ms.is_finite(), "{m} {ms}");
        }
        if let Some(shot) = &cam.shot {
            let _ = shot.drawn.ray_part(shot.origin, shot.dir, arena_sim::weapon::RANGE_M);
            let _ = shot.server.lerp(&shot.drawn, 0.5).parts();
        }
        let again = encode(&ToClient::KillCam(cam)).map(|b| b.len());
        assert!(again.as_ref().is_ok_and(|n| *n <= MAX_KILL_CAM_BYTES), "{again:?}");
    }
}
