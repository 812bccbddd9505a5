//! What one tick of a demo holds, and its compact encoding: every player's
//! command (coded against the one the player's last two predict, as the
//! command packet does), a player's state only where the server changed it
//! outside the shared rules (a hit, a death, a respawn, a blast's kick),
//! the tick's shots, frags, rockets and blasts, who joined and left, and
//! once a second a keyframe with everyone's whole state (to seek to, and
//! to check a replay against).
//!
//! Frames are coded in byte-aligned varints (DEFLATE then finds the
//! repeats); a command is coded against the previous ones of its player
//! *in the same chunk*, so a [`FrameCodec`] is reset at each chunk's start
//! and a chunk decodes on its own. Floats sit on their wire grids
//! ([`arena_sim::quant`]) and travel as grid integers; any that is off its
//! grid travels as its exact bits, so decoding gives back every value bit
//! for bit. Decoding is of untrusted bytes: every count is bounded, and a
//! damaged frame is a [`FrameError`], never a panic.

use std::collections::BTreeMap;

use arena_sim::cmd::{Buttons, Click};
use arena_sim::quant;
use arena_sim::{HitZone, PlayerId, PlayerState, UserCmd, Weapon};
use glam::Vec3;

use crate::bounds::MAX_COORDINATE_M;

/// Most players a frame may list (ids are a byte).
pub const MAX_FRAME_PLAYERS: usize = 256;
/// Most shots, frags, rockets or blasts of one tick a frame may list.
pub const MAX_FRAME_EVENTS: usize = 1024;
/// Longest name kept, bytes.
pub const MAX_DEMO_NAME_BYTES: usize = 64;

/// A player as a keyframe or a join names it.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoPlayerInfo {
    pub id: PlayerId,
    pub name: String,
    pub bot: bool,
}

/// Everyone's whole state at the end of a keyframe's tick.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyPlayer {
    pub info: DemoPlayerInfo,
    pub state: PlayerState,
    pub frags: i16,
    pub deaths: u16,
    /// How far behind the server's present this player's client drew the
    /// others (round trip plus interpolation delay), milliseconds; 0 for a
    /// bot, which sees the present.
    pub view_delay_ms: u16,
}

/// One player's tick: the command the server ran, and its state where the
/// shared rules alone would not give it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerTick {
    pub id: PlayerId,
    pub cmd: UserCmd,
    /// The state the command ran from, when it is not the state this
    /// player ended the previous tick with (a join, a teleport between ticks).
    pub from: Option<PlayerState>,
    /// The state at the end of the tick, when the server changed it after
    /// the command ran (damage, a death, a respawn, a kick).
    pub after: Option<PlayerState>,
}

/// A hitscan shot and what it hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoShot {
    pub shooter: PlayerId,
    /// When the others were tested, ticks (on a 1/256 tick grid).
    pub tested_tick: f64,
    pub lag_compensated: bool,
    pub hit: Option<DemoHit>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoHit {
    pub victim: PlayerId,
    pub zone: HitZone,
    pub damage: u8,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoFrag {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
}

/// A rocket leaving (exact: origin and direction as the server had them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoRocket {
    pub owner: PlayerId,
    pub origin: Vec3,
    pub dir: Vec3,
    /// The command tick that fired it.
    pub cmd_tick: u32,
}

/// A rocket's blast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoBlast {
    pub owner: PlayerId,
    pub point: Vec3,
}

/// One tick of a demo.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DemoFrame {
    pub tick: u32,
    pub joined: Vec<DemoPlayerInfo>,
    pub left: Vec<PlayerId>,
    pub players: Vec<PlayerTick>,
    pub shots: Vec<DemoShot>,
    pub frags: Vec<DemoFrag>,
    pub rockets: Vec<DemoRocket>,
    pub blasts: Vec<DemoBlast>,
    /// At the end of the tick, after everything above.
    pub keyframe: Option<Vec<KeyPlayer>>,
}

