//! The two-view kill-cam's message: what a victim's client needs to show
//! its death as the killer's client drew it, beside where the server had
//! the victim at that instant. The last seconds from the killer's eyes
//! (a compact track: the killer's eye and view, the victim's pose as the
//! killer's client drew it) and, for a hitscan kill, the fatal shot: its
//! line, the victim's hitbox the server tested (rewound to what the killer
//! drew) and the victim's hitbox at the server's present. At most
//! [`MAX_KILL_CAM_BYTES`] encoded; a client checks it as any message from
//! a server ([`KillCam::validate`]).

use arena_sim::pose::PoseInput;
use arena_sim::quant;
use arena_sim::{HitZone, Hitbox, PlayerId};
use glam::{Vec2, Vec3};
use serde::{Deserialize, Serialize};

/// The track's length, seconds: the last seconds before the fatal shot.
pub const KILL_CAM_TRACK_S: f32 = 2.5;
/// Most frames in a track (a longer one is sampled every few ticks).
pub const MAX_KILL_CAM_FRAMES: usize = 160;
/// Largest kill-cam message, bytes (encoded).
pub const MAX_KILL_CAM_BYTES: usize = 16 * 1024;
/// Farthest a kill-cam's point may lie from the arena's centre, metres.
const MAX_COORD_M: f32 = 4096.0;

/// A pose on the wire's grids (as snapshots carry it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoseQ {
    pub feet: [i32; 3],
    pub yaw: u16,
    pub pitch: i16,
    pub vel: [i32; 2],
    pub gait: u16,
    /// Crouched, on the ground, alive.
    pub flags: u8,
    pub twist: i16,
    pub landing: u8,
    pub spawn_count: u8,
}

const CROUCHED: u8 = 1;
const ON_GROUND: u8 = 2;
const ALIVE: u8 = 4;

impl PoseQ {
    pub fn of(h: &Hitbox) -> Self {
        let p = &h.input;
        let flags =
            (u8::from(p.crouched) * CROUCHED) | (u8::from(p.on_ground) * ON_GROUND) | (u8::from(h.alive) * ALIVE);
        Self {
            feet: p.feet.to_array().map(quant::pos_to_q),
            yaw: quant::yaw_to_q(p.yaw),
            pitch: quant::pitch_to_q(p.pitch),
            vel: [quant::vel_to_q(p.vel.x), quant::vel_to_q(p.vel.y)],
            gait: quant::dist_to_q(p.gait_m),
            flags,
            twist: quant::twist_to_q(p.twist),
            landing: quant::landing_to_q(p.landing),
            spawn_count: h.spawn_count,
        }
    }

    pub fn hitbox(&self) -> Hitbox {
        Hitbox {
            input: PoseInput {
                feet: Vec3::from_array(self.feet.map(quant::q_to_pos)),
                yaw: quant::q_to_yaw(self.yaw),
                pitch: quant::q_to_pitch(self.pitch),
                vel: Vec2::new(quant::q_to_vel(self.vel[0]), quant::q_to_vel(self.vel[1])),
                gait_m: quant::q_to_dist(self.gait),
                crouched: self.flags & CROUCHED != 0,
                on_ground: self.flags & ON_GROUND != 0,
                twist: quant::q_to_twist(self.twist),
                landing: quant::q_to_landing(self.landing),
            },
            alive: self.flags & ALIVE != 0,
            spawn_count: self.spawn_count,
        }
    }
}

/// The killer's eye and view on the wire's grids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EyeQ {
    pub pos: [i32; 3],
    pub yaw: u16,
    pub pitch: i16,
    /// The killer's spawn counter: a teleport (or a respawn) between two
    /// frames changes it, and the camera cuts rather than slides across.
    pub life: u8,
}

impl EyeQ {
    pub fn of(pos: Vec3, yaw: f32, pitch: f32) -> Self {
        Self {
            pos: pos.to_array().map(quant::pos_to_q),
            yaw: quant::yaw_to_q(yaw),
            pitch: quant::pitch_to_q(pitch),
            life: 0,
        }
    }

    /// The same eye, in the life `life`.
    pub fn in_life(self, life: u8) -> Self {
        Self { life, ..self }
    }

    pub fn pos(&self) -> Vec3 {
        Vec3::from_array(self.pos.map(quant::q_to_pos))
    }

    pub fn yaw(&self) -> f32 {
        quant::q_to_yaw(self.yaw)
    }

