//! User commands: what a client asks its player to do for one tick.

use serde::{Deserialize, Serialize};

/// Highest pitch a player may look up or down, in radians (89 degrees): looking
/// straight up or down would make the view's forward vector degenerate.
pub const MAX_PITCH_RAD: f32 = 89.0 * std::f32::consts::PI / 180.0;

/// Buttons held during a tick, as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Buttons(pub u8);

impl Buttons {
    pub const FIRE: Buttons = Buttons(1 << 0);
    pub const JUMP: Buttons = Buttons(1 << 1);
    pub const CROUCH: Buttons = Buttons(1 << 2);
    pub const RELOAD: Buttons = Buttons(1 << 3);
    /// Not a press but a choice held every tick: the rocket launcher in hand
    /// (else the rifle). A change is a weapon switch.
    pub const ROCKET: Buttons = Buttons(1 << 4);
    /// Every bit that means something; anything else is dropped on intake.
    pub const ALL: Buttons = Buttons(0b1_1111);
    /// Bits of [`Buttons::ALL`], as the command packet carries them.
    pub const BITS: u32 = 5;

    pub const fn contains(self, other: Buttons) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn set(&mut self, other: Buttons, on: bool) {
        if on {
            self.0 |= other.0;
        } else {
            self.0 &= !other.0;
        }
    }

    pub const fn union(self, other: Buttons) -> Buttons {
        Buttons(self.0 | other.0)
    }
}

/// Where a press of fire happened within the ticks (the sub-tick shot, as
/// Counter-Strike 2 has it): the instant of the click on the timeline the
/// player is drawn along, and where the view looked then. The server fires
/// from the eye as drawn at that instant, along these angles; movement
/// stays on the tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Click {
    /// When, in ticks from the state two ticks before the command's end
    /// (1/256 steps on the wire): 0..1, drawn between the states after the
    /// two commands before this one; 1..2, during this command's own tick.
    pub fraction: f32,
    /// The view at the click, radians.
    pub yaw: f32,
    pub pitch: f32,
}

/// Largest click fraction: the last step of the grid before 2.
pub const MAX_CLICK_FRACTION: f32 = 511.0 / 256.0;

/// One tick of input, stamped with the tick it is for.
///
/// This is the paper's `usercmd_t`: view angles, intended movement and buttons.
/// Its duration is not in the command (the tick rate is fixed and known to both
/// sides), so a client cannot claim more time than it has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserCmd {
    /// The simulation tick this command is for.
    pub tick: u32,
    /// Forward (+) / backward (-) intent, -1..=1.
    pub forward: f32,
    /// Right (+) / left (-) intent, -1..=1.
    pub right: f32,
    /// View yaw in radians; 0 looks along -Z, positive turns left (towards -X).
    pub yaw: f32,
    /// View pitch in radians; positive looks up. Within ±[`MAX_PITCH_RAD`].
    pub pitch: f32,
    pub buttons: Buttons,
    /// The server time, in ticks, at which the client was rendering the world
    /// when it made this command (latest server tick it knew of minus its
    /// interpolation delay). Lag compensation rewinds the other players to it.
    /// 0 when unknown. For a command that presses fire with a [`Click`],
    /// the render time of the frame clicked in.
    pub render_tick: f64,
    /// Where, within the tick, fire was pressed: only with fire held, and
    /// only in the command that presses it.
    #[serde(default)]
    pub click: Option<Click>,
    /// The two snapshot ticks the others were drawn between at
    /// `render_tick` (older, newer; past the newer, drawn carried on from it):
    /// the server blends (or carries on) those same two, so that what it
    /// tests is what was drawn even where a snapshot was lost or late. Only
    /// with fire held.
    #[serde(default)]
    pub drawn_between: Option<(u32, u32)>,
}

/// Most ticks between the two snapshots a shot was drawn between.
pub const MAX_DRAWN_SPAN_TICKS: u32 = 64;
/// Most ticks the older of them may lie before the command's tick.
pub const MAX_DRAWN_BACK_TICKS: u32 = 255;

/// What [`UserCmd::sanitize`] had to change, for counting misbehaving clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sanitized {
    /// A field was NaN or infinite and was replaced.
    pub non_finite: bool,
    /// A field was outside its range and was clamped.
    pub clamped: bool,
}

impl Sanitized {
    pub fn any(self) -> bool {
        self.non_finite || self.clamped
    }
}

