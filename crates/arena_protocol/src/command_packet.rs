//! The packet a client sends every tick: its newest commands (this tick's
//! and the unacknowledged ones before it, newest first) and the newest
//! snapshot it has decoded, packed into bits. Commands are on the wire's
//! grids (axes, angles, the render time as an offset behind the command's
//! tick). Each older copy is coded against what the ones after it lead to
//! expect: the same buttons and movement, the view turned back at the rate it
//! turned between the two after it. A copy as expected (a steady run, a
//! steady turn) costs two bits; otherwise a mask of what differs follows,
//! each as a difference from the expected copy. So the copies a long round
//! trip leaves unacknowledged cost little while the input is steady (a
//! turn's rate wobbling from tick to tick, as mouse frames fall into ticks
//! unevenly, costs a byte or two a copy).
//!
//! The view's guess ([`carry_turn`]) is the demo frames' too: they run it
//! forward (a player's next command from its last two), the packet back in
//! time (each older copy from the two newer ones after it). The keys and
//! movement are each coding's own to copy; the view's turn, on the wire's
//! grids, is shared from here.

use arena_sim::cmd::{Buttons, Click, MAX_DRAWN_BACK_TICKS, MAX_DRAWN_SPAN_TICKS, UserCmd};
use arena_sim::quant::{
    AXIS_STEPS, PITCH_STEPS, axis_to_q, click_fraction_to_q, pitch_to_q, q_to_axis, q_to_click_fraction, q_to_pitch,
    q_to_yaw, render_offset_to_q, render_tick_from_q, yaw_to_q,
};

use crate::bits::{BitsError, BitsIn, BitsOut};
use crate::messages::MAX_CMDS_PER_PACKET;

const COUNT_BITS: u32 = 5;
/// Bits of the newest command's tick: its low bits, placed by the server
/// nearest its own tick (half the span, 32 s at 64 Hz, either way: a
/// command that far off is of no use anyway). Before protocol 23, all 32.
pub const CMD_TICK_BITS: u32 = 12;
/// A movement axis: 0, all the way forward (right), all the way back
/// (left), or another value that follows as s8. Keys give the first
/// three: two bits instead of eight.
const AXIS_ZERO: u32 = 0;
const AXIS_FULL: u32 = 1;
const AXIS_BACK: u32 = 2;
const AXIS_OTHER: u32 = 3;
/// Widths of an older copy's axis as a difference from the copy after it:
/// a stick or a strafe that eases in moves a step or two a tick (three
/// bits), a key's press or release goes whole (127 steps: eleven).
const AXIS_DELTA: [u32; 3] = [2, 4, 9];
/// Bits of a click's fraction: two ticks in 1/256 steps.
const CLICK_BITS: u32 = 9;
/// Widths of the gap between two commands' ticks, less two (when they are
/// not consecutive).
const TICK_GAP: [u32; 3] = [3, 8, 32];
/// Widths of an angle's difference from the expected one, yaw steps (1/65536
/// turn; pitch steps are half that): a turn's rate changing by up to 0.02°,
/// 0.09°, 0.35°, 1.4°, 22° a tick, any.
const ANGLE_DELTA: [u32; 6] = [3, 5, 7, 9, 13, 17];
/// Widths of the render-time offset and its differences, 1/256 tick (the
/// offset is at most 256 ticks: 17 bits).
const RENDER: [u32; 2] = [12, 17];
const RENDER_DELTA: [u32; 4] = [4, 9, 16, 32];
/// Widths of the acknowledged snapshot's distance behind the newest command:
/// a round trip and the clock's head start, under 32 ticks (half a second at
/// 64 Hz) on most links (protocol 23; before, at least 8 bits).
const ACK_OFFSET: [u32; 4] = [5, 8, 12, 32];
/// Bits of how far the older of a shot's two drawn snapshots lies before
/// its command's tick (at most [`MAX_DRAWN_BACK_TICKS`]), and widths of the
/// ticks between the two, less one.
const DRAWN_BACK_BITS: u32 = 8;
const DRAWN_SPAN: [u32; 3] = [2, 4, 7];