/// What is wrong with a frame's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The bytes end inside `what`.
    Truncated { what: &'static str },
    /// `what` holds a value no encoder writes.
    Invalid { what: &'static str },
    /// Bytes are left after the frame.
    Trailing { bytes: usize },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { what } => write!(f, "the frame ends inside {what}"),
            Self::Invalid { what } => write!(f, "the frame's {what} is invalid"),
            Self::Trailing { bytes } => write!(f, "{bytes} bytes follow the frame"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The per-chunk memory of the coding: each player's last two commands.
/// Both sides reset it at a chunk's start.
#[derive(Clone, Debug, Default)]
pub struct FrameCodec {
    last: BTreeMap<PlayerId, (Option<UserCmd>, UserCmd)>,
}

// Frame flags.
const F_JOINED: u8 = 1 << 0;
const F_LEFT: u8 = 1 << 1;
const F_SHOTS: u8 = 1 << 2;
const F_FRAGS: u8 = 1 << 3;
const F_ROCKETS: u8 = 1 << 4;
const F_BLASTS: u8 = 1 << 5;
const F_KEYFRAME: u8 = 1 << 6;
const F_ALL: u8 = (1 << 7) - 1;

// Command mask: what differs from the prediction.
const C_TICK: u8 = 1 << 0;
const C_FORWARD: u8 = 1 << 1;
const C_RIGHT: u8 = 1 << 2;
const C_BUTTONS: u8 = 1 << 3;
const C_YAW: u8 = 1 << 4;
const C_PITCH: u8 = 1 << 5;
/// A shot's extras follow: render time, click, drawn-between.
const C_SHOT: u8 = 1 << 6;
/// A second mask byte follows.
const C_MORE: u8 = 1 << 7;
// The second mask byte.
const M_FROM: u8 = 1 << 0;
const M_AFTER: u8 = 1 << 1;
/// The command is off the wire's grids: every field as its exact bits.
const M_RAW: u8 = 1 << 2;
const M_ALL: u8 = 0b111;

// ---------------------------------------------------------------- bytes

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn ivar(&mut self, v: i64) {
        self.var(((v << 1) ^ (v >> 63)) as u64);
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    fn vec3(&mut self, v: Vec3) {
        for c in v.to_array() {
            self.f32(c);
        }
    }
    fn str(&mut self, s: &str) {
        let mut end = s.len().min(MAX_DEMO_NAME_BYTES);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.var(end as u64);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
    /// A float on its grid as `(q << 1)`, else its exact bits `<< 1 | 1`.
    fn grid(&mut self, v: f32, to: impl Fn(f32) -> i64, from: impl Fn(i64) -> f32) {
        let q = to(v);
        if from(q).to_bits() == v.to_bits() {
            let z = ((q << 1) ^ (q >> 63)) as u64;
            self.var(z << 1);
        } else {
            self.var((u64::from(v.to_bits()) << 1) | 1);
        }
    }
}

struct In<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl In<'_> {
    fn u8(&mut self, what: &'static str) -> Result<u8, FrameError> {
        let b = *self.bytes.get(self.at).ok_or(FrameError::Truncated { what })?;
        self.at += 1;
        Ok(b)
    }
    fn var(&mut self, what: &'static str) -> Result<u64, FrameError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FrameError::Invalid { what })
    }
    fn ivar(&mut self, what: &'static str) -> Result<i64, FrameError> {
        let z = self.var(what)?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, FrameError> {
        u32::try_from(self.var(what)?).map_err(|_| FrameError::Invalid { what })
    }
    fn f32(&mut self, what: &'static str) -> Result<f32, FrameError> {
        let b = self.bytes.get(self.at..self.at + 4).ok_or(FrameError::Truncated { what })?;
        self.at += 4;
        Ok(f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    }
    fn f64(&mut self, what: &'static str) -> Result<f64, FrameError> {
        let b = self.bytes.get(self.at..self.at + 8).ok_or(FrameError::Truncated { what })?;
        self.at += 8;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(f64::from_bits(u64::from_le_bytes(a)))
    }
    fn vec3(&mut self, what: &'static str) -> Result<Vec3, FrameError> {
        Ok(Vec3::new(self.f32(what)?, self.f32(what)?, self.f32(what)?))
    }
    fn str(&mut self, what: &'static str) -> Result<String, FrameError> {
        let n = self.var(what)? as usize;
        if n > MAX_DEMO_NAME_BYTES {
            return Err(FrameError::Invalid { what });
        }
        let b = self.bytes.get(self.at..self.at + n).ok_or(FrameError::Truncated { what })?;
        self.at += n;
        String::from_utf8(b.to_vec()).map_err(|_| FrameError::Invalid { what })
    }
    fn count(&mut self, what: &'static str, max: usize) -> Result<usize, FrameError> {
        let n = self.var(what)?;
        if n > max as u64 {
            return Err(FrameError::Invalid { what });
        }
        Ok(n as usize)
    }
    fn grid(&mut self, what: &'static str, from: impl Fn(i64) -> f32) -> Result<f32, FrameError> {
        let v = self.var(what)?;
        if v & 1 == 1 {
            let bits = u32::try_from(v >> 1).map_err(|_| FrameError::Invalid { what })?;
            Ok(f32::from_bits(bits))
        } else {
            let z = v >> 1;
            let q = ((z >> 1) as i64) ^ -((z & 1) as i64);
            Ok(from(q))
        }
    }
    fn id(&mut self, what: &'static str) -> Result<PlayerId, FrameError> {
        self.u8(what).map(PlayerId)
    }
}

// ---------------------------------------------------------------- grids

// Each grid as a pair (to integer, back), the integers widened; a value
// whose integer does not fit its type goes as exact bits.
fn pos_q(v: f32) -> i64 {
    i64::from(quant::pos_to_q(v))
}
fn pos_f(q: i64) -> f32 {
    i32::try_from(q).map_or(f32::NAN, quant::q_to_pos)
}
fn vel_q(v: f32) -> i64 {
    i64::from(quant::vel_to_q(v))
}
fn vel_f(q: i64) -> f32 {
    i32::try_from(q).map_or(f32::NAN, quant::q_to_vel)
}
fn yaw_q(v: f32) -> i64 {
    i64::from(quant::yaw_to_q(v))
}
fn yaw_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_yaw)
}
fn pitch_q(v: f32) -> i64 {
    i64::from(quant::pitch_to_q(v))
}
fn pitch_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_pitch)
}
fn dist_q(v: f32) -> i64 {
    i64::from(quant::dist_to_q(v))
}
fn dist_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_dist)
}
fn stimer_q(v: f32) -> i64 {
    i64::from(quant::signed_timer_to_q(v))
}
fn stimer_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_signed_timer)
}
fn timer_q(v: f32) -> i64 {
    i64::from(quant::timer_to_q(v))
}
fn timer_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_timer)
}
fn twist_q(v: f32) -> i64 {
    i64::from(quant::twist_to_q(v))
}
fn twist_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_twist)
}
fn landing_q(v: f32) -> i64 {
    i64::from(quant::landing_to_q(v))
}
fn landing_f(q: i64) -> f32 {
    u8::try_from(q).map_or(f32::NAN, quant::q_to_landing)
}