impl UserCmd {
    /// Whether it would move or act (walk, jump, crouch, fire, reload): a
    /// watcher's client sends none of these; looking around is no act.
    pub fn acts(&self) -> bool {
        let acting = Buttons(Buttons::FIRE.0 | Buttons::JUMP.0 | Buttons::CROUCH.0 | Buttons::RELOAD.0);
        self.forward != 0.0 || self.right != 0.0 || self.buttons.0 & acting.0 != 0 || self.click.is_some()
    }

    /// Forces every field into its valid range. Commands come from the network and
    /// are untrusted: NaN becomes 0, movement intent is clamped to the unit disc
    /// (diagonal input is never faster), angles are wrapped and clamped, unknown
    /// button bits are dropped.
    pub fn sanitize(&mut self) -> Sanitized {
        let mut report = Sanitized::default();
        for value in [&mut self.forward, &mut self.right, &mut self.yaw, &mut self.pitch] {
            if !value.is_finite() {
                *value = 0.0;
                report.non_finite = true;
            }
        }
        if !self.render_tick.is_finite() || self.render_tick < 0.0 {
            self.render_tick = 0.0;
            report.non_finite = true;
        }
        let forward = self.forward.clamp(-1.0, 1.0);
        let right = self.right.clamp(-1.0, 1.0);
        let (mut forward, mut right) = (forward, right);
        let len_sq = forward * forward + right * right;
        // The small allowance makes this idempotent: an already normalised
        // vector (length 1 within rounding) is left bit for bit as it is, so
        // the server runs exactly the command the client predicted with.
        if len_sq > 1.0 + 1.0e-5 {
            let len = len_sq.sqrt();
            forward /= len;
            right /= len;
        }
        // Exact comparison: small rounding from the normalisation is not misbehaviour.
        if (forward - self.forward).abs() > 1e-4 || (right - self.right).abs() > 1e-4 {
            report.clamped = true;
        }
        self.forward = forward;
        self.right = right;

        let yaw = wrap_angle(self.yaw);
        if (yaw - self.yaw).abs() > 1e-4 {
            // Wrapping is harmless; only count an absurd yaw (more than a few turns).
            if self.yaw.abs() > 64.0 {
                report.clamped = true;
            }
        }
        self.yaw = yaw;
        let pitch = self.pitch.clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
        if (pitch - self.pitch).abs() > 1e-3 {
            report.clamped = true;
        }
        self.pitch = pitch;

        if self.buttons.0 & !Buttons::ALL.0 != 0 {
            report.clamped = true;
            self.buttons.0 &= Buttons::ALL.0;
        }
        if let Some(click) = self.click.as_mut() {
            for value in [&mut click.fraction, &mut click.yaw, &mut click.pitch] {
                if !value.is_finite() {
                    *value = 0.0;
                    report.non_finite = true;
                }
            }
            let fraction = click.fraction.clamp(0.0, MAX_CLICK_FRACTION);
            let pitch = click.pitch.clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
            if fraction != click.fraction || (pitch - click.pitch).abs() > 1e-3 || click.yaw.abs() > 64.0 {
                report.clamped = true;
            }
            (click.fraction, click.yaw, click.pitch) = (fraction, wrap_angle(click.yaw), pitch);
        }
        if let Some((older, newer)) = self.drawn_between {
            let (back, span) = (self.tick.wrapping_sub(older), newer.wrapping_sub(older));
            if !(1..=MAX_DRAWN_SPAN_TICKS).contains(&span) || back > MAX_DRAWN_BACK_TICKS || !self.held(Buttons::FIRE) {
                report.clamped |= self.held(Buttons::FIRE);
                self.drawn_between = None;
            }
        }
        if self.click.is_some() && !self.held(Buttons::FIRE) {
            // A click says where a shot went: without fire, there is none.
            report.clamped = true;
            self.click = None;
        }
        report
    }

    pub fn held(&self, button: Buttons) -> bool {
        self.buttons.contains(button)
    }
}

/// Wraps an angle in radians into [-π, π).
pub fn wrap_angle(angle: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    if (-PI..PI).contains(&angle) {
        return angle;
    }
    let wrapped = (angle + PI).rem_euclid(TAU) - PI;
    // rem_euclid can round up to exactly TAU for tiny negative inputs.
    if wrapped >= PI { wrapped - TAU } else { wrapped }
}