/// What a client sends each tick, as the game sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommandPacket {
    /// The newest snapshot the client has decoded (the server deltas against
    /// it); `None` asks for a full snapshot.
    pub snapshot_ack: Option<u32>,
    /// Commands, oldest first, newest last.
    pub cmds: Vec<UserCmd>,
}

/// A command as its grid integers.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Q {
    tick: u32,
    forward: i8,
    right: i8,
    yaw: u16,
    pitch: i16,
    buttons: u8,
    render: u32,
}

impl Q {
    fn of(c: &UserCmd) -> Self {
        Self {
            tick: c.tick,
            forward: axis_to_q(c.forward),
            right: axis_to_q(c.right),
            yaw: yaw_to_q(c.yaw),
            pitch: pitch_to_q(c.pitch),
            buttons: c.buttons.0 & Buttons::ALL.0,
            // Only a shot needs the render time.
            render: if c.held(Buttons::FIRE) { render_offset_to_q(c.tick, c.render_tick) } else { u32::MAX },
        }
    }

    fn cmd(self, (click, between): Shot) -> UserCmd {
        UserCmd {
            tick: self.tick,
            forward: q_to_axis(self.forward),
            right: q_to_axis(self.right),
            yaw: q_to_yaw(self.yaw),
            pitch: q_to_pitch(self.pitch),
            buttons: Buttons(self.buttons),
            render_tick: render_tick_from_q(self.tick, self.render),
            click: click.map(|c| Click {
                fraction: q_to_click_fraction(c.fraction),
                yaw: q_to_yaw(c.yaw),
                pitch: q_to_pitch(c.pitch),
            }),
            drawn_between: between.map(|(back, span)| {
                let older = self.tick.wrapping_sub(back);
                (older, older.wrapping_add(span))
            }),
        }
    }

    /// The snapshots a shot at this command's render time is usually drawn
    /// between: the whole tick at or before it and the next (`back`, `span`).
    fn usual_between(self) -> (u32, u32) {
        (self.render.div_ceil(256), 1)
    }

    fn fires(self) -> bool {
        self.buttons & Buttons::FIRE.0 != 0
    }
}

/// What a command that fires says of its shot: its click, and the two
/// snapshots it was drawn between (ticks the older lies before the
/// command's tick, and ticks between the two).
type Shot = (Option<ClickQ>, Option<(u32, u32)>);

fn shot_of(c: &UserCmd) -> Shot {
    let between = c.drawn_between.filter(|_| c.held(Buttons::FIRE)).and_then(|(older, newer)| {
        let (back, span) = (c.tick.wrapping_sub(older), newer.wrapping_sub(older));
        ((1..=MAX_DRAWN_SPAN_TICKS).contains(&span) && back <= MAX_DRAWN_BACK_TICKS).then_some((back, span))
    });
    (ClickQ::of(c), between)
}

/// A click as its grid integers.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ClickQ {
    /// Two ticks in 1/256 steps: 9 bits.
    fraction: u16,
    yaw: u16,
    pitch: i16,
}

impl ClickQ {
    fn of(c: &UserCmd) -> Option<Self> {
        let click = c.click.filter(|_| c.held(Buttons::FIRE))?;
        Some(Self {
            fraction: click_fraction_to_q(click.fraction),
            yaw: yaw_to_q(click.yaw),
            pitch: pitch_to_q(click.pitch),
        })
    }
}

/// A command's shot, after it and only if it fires: whether there is a
/// click, then its fraction whole and its view against the command's; then
/// whether it was drawn between the usual two snapshots, and if not which
/// (none, or how far from the usual).
fn write_click(out: &mut BitsOut, q: Q, (click, between): Shot) {
    if !q.fires() {
        return;
    }
    out.flag(click.is_some());
    if let Some(c) = click {
        out.unsigned(CLICK_BITS, u32::from(c.fraction));
        out.var_signed(i32::from(c.yaw.wrapping_sub(q.yaw) as i16), &ANGLE_DELTA);
        out.var_signed(i32::from(c.pitch) - i32::from(q.pitch), &ANGLE_DELTA);
    }
    let usual = q.usual_between();
    out.flag(between == Some(usual));
    if between != Some(usual) {
        out.flag(between.is_some());
        if let Some((back, span)) = between {
            out.unsigned(DRAWN_BACK_BITS, back);
            out.var_unsigned(span - 1, &DRAWN_SPAN);
        }
    }
}