fn zone_byte(z: HitZone) -> u8 {
    match z {
        HitZone::Head => 0,
        HitZone::Body => 1,
        HitZone::Limb => 2,
    }
}

fn zone_of(b: u8) -> Result<HitZone, FrameError> {
    match b {
        0 => Ok(HitZone::Head),
        1 => Ok(HitZone::Body),
        2 => Ok(HitZone::Limb),
        _ => Err(FrameError::Invalid { what: "hit zone" }),
    }
}

// ---------------------------------------------------------------- states

const S_ON_GROUND: u8 = 1 << 0;
const S_CROUCHED: u8 = 1 << 1;
const S_JUMP_HELD: u8 = 1 << 2;
const S_ALIVE: u8 = 1 << 3;
const S_FIRE_HELD: u8 = 1 << 4;
const S_RELOAD_HELD: u8 = 1 << 5;
const S_ROCKET: u8 = 1 << 6;
const S_ALL: u8 = (1 << 7) - 1;

fn put_state(out: &mut Out, s: &PlayerState) {
    for v in s.pos.to_array() {
        out.grid(v, pos_q, pos_f);
    }
    for v in s.vel.to_array() {
        out.grid(v, vel_q, vel_f);
    }
    out.grid(s.yaw, yaw_q, yaw_f);
    out.grid(s.pitch, pitch_q, pitch_f);
    let flags = [
        (s.on_ground, S_ON_GROUND),
        (s.crouched, S_CROUCHED),
        (s.jump_held, S_JUMP_HELD),
        (s.alive, S_ALIVE),
        (s.fire_held, S_FIRE_HELD),
        (s.reload_held, S_RELOAD_HELD),
        (s.weapon == Weapon::Rocket, S_ROCKET),
    ];
    out.u8(flags.iter().filter(|(on, _)| *on).fold(0, |acc, (_, bit)| acc | bit));
    out.grid(s.step_phase, dist_q, dist_f);
    out.u8(s.health);
    out.u8(s.ammo);
    out.grid(s.fire_cooldown_s, stimer_q, stimer_f);
    out.grid(s.reload_s, timer_q, timer_f);
    out.u8(s.spawn_count);
    out.grid(s.protected_s, timer_q, timer_f);
    out.grid(s.twist, twist_q, twist_f);
    out.grid(s.landing, landing_q, landing_f);
}

fn get_state(input: &mut In) -> Result<PlayerState, FrameError> {
    const W: &str = "player state";
    let mut p = [0.0; 3];
    for c in &mut p {
        *c = input.grid(W, pos_f)?;
    }
    let mut v = [0.0; 3];
    for c in &mut v {
        *c = input.grid(W, vel_f)?;
    }
    let yaw = input.grid(W, yaw_f)?;
    let pitch = input.grid(W, pitch_f)?;
    let flags = input.u8(W)?;
    if flags & !S_ALL != 0 {
        return Err(FrameError::Invalid { what: "player state's flags" });
    }
    let state = PlayerState {
        pos: Vec3::from_array(p),
        vel: Vec3::from_array(v),
        yaw,
        pitch,
        on_ground: flags & S_ON_GROUND != 0,
        crouched: flags & S_CROUCHED != 0,
        jump_held: flags & S_JUMP_HELD != 0,
        alive: flags & S_ALIVE != 0,
        fire_held: flags & S_FIRE_HELD != 0,
        reload_held: flags & S_RELOAD_HELD != 0,
        weapon: if flags & S_ROCKET != 0 { Weapon::Rocket } else { Weapon::Rifle },
        step_phase: input.grid(W, dist_f)?,
        health: input.u8(W)?,
        ammo: input.u8(W)?,
        fire_cooldown_s: input.grid(W, stimer_f)?,
        reload_s: input.grid(W, timer_f)?,
        spawn_count: input.u8(W)?,
        protected_s: input.grid(W, timer_f)?,
        twist: input.grid(W, twist_f)?,
        landing: input.grid(W, landing_f)?,
    };
    // A replay runs the shared rules on it: nothing they cannot take.
    if !crate::bounds::state_is_sane(&state) {
        return Err(FrameError::Invalid { what: "player state (out of bounds)" });
    }
    Ok(state)
}

/// Whether two states are the same bit for bit (what a replay must give).
pub fn same_state(a: &PlayerState, b: &PlayerState) -> bool {
    let (mut x, mut y) = (Out(Vec::with_capacity(48)), Out(Vec::with_capacity(48)));
    put_state(&mut x, a);
    put_state(&mut y, b);
    x.0 == y.0
}