/// An angle `t` (0..1) of the way from `a` to `b`, the short way round.
pub fn lerp_angle(a: f32, b: f32, t: f32) -> f32 {
    wrap_angle(a + wrap_angle(b - a) * t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shots_drawn_snapshots_are_kept_only_within_their_bounds() {
        let shot = |pair| {
            let mut c = UserCmd { tick: 1000, buttons: Buttons::FIRE, drawn_between: Some(pair), ..Default::default() };
            let report = c.sanitize();
            (c.drawn_between, report.clamped)
        };
        assert_eq!(shot((990, 991)), (Some((990, 991)), false));
        assert_eq!(shot((745, 809)), (Some((745, 809)), false), "255 back, 64 apart: the bounds");
        assert_eq!(shot((744, 745)), (None, true), "older than 255 ticks");
        assert_eq!(shot((990, 990)), (None, true), "no span");
        assert_eq!(shot((991, 990)), (None, true), "the wrong way round");
        assert_eq!(shot((900, 965)), (None, true), "65 apart");
        // Without fire, dropped quietly.
        let mut c = UserCmd { tick: 1000, drawn_between: Some((990, 991)), ..Default::default() };
        assert!(!c.sanitize().clamped);
        assert_eq!(c.drawn_between, None);
    }

    #[test]
    fn sanitize_replaces_nan_and_clamps() {
        let mut cmd = UserCmd {
            forward: f32::NAN,
            right: 5.0,
            yaw: f32::INFINITY,
            pitch: 3.0,
            buttons: Buttons(0xff),
            render_tick: f64::NAN,
            ..Default::default()
        };
        let report = cmd.sanitize();
        assert!(report.non_finite && report.clamped);
        assert_eq!(cmd.forward, 0.0);
        assert_eq!(cmd.right, 1.0);
        assert_eq!(cmd.yaw, 0.0);
        assert_eq!(cmd.pitch, MAX_PITCH_RAD);
        assert_eq!(cmd.buttons, Buttons::ALL);
        assert_eq!(cmd.render_tick, 0.0);
    }

    #[test]
    fn a_click_is_bounded_and_only_comes_with_fire() {
        let wild = Click { fraction: 7.0, yaw: f32::NAN, pitch: -9.0 };
        let mut cmd = UserCmd { buttons: Buttons::FIRE, click: Some(wild), ..Default::default() };
        let report = cmd.sanitize();
        assert!(report.non_finite && report.clamped);
        assert_eq!(cmd.click, Some(Click { fraction: MAX_CLICK_FRACTION, yaw: 0.0, pitch: -MAX_PITCH_RAD }));
        let mut cmd = UserCmd { click: Some(Click::default()), ..Default::default() };
        assert!(cmd.sanitize().clamped);
        assert_eq!(cmd.click, None, "no fire, no click");
        let fine = Click { fraction: 0.5, yaw: 1.0, pitch: 0.1 };
        let mut cmd = UserCmd { buttons: Buttons::FIRE, click: Some(fine), ..Default::default() };
        assert!(!cmd.sanitize().any());
        assert_eq!(cmd.click, Some(fine));
    }

    #[test]
    fn diagonal_input_is_not_faster() {
        let mut cmd = UserCmd { forward: 1.0, right: 1.0, ..Default::default() };
        cmd.sanitize();
        let len = (cmd.forward * cmd.forward + cmd.right * cmd.right).sqrt();
        assert!((len - 1.0).abs() < 1e-6);
    }

    #[test]
    fn valid_commands_are_left_alone() {
        let mut cmd =
            UserCmd { forward: 0.5, right: -0.5, yaw: 1.0, pitch: -0.3, buttons: Buttons::JUMP, ..Default::default() };
        let before = cmd;
        assert!(!cmd.sanitize().any());
        assert_eq!(cmd, before);
    }

    #[test]
    fn sanitizing_twice_changes_nothing() {
        let mut rng = 0x2545_f491_u32;
        for _ in 0..10_000 {
            let mut next = || {
                rng ^= rng << 13;
                rng ^= rng >> 17;
                rng ^= rng << 5;
                (rng as f32 / u32::MAX as f32) * 4.0 - 2.0
            };
            let mut cmd =
                UserCmd { forward: next(), right: next(), yaw: next() * 10.0, pitch: next(), ..Default::default() };
            cmd.sanitize();
            let once = cmd;
            cmd.sanitize();
            assert_eq!(
                (once.forward.to_bits(), once.right.to_bits(), once.yaw.to_bits(), once.pitch.to_bits()),
                (cmd.forward.to_bits(), cmd.right.to_bits(), cmd.yaw.to_bits(), cmd.pitch.to_bits())
            );
        }
    }

    #[test]
    fn wrap_angle_stays_in_range() {
        for a in [-100.0f32, -7.0, -3.2, 0.0, 3.2, 7.0, 1000.0, -1e-9] {
            let w = wrap_angle(a);
            assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&w), "{a} -> {w}");
        }
    }
}