fn read_click(input: &mut BitsIn, q: Q) -> Result<Shot, BitsError> {
    if !q.fires() {
        return Ok((None, None));
    }
    let click = if input.flag()? {
        let fraction = input.unsigned(CLICK_BITS)? as u16;
        let yaw = q.yaw.wrapping_add(input.var_signed(&ANGLE_DELTA)? as u16);
        let pitch = i16::try_from(i32::from(q.pitch) + input.var_signed(&ANGLE_DELTA)?)
            .map(|p| p.clamp(-i16::MAX, i16::MAX))
            .map_err(|_| BitsError::Invalid)?;
        Some(ClickQ { fraction, yaw, pitch })
    } else {
        None
    };
    let usual = q.usual_between();
    let between = if input.flag()? {
        Some(usual)
    } else if input.flag()? {
        let back = input.unsigned(DRAWN_BACK_BITS)?;
        let span = input.var_unsigned(&DRAWN_SPAN)?.saturating_add(1);
        if span > MAX_DRAWN_SPAN_TICKS {
            return Err(BitsError::Invalid);
        }
        Some((back, span))
    } else {
        None
    };
    Ok((click, between))
}

/// What the command before `newer` is expected to be, given the one after
/// it (`newest`, if any): the same, with the view turned back as much as it
/// turned from `newer` to `newest`.
fn expected_before(newer: Q, newest: Option<Q>) -> Q {
    let (yaw, pitch) = carry_turn((newer.yaw, newer.pitch), newest.map(|n| (n.yaw, n.pitch)));
    Q { yaw, pitch, ..newer }
}

/// The render offset as a signed number ([`u32::MAX`], unknown, as -1).
fn render_signed(r: u32) -> i64 {
    if r == u32::MAX { -1 } else { i64::from(r) }
}

fn render_unsigned(v: i64) -> Result<u32, BitsError> {
    match v {
        -1 => Ok(u32::MAX),
        v if (0..=i64::from(arena_sim::quant::MAX_RENDER_OFFSET_Q)).contains(&v) => Ok(v as u32),
        _ => Err(BitsError::Invalid),
    }
}