    pub fn pitch(&self) -> f32 {
        quant::q_to_pitch(self.pitch)
    }
}

/// One instant of the track.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CamFrame {
    pub killer: EyeQ,
    /// The victim as the killer's client drew it then.
    pub victim: PoseQ,
}

/// The fatal shot, frozen: a hitscan shot's line, or a rocket's flight from
/// its launch to its blast.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FatalShot {
    pub origin: Vec3,
    pub dir: Vec3,
    /// When the killer's client drew the victim (the time the server
    /// rewound to; for a rocket, the time of the players its flight met),
    /// ticks.
    pub tested_tick: f64,
    /// The server tick the shot was judged in (its present).
    pub server_tick: u32,
    /// The victim's hitbox as tested: rewound to what the killer drew.
    pub drawn: Hitbox,
    /// The victim's hitbox at the server's present.
    pub server: Hitbox,
    /// Whether a wall stood between the shot's origin (a rocket's blast)
    /// and the victim's body where the server had it: "behind cover on
    /// the server".
    pub server_in_cover: bool,
    /// Where a rocket that killed exploded; none for a hitscan shot.
    pub blast: Option<Vec3>,
}

/// A death as the killer saw it (to the victim).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillCam {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
    /// The server's tick rate, for playing the track at its pace.
    pub tick_hz: u16,
    /// Ticks between two frames of the track (1 or more).
    pub step_ticks: u8,
    /// Oldest first; the last is the fatal instant.
    pub frames: Vec<CamFrame>,
    /// The fatal shot or rocket (none when the server had no record of it).
    pub shot: Option<FatalShot>,
}

impl KillCam {
    /// The distance between where the killer drew the victim and where the
    /// server had it, metres, and the time between the two, milliseconds.
    pub fn gap(&self) -> Option<(f32, f32)> {
        let shot = self.shot?;
        let metres = shot.drawn.body_center().distance(shot.server.body_center());
        let ms = (f64::from(shot.server_tick) - shot.tested_tick) * 1000.0 / f64::from(self.tick_hz.max(1));
        Some((metres, ms as f32))
    }