// ---------------------------------------------------------------- commands

fn put_raw_cmd(out: &mut Out, c: &UserCmd) {
    out.var(u64::from(c.tick));
    for v in [c.forward, c.right, c.yaw, c.pitch] {
        out.f32(v);
    }
    out.u8(c.buttons.0);
    out.f64(c.render_tick);
    match c.click {
        Some(k) => {
            out.u8(1);
            for v in [k.fraction, k.yaw, k.pitch] {
                out.f32(v);
            }
        }
        None => out.u8(0),
    }
    match c.drawn_between {
        Some((a, b)) => {
            out.u8(1);
            out.var(u64::from(a));
            out.var(u64::from(b));
        }
        None => out.u8(0),
    }
}

fn get_raw_cmd(input: &mut In) -> Result<UserCmd, FrameError> {
    const W: &str = "command";
    let tick = input.u32(W)?;
    let (forward, right, yaw, pitch) = (input.f32(W)?, input.f32(W)?, input.f32(W)?, input.f32(W)?);
    let buttons = Buttons(input.u8(W)?);
    let render_tick = input.f64(W)?;
    let click = match input.u8(W)? {
        0 => None,
        1 => Some(Click { fraction: input.f32(W)?, yaw: input.f32(W)?, pitch: input.f32(W)? }),
        _ => return Err(FrameError::Invalid { what: "command's click" }),
    };
    let drawn_between = match input.u8(W)? {
        0 => None,
        1 => Some((input.u32(W)?, input.u32(W)?)),
        _ => return Err(FrameError::Invalid { what: "command's drawn snapshots" }),
    };
    Ok(UserCmd { tick, forward, right, yaw, pitch, buttons, render_tick, click, drawn_between })
}

/// Whether two commands are the same bit for bit.
fn same_cmd(a: &UserCmd, b: &UserCmd) -> bool {
    let (mut x, mut y) = (Out(Vec::new()), Out(Vec::new()));
    put_raw_cmd(&mut x, a);
    put_raw_cmd(&mut y, b);
    x.0 == y.0
}

/// A command as its grid integers (the command packet's).
#[derive(Clone, Copy, PartialEq, Eq)]
struct CmdQ {
    tick: u32,
    forward: i8,
    right: i8,
    buttons: u8,
    yaw: u16,
    pitch: i16,
}

impl CmdQ {
    fn of(c: &UserCmd) -> Self {
        Self {
            tick: c.tick,
            forward: quant::axis_to_q(c.forward),
            right: quant::axis_to_q(c.right),
            buttons: c.buttons.0,
            yaw: quant::yaw_to_q(c.yaw),
            pitch: quant::pitch_to_q(c.pitch),
        }
    }

    /// The next command as the last two predict it: the same keys, the view
    /// turning on at the same rate.
    fn predict(last: &UserCmd, before: Option<&UserCmd>) -> Self {
        let l = Self::of(last);
        let (dyaw, dpitch) = before.map_or((0, 0), |b| {
            let b = Self::of(b);
            (l.yaw.wrapping_sub(b.yaw), i32::from(l.pitch) - i32::from(b.pitch))
        });
        Self {
            tick: l.tick.wrapping_add(1),
            yaw: l.yaw.wrapping_add(dyaw),
            pitch: (i32::from(l.pitch) + dpitch).clamp(-quant::PITCH_STEPS, quant::PITCH_STEPS) as i16,
            ..l
        }
    }
}

/// The shot's extras on their grids: render offset, click, drawn-between.
fn put_shot_extras(out: &mut Out, c: &UserCmd) {
    let render = quant::render_offset_to_q(c.tick, c.render_tick);
    out.var(if render == u32::MAX { 0 } else { u64::from(render) + 1 });
    match c.click {
        Some(k) => {
            out.u8(1);
            out.var(u64::from(quant::click_fraction_to_q(k.fraction)));
            out.var(u64::from(quant::yaw_to_q(k.yaw)));
            out.ivar(i64::from(quant::pitch_to_q(k.pitch)));
        }
        None => out.u8(0),
    }
    match c.drawn_between {
        Some((older, newer)) => {
            out.u8(1);
            out.var(u64::from(c.tick.wrapping_sub(older)));
            out.var(u64::from(newer.wrapping_sub(older)));
        }
        None => out.u8(0),
    }
}

fn get_shot_extras(input: &mut In, c: &mut UserCmd) -> Result<(), FrameError> {
    const W: &str = "command's shot";
    let render = input.var(W)?;
    let q =
        if render == 0 { u32::MAX } else { u32::try_from(render - 1).map_err(|_| FrameError::Invalid { what: W })? };
    c.render_tick = quant::render_tick_from_q(c.tick, q);
    c.click = match input.u8(W)? {
        0 => None,
        1 => {
            let fraction = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            let yaw = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            let pitch = i16::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
            Some(Click {
                fraction: quant::q_to_click_fraction(fraction),
                yaw: quant::q_to_yaw(yaw),
                pitch: quant::q_to_pitch(pitch),
            })
        }
        _ => return Err(FrameError::Invalid { what: W }),
    };
    c.drawn_between = match input.u8(W)? {
        0 => None,
        1 => {
            let (back, span) = (input.u32(W)?, input.u32(W)?);
            let older = c.tick.wrapping_sub(back);
            Some((older, older.wrapping_add(span)))
        }
        _ => return Err(FrameError::Invalid { what: W }),
    };
    Ok(())
}