impl CommandPacket {
    /// The packed bytes: at most [`MAX_CMDS_PER_PACKET`] commands (the newest).
    ///
    /// Layout, in order (widths in bits; `v[a,b,..]` is a prefix of ones
    /// ended by a zero that picks the first width holding the value; `?` a
    /// flag that says whether what follows in brackets is there), as the
    /// snapshot's over `snapshot::encode`:
    ///
    /// ```text
    /// count       5 (0: the packet ends with ack? = 0)
    /// newest      tick's low 12 bits | forward axis | right axis | yaw u16 | pitch s16 | buttons u5
    ///             | render? [ticks behind the command's tick × 256 v[12,17]] | its click
    /// each older  next tick? [] or [ticks apart - 2 v[3,8,32]]
    ///             | as expected? [] or [view only? | a changed bit per field said
    ///               (view only: yaw, pitch; else forward, right, yaw, pitch, buttons, render)
    ///               | each changed field, in that order:
    ///                 forward difference v[2,4,9] | right difference v[2,4,9]
    ///                 | yaw turn from the expected yaw v[3,5,7,9,13,17]
    ///                 | pitch difference v[3,5,7,9,13,17] | buttons u5
    ///                 | render difference (none as -1) v[4,9,16,32]]
    ///             | its click
    /// a click     only in a command that fires: click? [fraction × 256 u9
    ///             | yaw turn from the command's v[3,5,7,9,13,17] | pitch difference v[3,5,7,9,13,17]]
    ///             | drawn between the usual two? [] or [any? [older's ticks before the command's
    ///               u8 | span - 1 v[2,4,7]]] (usual: the whole tick at or before the render time
    ///               and the next)
    /// ack?        [newest command's tick - the snapshot acknowledged v[5,8,12,32]]
    /// end         zero bits to the byte
    /// an axis     u2: 0 none, 1 all the way (127), 2 all the way back (-127),
    ///             3 another [s8]
    /// ```
    ///
    /// The reader places the newest tick nearest its own (see [`Self::decode`]).
    ///
    /// "Expected" is `expected_before`: the command after it (newer), its buttons
    /// and movement, its view turned back as far as it turned to the newest.
    pub fn encode(&self) -> Vec<u8> {
        let skip = self.cmds.len().saturating_sub(MAX_CMDS_PER_PACKET);
        let newest_first: Vec<Q> = self.cmds.iter().skip(skip).rev().map(Q::of).collect();
        let clicks: Vec<Shot> = self.cmds.iter().skip(skip).rev().map(shot_of).collect();
        let mut out = BitsOut::new();
        out.unsigned(COUNT_BITS, newest_first.len() as u32);
        let Some(first) = newest_first.first() else {
            out.flag(false);
            return out.finish();
        };
        out.unsigned(CMD_TICK_BITS, first.tick & ((1 << CMD_TICK_BITS) - 1));
        write_axis(&mut out, first.forward);
        write_axis(&mut out, first.right);
        out.unsigned(16, u32::from(first.yaw));
        out.signed(16, i32::from(first.pitch));
        out.unsigned(Buttons::BITS, u32::from(first.buttons));
        out.flag(first.render != u32::MAX);
        if first.render != u32::MAX {
            out.var_unsigned(first.render, &RENDER);
        }
        write_click(&mut out, *first, clicks[0]);
        for (i, older) in newest_first.iter().enumerate().skip(1) {
            let newer = newest_first[i - 1];
            let expected = expected_before(newer, i.checked_sub(2).map(|j| newest_first[j]));
            let gap = newer.tick.wrapping_sub(older.tick).wrapping_sub(1);
            out.flag(gap == 0);
            if gap != 0 {
                out.var_unsigned(gap - 1, &TICK_GAP);
            }
            let (click, older) = (clicks[i], Q { tick: expected.tick, ..*older });
            out.flag(older == expected);
            if older == expected {
                write_click(&mut out, older, click);
                continue;
            }
            // Usually only the view strays from the expected copy (a turn that
            // sped up or slowed down): say so in one bit.
            let view_only = Q { yaw: expected.yaw, pitch: expected.pitch, ..older } == expected;
            out.flag(view_only);
            let changed = if view_only {
                [false, false, older.yaw != expected.yaw, older.pitch != expected.pitch, false, false]
            } else {
                [
                    older.forward != expected.forward,
                    older.right != expected.right,
                    older.yaw != expected.yaw,
                    older.pitch != expected.pitch,
                    older.buttons != expected.buttons,
                    older.render != expected.render,
                ]
            };
            let said = if view_only { &changed[2..4] } else { &changed[..] };
            for c in said {
                out.flag(*c);
            }
            if changed[0] {
                out.var_signed(i32::from(older.forward) - i32::from(expected.forward), &AXIS_DELTA);
            }
            if changed[1] {
                out.var_signed(i32::from(older.right) - i32::from(expected.right), &AXIS_DELTA);
            }
            if changed[2] {
                out.var_signed(i32::from(older.yaw.wrapping_sub(expected.yaw) as i16), &ANGLE_DELTA);
            }
            if changed[3] {
                out.var_signed(i32::from(older.pitch) - i32::from(expected.pitch), &ANGLE_DELTA);
            }
            if changed[4] {
                out.unsigned(Buttons::BITS, u32::from(older.buttons));
            }
            if changed[5] {
                out.var_signed((render_signed(older.render) - render_signed(expected.render)) as i32, &RENDER_DELTA);
            }
            write_click(&mut out, older, click);
        }
        out.flag(self.snapshot_ack.is_some());
        if let Some(ack) = self.snapshot_ack {
            out.var_unsigned(first.tick.wrapping_sub(ack), &ACK_OFFSET);
        }
        out.finish()
    }