    /// Checks beyond decoding: a server may be hostile too.
    pub fn validate(&self) -> Result<(), String> {
        if self.step_ticks == 0 {
            return Err("a kill-cam with no step".into());
        }
        if !arena_sim::TICK_HZ_RANGE.contains(&u32::from(self.tick_hz)) {
            return Err(format!("a kill-cam at {} Hz", self.tick_hz));
        }
        if self.frames.is_empty() || self.frames.len() > MAX_KILL_CAM_FRAMES {
            return Err(format!("{} kill-cam frames (1..={MAX_KILL_CAM_FRAMES})", self.frames.len()));
        }
        let far = (MAX_COORD_M / quant::POS_STEP_M) as i32;
        let near = |q: &[i32; 3]| q.iter().all(|c| (-far..=far).contains(c));
        if !self.frames.iter().all(|f| near(&f.killer.pos) && near(&f.victim.feet)) {
            return Err("a kill-cam point out of the arena".into());
        }
        if let Some(shot) = &self.shot {
            let bounded = |v: Vec3| v.is_finite() && v.abs().max_element() <= MAX_COORD_M;
            if !bounded(shot.origin)
                || !shot.dir.is_finite()
                || !shot.tested_tick.is_finite()
                || shot.blast.is_some_and(|b| !bounded(b))
            {
                return Err("a kill-cam shot out of bounds".into());
            }
            if (shot.dir.length() - 1.0).abs() > 1e-3 {
                return Err("a kill-cam shot's direction is not a unit vector".into());
            }
            // Rewinds reach back two seconds at most; four is plenty.
            if (f64::from(shot.server_tick) - shot.tested_tick).abs() > 4.0 * f64::from(self.tick_hz) {
                return Err("a kill-cam shot's times too far apart".into());
            }
            for h in [&shot.drawn, &shot.server] {
                crate::bounds::check_hitbox(h)?;
                if h.input.feet.abs().max_element() > MAX_COORD_M {
                    return Err("a kill-cam hitbox out of the arena".into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::PlayerState;

    fn hitbox(x: f32) -> Hitbox {
        let s = PlayerState {
            pos: Vec3::new(x, 0.25, -7.5),
            vel: Vec3::new(3.5, 0.0, -2.0),
            yaw: 1.0,
            pitch: -0.2,
            on_ground: true,
            alive: true,
            step_phase: 1.1,
            twist: 0.3,
            landing: 0.4,
            ..Default::default()
        };
        Hitbox::of(&arena_sim::quant::snap_state(&s))
    }

    pub(crate) fn sample() -> KillCam {
        let frames = (0..MAX_KILL_CAM_FRAMES)
            .map(|i| CamFrame {
                killer: EyeQ::of(Vec3::new(i as f32 * 0.05 - 20.0, 1.6, 30.0), 0.5, -0.1),
                victim: PoseQ::of(&hitbox(i as f32 * 0.05)),
            })
            .collect();
        KillCam {
            killer: PlayerId(2),
            victim: PlayerId(5),
            zone: HitZone::Head,
            tick_hz: 128,
            step_ticks: 2,
            frames,
            shot: Some(FatalShot {
                origin: Vec3::new(-12.0, 1.6, 30.0),
                dir: Vec3::new(0.6, 0.0, -0.8),
                tested_tick: 91_234.5,
                server_tick: 91_260,
                drawn: hitbox(8.0),
                server: hitbox(8.6),
                server_in_cover: true,
                blast: None,
            }),
        }
    }

    #[test]
    fn a_full_kill_cam_fits_its_budget_and_round_trips() {
        let cam = sample();
        let bytes = crate::encode(&cam).unwrap();
        assert!(bytes.len() <= MAX_KILL_CAM_BYTES, "{} bytes", bytes.len());
        // Random-looking motion costs more than this steady one: the
        // budget holds for the worst case of every field at full width.
        let back: KillCam = crate::decode(&bytes).unwrap();
        assert_eq!(back, cam);
        back.validate().unwrap();
        let (m, ms) = cam.gap().unwrap();
        assert!((m - 0.6).abs() < 1e-3 && (ms - 25.5 * 1000.0 / 128.0).abs() < 1e-3, "{m} {ms}");
    }

    #[test]
    fn the_worst_case_fits_too() {
        let mut cam = sample();
        for f in &mut cam.frames {
            f.killer = EyeQ { pos: [i32::MIN; 3], yaw: u16::MAX, pitch: i16::MIN, life: u8::MAX };
            f.victim = PoseQ {
                feet: [i32::MIN; 3],
                yaw: u16::MAX,
                pitch: i16::MIN,
                vel: [i32::MIN; 2],
                gait: u16::MAX,
                flags: u8::MAX,
                twist: i16::MIN,
                landing: u8::MAX,
                spawn_count: u8::MAX,
            };
        }
        let bytes = crate::encode(&cam).unwrap();
        assert!(bytes.len() <= MAX_KILL_CAM_BYTES, "{} bytes", bytes.len());
        // And it is refused: its points are out of the arena.
        assert!(cam.validate().is_err());
    }

    #[test]
    fn a_pose_on_the_grids_survives_the_trip() {
        let h = hitbox(3.0);
        let back = PoseQ::of(&h).hitbox();
        for (a, b) in h.parts().iter().zip(back.parts()) {
            assert!(a.a.distance(b.a) < 1e-4 && a.b.distance(b.b) < 1e-4);
        }
    }

    #[test]
    fn hostile_kill_cams_are_refused() {
        let mut cam = sample();
        cam.step_ticks = 0;
        assert!(cam.validate().is_err());
        let mut cam = sample();
        cam.frames.clear();
        assert!(cam.validate().is_err());
        let mut cam = sample();
        if let Some(s) = cam.shot.as_mut() {
            s.dir = Vec3::new(f32::NAN, 0.0, 0.0);
        }
        assert!(cam.validate().is_err());
        let mut cam = sample();
        if let Some(s) = cam.shot.as_mut() {
            s.drawn.input.gait_m = f32::INFINITY;
        }
        assert!(cam.validate().is_err());
        let mut cam = sample();
        cam.tick_hz = 0;
        assert!(cam.validate().is_err());
        let mut cam = sample();
        if let Some(s) = cam.shot.as_mut() {
            s.blast = Some(Vec3::new(0.0, f32::INFINITY, 0.0));
        }
        assert!(cam.validate().is_err());
        let mut cam = sample();
        if let Some(s) = cam.shot.as_mut() {
            s.blast = Some(Vec3::new(1.0e6, 0.0, 0.0));
        }
        assert!(cam.validate().is_err());
    }
}