fn cmd_from_q(q: CmdQ) -> UserCmd {
    UserCmd {
        tick: q.tick,
        forward: quant::q_to_axis(q.forward),
        right: quant::q_to_axis(q.right),
        yaw: quant::q_to_yaw(q.yaw),
        pitch: quant::q_to_pitch(q.pitch),
        buttons: Buttons(q.buttons),
        ..Default::default()
    }
}

impl FrameCodec {
    /// Forgets every player's commands (at a chunk's start).
    pub fn reset(&mut self) {
        self.last.clear();
    }

    fn remember(&mut self, id: PlayerId, cmd: UserCmd) {
        let before = self.last.get(&id).map(|(_, last)| *last);
        self.last.insert(id, (before, cmd));
    }

    fn put_player(&mut self, out: &mut Out, p: &PlayerTick) {
        out.u8(p.id.0);
        let predicted = match self.last.get(&p.id) {
            Some((before, last)) => CmdQ::predict(last, before.as_ref()),
            None => CmdQ { tick: 0, forward: 0, right: 0, buttons: 0, yaw: 0, pitch: 0 },
        };
        let q = CmdQ::of(&p.cmd);
        // On the grids exactly (as every command from the wire is)?
        let mut rebuilt = cmd_from_q(q);
        let shot = p.cmd.render_tick != 0.0 || p.cmd.click.is_some() || p.cmd.drawn_between.is_some();
        if shot {
            let mut extras = Out(Vec::new());
            put_shot_extras(&mut extras, &p.cmd);
            let mut input = In { bytes: &extras.0, at: 0 };
            if get_shot_extras(&mut input, &mut rebuilt).is_err() {
                rebuilt.tick = rebuilt.tick.wrapping_add(1); // cannot match: raw
            }
        }
        let raw = !same_cmd(&rebuilt, &p.cmd);
        let more =
            (u8::from(p.from.is_some()) * M_FROM) | (u8::from(p.after.is_some()) * M_AFTER) | (u8::from(raw) * M_RAW);
        let mut mask = if more != 0 { C_MORE } else { 0 };
        if !raw {
            for (differs, bit) in [
                (q.tick != predicted.tick, C_TICK),
                (q.forward != predicted.forward, C_FORWARD),
                (q.right != predicted.right, C_RIGHT),
                (q.buttons != predicted.buttons, C_BUTTONS),
                (q.yaw != predicted.yaw, C_YAW),
                (q.pitch != predicted.pitch, C_PITCH),
                (shot, C_SHOT),
            ] {
                if differs {
                    mask |= bit;
                }
            }
        }
        out.u8(mask);
        if more != 0 {
            out.u8(more);
        }
        if raw {
            put_raw_cmd(out, &p.cmd);
        } else {
            if mask & C_TICK != 0 {
                out.ivar(i64::from(q.tick.wrapping_sub(predicted.tick) as i32));
            }
            if mask & C_FORWARD != 0 {
                out.u8(q.forward as u8);
            }
            if mask & C_RIGHT != 0 {
                out.u8(q.right as u8);
            }
            if mask & C_BUTTONS != 0 {
                out.u8(q.buttons);
            }
            if mask & C_YAW != 0 {
                out.ivar(i64::from(q.yaw.wrapping_sub(predicted.yaw) as i16));
            }
            if mask & C_PITCH != 0 {
                out.ivar(i64::from(q.pitch) - i64::from(predicted.pitch));
            }
            if shot {
                put_shot_extras(out, &p.cmd);
            }
        }
        if let Some(s) = &p.from {
            put_state(out, s);
        }
        if let Some(s) = &p.after {
            put_state(out, s);
        }
        self.remember(p.id, p.cmd);
    }