    /// Reads a packet from untrusted bytes, placing its newest command's
    /// tick nearest `near` (the server's tick; from 2047 ticks behind the
    /// one the client sent to 2048 ahead of it, it reads it back).
    pub fn decode(bytes: &[u8], near: u32) -> Result<Self, BitsError> {
        let mut input = BitsIn::new(bytes);
        let count = input.unsigned(COUNT_BITS)? as usize;
        if count > MAX_CMDS_PER_PACKET {
            return Err(BitsError::Invalid);
        }
        let mut newest_first: Vec<Q> = Vec::with_capacity(count);
        let mut clicks: Vec<Shot> = Vec::with_capacity(count);
        if count > 0 {
            let pitch = |v: i32| i16::try_from(v).map(|p| p.clamp(-i16::MAX, i16::MAX)).map_err(|_| BitsError::Invalid);
            let first = Q {
                tick: arena_sim::tick_near(input.unsigned(CMD_TICK_BITS)?, CMD_TICK_BITS, near),
                forward: read_axis(&mut input)?,
                right: read_axis(&mut input)?,
                yaw: input.unsigned(16)? as u16,
                pitch: pitch(input.signed(16)?)?,
                buttons: input.unsigned(Buttons::BITS)? as u8,
                render: if input.flag()? {
                    render_unsigned(i64::from(input.var_unsigned(&RENDER)?))?
                } else {
                    u32::MAX
                },
            };
            newest_first.push(first);
            clicks.push(read_click(&mut input, first)?);
            for i in 1..count {
                let newer = newest_first[i - 1];
                let expected = expected_before(newer, i.checked_sub(2).map(|j| newest_first[j]));
                let gap = if input.flag()? { 0 } else { input.var_unsigned(&TICK_GAP)?.wrapping_add(1) };
                let mut older = Q { tick: newer.tick.wrapping_sub(gap).wrapping_sub(1), ..expected };
                if input.flag()? {
                    newest_first.push(older);
                    clicks.push(read_click(&mut input, older)?);
                    continue;
                }
                let mut changed = [false; 6];
                let said = if input.flag()? { &mut changed[2..4] } else { &mut changed[..] };
                for c in said {
                    *c = input.flag()?;
                }
                let axis = |input: &mut BitsIn, expected: i8| {
                    i8::try_from(i32::from(expected) + input.var_signed(&AXIS_DELTA)?).map_err(|_| BitsError::Invalid)
                };
                if changed[0] {
                    older.forward = axis(&mut input, expected.forward)?;
                }
                if changed[1] {
                    older.right = axis(&mut input, expected.right)?;
                }
                if changed[2] {
                    older.yaw = expected.yaw.wrapping_add(input.var_signed(&ANGLE_DELTA)? as u16);
                }
                if changed[3] {
                    older.pitch = pitch(i32::from(expected.pitch) + input.var_signed(&ANGLE_DELTA)?)?;
                }
                if changed[4] {
                    older.buttons = input.unsigned(Buttons::BITS)? as u8;
                }
                if changed[5] {
                    let delta = i64::from(input.var_signed(&RENDER_DELTA)?);
                    older.render = render_unsigned(render_signed(expected.render) + delta)?;
                }
                newest_first.push(older);
                clicks.push(read_click(&mut input, older)?);
            }
        }
        let snapshot_ack = if input.flag()? {
            let offset = input.var_unsigned(&ACK_OFFSET)?;
            Some(newest_first.first().map(|q| q.tick).unwrap_or(0).wrapping_sub(offset))
        } else {
            None
        };
        input.finish()?;
        let cmds = newest_first.into_iter().zip(clicks).rev().map(|(q, click)| q.cmd(click)).collect();
        Ok(Self { snapshot_ack, cmds })
    }
}

/// A movement axis on its grid (see [`AXIS_OTHER`]).
fn write_axis(out: &mut BitsOut, q: i8) {
    match i32::from(q) {
        0 => out.unsigned(2, AXIS_ZERO),
        AXIS_STEPS => out.unsigned(2, AXIS_FULL),
        v if v == -AXIS_STEPS => out.unsigned(2, AXIS_BACK),
        v => {
            out.unsigned(2, AXIS_OTHER);
            out.signed(8, v);
        }
    }
}

fn read_axis(input: &mut BitsIn) -> Result<i8, BitsError> {
    Ok(match input.unsigned(2)? {
        AXIS_ZERO => 0,
        AXIS_FULL => AXIS_STEPS as i8,
        AXIS_BACK => -AXIS_STEPS as i8,
        _ => input.signed(8)? as i8,
    })
}

/// A view on the wire's grids: yaw in 1/65536 turn (wrapping), pitch in
/// steps (within ±[`PITCH_STEPS`]).
pub(crate) type ViewQ = (u16, i16);

/// The view of the command beside `near`, given the one on `near`'s other
/// side (`far`, if any): turned on from `near` as far as it turned from
/// `far` to `near`, the pitch held on its grid; without `far`, `near`'s own.
pub(crate) fn carry_turn(near: ViewQ, far: Option<ViewQ>) -> ViewQ {
    let (yaw, pitch) = near;
    let Some((far_yaw, far_pitch)) = far else {
        return near;
    };
    let turn = yaw.wrapping_sub(far_yaw);
    let pitch = (2 * i32::from(pitch) - i32::from(far_pitch)).clamp(-PITCH_STEPS, PITCH_STEPS);
    (yaw.wrapping_add(turn), pitch as i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packet's newest command's tick: a server at that tick (or
    /// within 2048 of it) reads the packet back.
    fn newest(packet: &CommandPacket) -> u32 {
        packet.cmds.last().map_or(0, |c| c.tick)
    }

    fn cmd(tick: u32, forward: f32, yaw: f32) -> UserCmd {
        let mut c = UserCmd {
            tick,
            forward,
            right: 0.3,
            yaw,
            pitch: -0.2,
            buttons: Buttons::FIRE,
            render_tick: f64::from(tick) - 3.25,
            click: None,
            // Drawn between the usual two snapshots: a bit a copy.
            drawn_between: Some((tick - 4, tick - 3)),
        };
        c.sanitize();
        c.quantize();
        c
    }

    #[test]
    fn packets_round_trip_and_runs_of_the_same_command_are_small() {
        let cmds: Vec<UserCmd> = (0..6).map(|i| cmd(1000 + i, 1.0, 0.5)).collect();
        let packet = CommandPacket { snapshot_ack: Some(990), cmds };
        let bytes = packet.encode();
        assert_eq!(CommandPacket::decode(&bytes, newest(&packet)), Ok(packet));
        assert!(bytes.len() <= 20, "{} bytes for six commands", bytes.len());
        let turning: Vec<UserCmd> = (0..6).map(|i| cmd(2000 + i * 2, i as f32 * 0.2, i as f32 * 0.05)).collect();
        let packet = CommandPacket { snapshot_ack: None, cmds: turning };
        assert_eq!(CommandPacket::decode(&packet.encode(), newest(&packet)), Ok(packet));
        let empty = CommandPacket::default();
        assert_eq!(CommandPacket::decode(&empty.encode(), 77), Ok(empty));
    }

    #[test]
    fn a_steady_turn_costs_two_bits_a_copy() {
        let turning =
            |n: u32| -> Vec<UserCmd> { (0..n).map(|i| cmd(3000 + i, 1.0, 0.3 + i as f32 * 0.0187)).collect() };
        let one = CommandPacket { snapshot_ack: Some(2990), cmds: turning(1) }.encode().len();
        let packet = CommandPacket { snapshot_ack: Some(2990), cmds: turning(16) };
        let bytes = packet.encode();
        let decoded = CommandPacket::decode(&bytes, newest(&packet) + 700).expect("decodes");
        assert_eq!(decoded, packet);
        // Fifteen copies: the turn's rounding wobbles a step now and then;
        // each copy that fires pays two more bits, for its click flag and
        // its usual pair of snapshots.
        assert!(bytes.len() <= one + 12, "{} bytes for sixteen commands, {one} for one", bytes.len());
    }

    #[test]
    fn an_uneven_turn_costs_about_a_byte_a_copy() {
        // The mouse turns steadily, but a tick holds three frames or four
        // (64 Hz ticks, 240 Hz frames), so each tick turns 3 or 4 frames'
        // worth: the expected turn is a step off, or a frame's turn off.
        let mut yaw = 0.3f32;
        let cmds: Vec<UserCmd> = (0..16)
            .map(|i| {
                yaw += if i % 4 == 3 { 3.0 } else { 4.0 } * 0.005;
                cmd(4000 + i, 1.0, yaw)
            })
            .collect();
        let one = CommandPacket { snapshot_ack: Some(3990), cmds: cmds[..1].to_vec() }.encode().len();
        let packet = CommandPacket { snapshot_ack: Some(3990), cmds };
        let bytes = packet.encode();
        assert_eq!(CommandPacket::decode(&bytes, newest(&packet)), Ok(packet));
        assert!(bytes.len() <= one + 26, "{} bytes for sixteen commands, {one} for one", bytes.len());
    }

    #[test]
    fn a_click_costs_bits_only_in_the_command_that_fires_with_one() {
        let held: Vec<UserCmd> = (0..6).map(|i| cmd(5000 + i, 1.0, 0.5)).collect();
        let plain = CommandPacket { snapshot_ack: Some(4990), cmds: held.clone() };
        let mut clicked = plain.clone();
        let last = clicked.cmds.last_mut().expect("six");
        last.click = Some(Click { fraction: 0.37, yaw: 0.52, pitch: -0.19 });
        last.quantize();
        let (a, b) = (plain.encode(), clicked.encode());
        assert_eq!(CommandPacket::decode(&b, newest(&clicked) - 2000), Ok(clicked));
        assert!(b.len() <= a.len() + 5, "a click costs {} bytes", b.len() - a.len());
        // Without fire there is no click bit at all.
        let walking: Vec<UserCmd> =
            held.iter().map(|c| UserCmd { buttons: Buttons::default(), render_tick: 0.0, ..*c }).collect();
        let walking = CommandPacket { snapshot_ack: Some(4990), cmds: walking };
        assert!(walking.encode().len() < a.len(), "fire-held commands pay a bit each for the click flag");
    }

    #[test]
    fn anything_round_trips() {
        let mut rng = arena_sim::rng::SplitMix64::new(12);
        for _ in 0..2000 {
            let mut tick = rng.next_u64() as u32;
            let count = rng.below(MAX_CMDS_PER_PACKET + 1);
            let cmds: Vec<UserCmd> = (0..count)
                .map(|_| {
                    // Gaps of any size, wrapping included; pitch at its limits.
                    tick = tick.wrapping_add(1 + if rng.next_f32() < 0.2 { rng.below(1 << 20) as u32 } else { 0 });
                    let buttons = Buttons(rng.below(32) as u8);
                    let mut c = UserCmd {
                        tick,
                        forward: rng.range(-1.0, 1.0),
                        right: if rng.next_f32() < 0.5 { 0.0 } else { 1.0 },
                        yaw: rng.range(-4.0, 4.0),
                        pitch: if rng.next_f32() < 0.3 { 1.6 } else { rng.range(-1.6, 1.6) },
                        buttons,
                        render_tick: f64::from(tick) - f64::from(rng.range(-2.0, 70.0)),
                        // Clicks anywhere, the view at any angle from the tick's.
                        click: (rng.next_f32() < 0.4).then(|| Click {
                            fraction: rng.next_f32(),
                            yaw: rng.range(-4.0, 4.0),
                            pitch: if rng.next_f32() < 0.2 { -1.6 } else { rng.range(-1.6, 1.6) },
                        }),
                        // Pairs anywhere within the bounds, wrapping included.
                        drawn_between: (rng.next_f32() < 0.6).then(|| {
                            let older = tick.wrapping_sub(rng.below(256) as u32);
                            (older, older.wrapping_add(1 + rng.below(64) as u32))
                        }),
                    };
                    c.sanitize();
                    c.quantize();
                    c
                })
                .collect();
            // An empty packet says nothing (not even an acknowledgement).
            let ack = (count > 0 && rng.next_f32() < 0.8).then(|| rng.next_u64() as u32);
            let packet = CommandPacket { snapshot_ack: ack, cmds };
            assert_eq!(CommandPacket::decode(&packet.encode(), newest(&packet)), Ok(packet));
        }
    }

    #[test]
    fn the_layout_block_over_encode_names_the_widths_in_use() {
        let source = include_str!("command_packet.rs");
        let v = |widths: &[u32]| format!("v[{}]", widths.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
        for widths in [&TICK_GAP[..], &ANGLE_DELTA, &RENDER, &RENDER_DELTA, &ACK_OFFSET, &AXIS_DELTA] {
            assert!(source.contains(&v(widths)), "{} is not in the layout block", v(widths));
        }
        assert!(source.contains(&format!("count       {COUNT_BITS} ")));
    }

    #[test]
    fn the_newest_tick_reads_back_from_2047_ahead_to_2048_behind_and_keys_cost_two_bits_an_axis() {
        // A key run: all the way forward, no strafe, no fire.
        let run = |tick: u32| {
            let mut c = UserCmd { tick, forward: 1.0, right: 0.0, yaw: 0.4, pitch: -0.1, ..UserCmd::default() };
            c.quantize();
            c
        };
        let packet = CommandPacket { snapshot_ack: Some(u32::MAX - 5), cmds: vec![run(3)] };
        let bytes = packet.encode();
        for server in [3u32, 3 + 2048, 3u32.wrapping_sub(2047), u32::MAX] {
            assert_eq!(CommandPacket::decode(&bytes, server), Ok(packet.clone()), "at server tick {server}");
        }
        assert_ne!(CommandPacket::decode(&bytes, 3 + 2049).map(|p| p.cmds[0].tick), Ok(3));
        // count 5, tick 12, axes 2 + 2, view 32, buttons 5, no render, no
        // click, ack 1 + 1 + 5: 65 bits (protocol 22: 96).
        assert_eq!(bytes.len(), 9, "{bytes:?}");
        // Another value of an axis goes whole.
        let mut half = run(3);
        half.right = -0.5;
        half.quantize();
        let packet = CommandPacket { snapshot_ack: None, cmds: vec![run(1), run(2), half] };
        assert_eq!(CommandPacket::decode(&packet.encode(), 0), Ok(packet));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut rng = arena_sim::rng::SplitMix64::new(1);
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if let Ok(p) = CommandPacket::decode(&bytes, rng.next_u64() as u32) {
                assert!(p.cmds.len() <= MAX_CMDS_PER_PACKET);
            }
        }
    }

    #[test]
    fn a_steady_turn_is_carried_on_either_way_in_time() {
        // Forward: 100, 130 -> 160; back: 160, 130 -> 100.
        assert_eq!(carry_turn((130, -20), Some((100, -10))), (160, -30));
        assert_eq!(carry_turn((130, -20), Some((160, -30))), (100, -10));
        // Without a second command the view stays.
        assert_eq!(carry_turn((130, -20), None), (130, -20));
    }

    #[test]
    fn the_yaw_wraps_and_the_pitch_stops_at_its_limits() {
        assert_eq!(carry_turn((5, 0), Some((u16::MAX - 4, 0))), (15, 0));
        assert_eq!(carry_turn((u16::MAX - 4, 0), Some((5, 0))), (u16::MAX - 14, 0));
        let top = PITCH_STEPS as i16;
        assert_eq!(carry_turn((0, top - 10), Some((0, top - 200))).1, top);
        assert_eq!(carry_turn((0, -top + 10), Some((0, -top + 200))).1, -top);
    }
}