    fn get_player(&mut self, input: &mut In) -> Result<PlayerTick, FrameError> {
        const W: &str = "player's command";
        let id = input.id(W)?;
        let mask = input.u8(W)?;
        let more = if mask & C_MORE != 0 { input.u8(W)? } else { 0 };
        if more & !M_ALL != 0 || (mask & C_MORE != 0 && more == 0) {
            return Err(FrameError::Invalid { what: "command's mask" });
        }
        let cmd = if more & M_RAW != 0 {
            if mask & !C_MORE != 0 {
                return Err(FrameError::Invalid { what: "command's mask" });
            }
            get_raw_cmd(input)?
        } else {
            let mut q = match self.last.get(&id) {
                Some((before, last)) => CmdQ::predict(last, before.as_ref()),
                None => CmdQ { tick: 0, forward: 0, right: 0, buttons: 0, yaw: 0, pitch: 0 },
            };
            if mask & C_TICK != 0 {
                let d = i32::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                q.tick = q.tick.wrapping_add(d as u32);
            }
            if mask & C_FORWARD != 0 {
                q.forward = input.u8(W)? as i8;
            }
            if mask & C_RIGHT != 0 {
                q.right = input.u8(W)? as i8;
            }
            if mask & C_BUTTONS != 0 {
                q.buttons = input.u8(W)?;
            }
            if mask & C_YAW != 0 {
                let d = i16::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                q.yaw = q.yaw.wrapping_add(d as u16);
            }
            if mask & C_PITCH != 0 {
                let p = i64::from(q.pitch).checked_add(input.ivar(W)?);
                q.pitch = p.and_then(|p| i16::try_from(p).ok()).ok_or(FrameError::Invalid { what: W })?;
            }
            let mut cmd = cmd_from_q(q);
            if mask & C_SHOT != 0 {
                get_shot_extras(input, &mut cmd)?;
            }
            cmd
        };
        // The server runs sanitised commands (and its own, whose yaw may sit
        // at +pi, unwrapped): one with a field sanitising would clamp was
        // not recorded by a server, and a replay does not run it.
        let mut sane = cmd;
        let report = sane.sanitize();
        let unchanged = |a: f32, b: f32| a.to_bits() == b.to_bits();
        if report.non_finite
            || !unchanged(sane.forward, cmd.forward)
            || !unchanged(sane.right, cmd.right)
            || !unchanged(sane.pitch, cmd.pitch)
            || sane.buttons != cmd.buttons
            || sane.render_tick.to_bits() != cmd.render_tick.to_bits()
            || sane.click != cmd.click
            || cmd.yaw.abs() > 2.0 * std::f32::consts::TAU
            || ((sane.yaw - cmd.yaw).abs() > 1e-3 && (sane.yaw - cmd.yaw).abs() < std::f32::consts::TAU - 1e-3)
        {
            return Err(FrameError::Invalid { what: "command (out of range)" });
        }
        let from = if more & M_FROM != 0 { Some(get_state(input)?) } else { None };
        let after = if more & M_AFTER != 0 { Some(get_state(input)?) } else { None };
        self.remember(id, cmd);
        Ok(PlayerTick { id, cmd, from, after })
    }

    /// The frame's bytes (its tick travels beside them, in the container).
    pub fn encode(&mut self, frame: &DemoFrame) -> Vec<u8> {
        let mut out = Out(Vec::with_capacity(16 + 6 * frame.players.len()));
        let flags = [
            (!frame.joined.is_empty(), F_JOINED),
            (!frame.left.is_empty(), F_LEFT),
            (!frame.shots.is_empty(), F_SHOTS),
            (!frame.frags.is_empty(), F_FRAGS),
            (!frame.rockets.is_empty(), F_ROCKETS),
            (!frame.blasts.is_empty(), F_BLASTS),
            (frame.keyframe.is_some(), F_KEYFRAME),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, bit)| acc | bit);
        out.u8(flags);
        if flags & F_JOINED != 0 {
            let joined = &frame.joined[..frame.joined.len().min(MAX_FRAME_PLAYERS)];
            out.var(joined.len() as u64);
            for j in joined {
                put_info(&mut out, j);
            }
        }
        if flags & F_LEFT != 0 {
            let left = &frame.left[..frame.left.len().min(MAX_FRAME_PLAYERS)];
            out.var(left.len() as u64);
            for id in left {
                out.u8(id.0);
            }
        }
        let players = &frame.players[..frame.players.len().min(MAX_FRAME_PLAYERS)];
        out.var(players.len() as u64);
        for p in players {
            self.put_player(&mut out, p);
        }
        if flags & F_SHOTS != 0 {
            let shots = &frame.shots[..frame.shots.len().min(MAX_FRAME_EVENTS)];
            out.var(shots.len() as u64);
            for s in shots {
                out.u8(s.shooter.0);
                let back = ((f64::from(frame.tick) - s.tested_tick) * quant::RENDER_OFFSET_STEPS_PER_TICK).round();
                out.ivar(if back.is_finite() { back.clamp(-1e9, 1e9) as i64 } else { 0 });
                match s.hit {
                    Some(h) => {
                        out.u8(2 | u8::from(s.lag_compensated));
                        out.u8(h.victim.0);
                        out.u8(zone_byte(h.zone));
                        out.u8(h.damage);
                    }
                    None => out.u8(u8::from(s.lag_compensated)),
                }
            }
        }
        if flags & F_FRAGS != 0 {
            let frags = &frame.frags[..frame.frags.len().min(MAX_FRAME_EVENTS)];
            out.var(frags.len() as u64);
            for f in frags {
                out.u8(f.killer.0);
                out.u8(f.victim.0);
                out.u8(zone_byte(f.zone));
            }
        }
        if flags & F_ROCKETS != 0 {
            let rockets = &frame.rockets[..frame.rockets.len().min(MAX_FRAME_EVENTS)];
            out.var(rockets.len() as u64);
            for r in rockets {
                out.u8(r.owner.0);
                out.vec3(r.origin);
                out.vec3(r.dir);
                out.ivar(i64::from(frame.tick.wrapping_sub(r.cmd_tick) as i32));
            }
        }
        if flags & F_BLASTS != 0 {
            let blasts = &frame.blasts[..frame.blasts.len().min(MAX_FRAME_EVENTS)];
            out.var(blasts.len() as u64);
            for b in blasts {
                out.u8(b.owner.0);
                out.vec3(b.point);
            }
        }
        if let Some(key) = &frame.keyframe {
            let key = &key[..key.len().min(MAX_FRAME_PLAYERS)];
            out.var(key.len() as u64);
            for k in key {
                put_info(&mut out, &k.info);
                out.ivar(i64::from(k.frags));
                out.var(u64::from(k.deaths));
                out.var(u64::from(k.view_delay_ms));
                put_state(&mut out, &k.state);
            }
        }
        out.0
    }

    /// Tick `tick`'s frame from its bytes.
    pub fn decode(&mut self, tick: u32, bytes: &[u8]) -> Result<DemoFrame, FrameError> {
        let mut input = In { bytes, at: 0 };
        let flags = input.u8("frame flags")?;
        if flags & !F_ALL != 0 {
            return Err(FrameError::Invalid { what: "frame flags" });
        }
        let mut frame = DemoFrame { tick, ..Default::default() };
        if flags & F_JOINED != 0 {
            let n = input.count("joins", MAX_FRAME_PLAYERS)?;
            for _ in 0..n {
                frame.joined.push(get_info(&mut input)?);
            }
        }
        if flags & F_LEFT != 0 {
            let n = input.count("leaves", MAX_FRAME_PLAYERS)?;
            for _ in 0..n {
                frame.left.push(input.id("leaves")?);
            }
        }
        let n = input.count("players", MAX_FRAME_PLAYERS)?;
        for _ in 0..n {
            let p = self.get_player(&mut input)?;
            frame.players.push(p);
        }
        if flags & F_SHOTS != 0 {
            let n = input.count("shots", MAX_FRAME_EVENTS)?;
            for _ in 0..n {
                const W: &str = "shot";
                let shooter = input.id(W)?;
                let back = input.ivar(W)?;
                let tested_tick = f64::from(tick) - back as f64 / quant::RENDER_OFFSET_STEPS_PER_TICK;
                let kind = input.u8(W)?;
                if kind > 3 {
                    return Err(FrameError::Invalid { what: W });
                }
                let hit = if kind & 2 != 0 {
                    Some(DemoHit { victim: input.id(W)?, zone: zone_of(input.u8(W)?)?, damage: input.u8(W)? })
                } else {
                    None
                };
                frame.shots.push(DemoShot { shooter, tested_tick, lag_compensated: kind & 1 != 0, hit });
            }
        }
        if flags & F_FRAGS != 0 {
            let n = input.count("frags", MAX_FRAME_EVENTS)?;
            for _ in 0..n {
                frame.frags.push(DemoFrag {
                    killer: input.id("frag")?,
                    victim: input.id("frag")?,
                    zone: zone_of(input.u8("frag")?)?,
                });
            }
        }
        if flags & F_ROCKETS != 0 {
            let n = input.count("rockets", MAX_FRAME_EVENTS)?;
            for _ in 0..n {
                const W: &str = "rocket";
                let owner = input.id(W)?;
                let (origin, dir) = (input.vec3(W)?, input.vec3(W)?);
                if !(origin.is_finite() && dir.is_finite() && origin.abs().max_element() <= MAX_COORDINATE_M) {
                    return Err(FrameError::Invalid { what: W });
                }
                let back = i32::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                frame.rockets.push(DemoRocket { owner, origin, dir, cmd_tick: tick.wrapping_sub(back as u32) });
            }
        }
        if flags & F_BLASTS != 0 {
            let n = input.count("blasts", MAX_FRAME_EVENTS)?;
            for _ in 0..n {
                let blast = DemoBlast { owner: input.id("blast")?, point: input.vec3("blast")? };
                if !(blast.point.is_finite() && blast.point.abs().max_element() <= MAX_COORDINATE_M) {
                    return Err(FrameError::Invalid { what: "blast" });
                }
                frame.blasts.push(blast);
            }
        }
        if flags & F_KEYFRAME != 0 {
            let n = input.count("keyframe", MAX_FRAME_PLAYERS)?;
            let mut key = Vec::with_capacity(n);
            for _ in 0..n {
                const W: &str = "keyframe";
                let info = get_info(&mut input)?;
                let frags = i16::try_from(input.ivar(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                let deaths = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                let view_delay_ms = u16::try_from(input.var(W)?).map_err(|_| FrameError::Invalid { what: W })?;
                let state = get_state(&mut input)?;
                key.push(KeyPlayer { info, state, frags, deaths, view_delay_ms });
            }
            frame.keyframe = Some(key);
        }
        if input.at != bytes.len() {
            return Err(FrameError::Trailing { bytes: bytes.len() - input.at });
        }
        Ok(frame)
    }
}

fn put_info(out: &mut Out, p: &DemoPlayerInfo) {
    out.u8(p.id.0);
    out.u8(u8::from(p.bot));
    out.str(&p.name);
}

fn get_info(input: &mut In) -> Result<DemoPlayerInfo, FrameError> {
    let id = input.id("player")?;
    let bot = match input.u8("player")? {
        0 => false,
        1 => true,
        _ => return Err(FrameError::Invalid { what: "player's bot flag" }),
    };
    Ok(DemoPlayerInfo { id, bot, name: input.str("player's name")? })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(x: f32) -> PlayerState {
        let mut s =
            PlayerState { pos: Vec3::new(x, 0.5, -3.25), alive: true, health: 100, ammo: 30, ..Default::default() };
        s.yaw = 1.2;
        arena_sim::quant::snap_state(&s)
    }

    fn cmd(tick: u32, yaw: f32) -> UserCmd {
        let mut c = UserCmd { tick, forward: 1.0, yaw, pitch: 0.1, ..Default::default() };
        c.quantize();
        c
    }

    fn frame(tick: u32) -> DemoFrame {
        DemoFrame {
            tick,
            joined: vec![DemoPlayerInfo { id: PlayerId(3), name: "Hopper".into(), bot: true }],
            left: vec![PlayerId(9)],
            players: vec![
                PlayerTick { id: PlayerId(3), cmd: cmd(tick, 0.5), from: Some(state(1.0)), after: None },
                PlayerTick { id: PlayerId(4), cmd: cmd(tick, 0.25), from: None, after: Some(state(2.0)) },
            ],
            shots: vec![DemoShot {
                shooter: PlayerId(4),
                tested_tick: f64::from(tick) - 7.5,
                lag_compensated: true,
                hit: Some(DemoHit { victim: PlayerId(3), zone: HitZone::Limb, damage: 18 }),
            }],
            frags: vec![DemoFrag { killer: PlayerId(4), victim: PlayerId(3), zone: HitZone::Head }],
            rockets: vec![DemoRocket {
                owner: PlayerId(3),
                origin: Vec3::new(0.1, 1.7, 2.3),
                dir: Vec3::new(0.0, 0.6, -0.8),
                cmd_tick: tick - 3,
            }],
            blasts: vec![DemoBlast { owner: PlayerId(3), point: Vec3::new(4.0, 0.01, 7.0) }],
            keyframe: Some(vec![KeyPlayer {
                info: DemoPlayerInfo { id: PlayerId(4), name: "Knuth".into(), bot: false },
                state: state(5.0),
                frags: -2,
                deaths: 7,
                view_delay_ms: 180,
            }]),
        }
    }

    #[test]
    fn frames_round_trip_and_a_steady_turn_costs_two_bytes_a_player() {
        let (mut enc, mut dec) = (FrameCodec::default(), FrameCodec::default());
        let f = frame(1000);
        assert_eq!(dec.decode(1000, &enc.encode(&f)).unwrap(), f);
        // A steady run and turn: predicted exactly, an id and a mask.
        let mut sizes = Vec::new();
        for t in 1001..1010 {
            let yaw = 0.5 + 0.01 * (t - 1000) as f32;
            let f = DemoFrame {
                tick: t,
                players: vec![PlayerTick { id: PlayerId(3), cmd: cmd(t, yaw), from: None, after: None }],
                ..Default::default()
            };
            let bytes = enc.encode(&f);
            sizes.push(bytes.len());
            assert_eq!(dec.decode(t, &bytes).unwrap(), f);
        }
        // Flags, count, then id and mask; the yaw's grid rounding may wobble a step.
        assert!(sizes[3..].iter().all(|&n| n <= 5), "{sizes:?}");
    }

    #[test]
    fn values_off_their_grids_come_back_bit_for_bit() {
        let mut s = state(1.0);
        s.vel.x = 0.123_456_7;
        s.landing = 0.333;
        s.yaw = -0.0;
        let mut c = cmd(5, 0.3);
        c.forward = 0.123_456;
        let f = DemoFrame {
            tick: 5,
            players: vec![PlayerTick { id: PlayerId(1), cmd: c, from: None, after: Some(s) }],
            ..Default::default()
        };
        let back = FrameCodec::default().decode(5, &FrameCodec::default().encode(&f)).unwrap();
        let p = &back.players[0];
        assert!(same_state(p.after.as_ref().unwrap(), &s));
        assert_eq!(p.after.unwrap().yaw.to_bits(), (-0.0f32).to_bits());
        assert!(same_cmd(&p.cmd, &c));
    }

    #[test]
    fn cut_or_garbled_frames_are_errors_not_panics() {
        let mut enc = FrameCodec::default();
        let bytes = enc.encode(&frame(77));
        for cut in 0..bytes.len() {
            assert!(FrameCodec::default().decode(77, &bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert_eq!(FrameCodec::default().decode(77, &extra), Err(FrameError::Trailing { bytes: 1 }));
        // Every byte at every value: anything but a panic.
        for i in 0..bytes.len() {
            for v in 0..=255u8 {
                let mut b = bytes.clone();
                b[i] = v;
                let _ = FrameCodec::default().decode(77, &b);
            }
        }
        // A pitch difference at the edge of the varints: an error, not an overflow.
        // (The player's first command looks up a step; its second claims i64::MAX more.)
        let huge = [0, 2, 0, C_PITCH, 2, 0, C_PITCH, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(FrameCodec::default().decode(1, &huge), Err(FrameError::Invalid { what: "player's command" }));
        // Claimed counts beyond the limits are refused before any allocation.
        assert!(FrameCodec::default().decode(1, &[0, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
