//! [`FrameCodec`]: a frame's layout, encoded and decoded.
//!
//! The flags of what the frame holds, joins and leaves, each player's tick
//! (coded against the per-chunk memory of each player's last two commands,
//! which the codec keeps), the events, the keyframe.

use arena_sim::{ItemSlot, Taken, quant};

use super::command::LastCmds;
use super::grids::{zone_byte, zone_of};
use super::model::{
    DemoBlast, DemoChat, DemoFrag, DemoFrame, DemoHit, DemoPlayerInfo, DemoRocket, DemoShot, FragScore, FrameError,
    KeyPlayer, MAX_FRAME_CHAT, MAX_FRAME_EVENTS, MAX_FRAME_ITEMS, MAX_FRAME_PLAYERS, MAX_ITEM_AGE_TICKS,
};
use super::player_tick::{get_player, put_player};
use super::state::{get_state, put_state};
use super::varint::{In, Out};
use crate::bounds::MAX_COORDINATE_M;
use crate::chat::MAX_CHAT_BYTES;

/// The per-chunk memory of the coding: each player's last two commands.
/// Both sides reset it at a chunk's start.
#[derive(Clone, Debug, Default)]
pub struct FrameCodec {
    last: LastCmds,
    /// Reading a file older than [`FRAG_SCORE_FORMAT`]: a frag's zone byte
    /// is the zone alone, and the scoring bits are no zone.
    before_frag_scores: bool,
}

/// The first demo format whose frags say how they were scored (a team
/// kill, one after the match's end).
pub const FRAG_SCORE_FORMAT: u16 = 3;

// Frame flags (a varint: the first seven fit one byte, as in format 1).
const F_JOINED: u16 = 1 << 0;
const F_LEFT: u16 = 1 << 1;
const F_SHOTS: u16 = 1 << 2;
const F_FRAGS: u16 = 1 << 3;
const F_ROCKETS: u16 = 1 << 4;
const F_BLASTS: u16 = 1 << 5;
const F_KEYFRAME: u16 = 1 << 6;
/// Chat lines.
const F_CHAT: u16 = 1 << 7;
/// The map's items (when they changed, and at every keyframe).
const F_ITEMS: u16 = 1 << 8;
const F_ALL: u16 = (1 << 9) - 1;
/// In a frag's zone byte: a team kill (format 3; format 2 never sets it).
const TEAM_KILL_BIT: u8 = 0x80;
/// In a frag's zone byte: a frag the finished match did not count (format
/// 3; never with [`TEAM_KILL_BIT`]).
const AFTER_THE_END_BIT: u8 = 0x40;

impl FrameCodec {
    /// A codec that reads frames of a file of `format` (the current one
    /// writes; [`Default`] is the current format).
    pub fn reading_format(format: u16) -> Self {
        Self { before_frag_scores: format < FRAG_SCORE_FORMAT, ..Self::default() }
    }

    /// Forgets every player's commands (at a chunk's start).
    pub fn reset(&mut self) {
        self.last.clear();
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
            (!frame.chat.is_empty(), F_CHAT),
            (frame.items.is_some(), F_ITEMS),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |acc, (_, bit)| acc | bit);
        out.var(u64::from(flags));
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
            put_player(&mut out, &mut self.last, p);
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
                let score = match f.score {
                    FragScore::Counted => 0,
                    FragScore::TeamKill => TEAM_KILL_BIT,
                    FragScore::AfterTheEnd => AFTER_THE_END_BIT,
                };
                out.u8(zone_byte(f.zone) | score);
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
        if flags & F_CHAT != 0 {
            let chat = &frame.chat[..frame.chat.len().min(MAX_FRAME_CHAT)];
            out.var(chat.len() as u64);
            for line in chat {
                out.u8(line.from.0);
                out.str(&line.name);
                out.u8(u8::from(line.team));
                out.str_upto(&line.text, MAX_CHAT_BYTES);
            }
        }
        if let Some(items) = &frame.items {
            let items = &items[..items.len().min(MAX_FRAME_ITEMS)];
            out.var(items.len() as u64);
            for slot in items {
                match slot.taken {
                    None => out.u8(0),
                    Some(t) => {
                        out.u8(1);
                        out.var(u64::from(frame.tick.wrapping_sub(t.tick).min(MAX_ITEM_AGE_TICKS)));
                        out.u8(t.by.0);
                    }
                }
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
        let flags = u16::try_from(input.var("frame flags")?)
            .ok()
            .filter(|f| f & !F_ALL == 0)
            .ok_or(FrameError::Invalid { what: "frame flags" })?;
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
            let p = get_player(&mut input, &mut self.last)?;
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
                let killer = input.id("frag")?;
                let victim = input.id("frag")?;
                let zone = input.u8("frag")?;
                let bits = zone & (TEAM_KILL_BIT | AFTER_THE_END_BIT);
                let score = match bits {
                    0 => FragScore::Counted,
                    _ if self.before_frag_scores => return Err(FrameError::Invalid { what: "hit zone" }),
                    TEAM_KILL_BIT => FragScore::TeamKill,
                    AFTER_THE_END_BIT => FragScore::AfterTheEnd,
                    _ => return Err(FrameError::Invalid { what: "frag's score" }),
                };
                frame.frags.push(DemoFrag { killer, victim, zone: zone_of(zone & !bits)?, score });
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
        if flags & F_CHAT != 0 {
            let n = input.count("chat", MAX_FRAME_CHAT)?;
            for _ in 0..n {
                let from = input.id("chat")?;
                let name = input.str("chat line's speaker")?;
                let team = match input.u8("chat")? {
                    0 => false,
                    1 => true,
                    _ => return Err(FrameError::Invalid { what: "chat line's team flag" }),
                };
                let text = input.str_upto("chat line", MAX_CHAT_BYTES)?;
                frame.chat.push(DemoChat { from, name, team, text });
            }
        }
        if flags & F_ITEMS != 0 {
            let n = input.count("items", MAX_FRAME_ITEMS)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                const W: &str = "item";
                let taken = match input.u8(W)? {
                    0 => None,
                    1 => {
                        let age = input.var(W)?;
                        if age > u64::from(MAX_ITEM_AGE_TICKS) {
                            return Err(FrameError::Invalid { what: W });
                        }
                        Some(Taken { tick: tick.wrapping_sub(age as u32), by: input.id(W)? })
                    }
                    _ => return Err(FrameError::Invalid { what: W }),
                };
                items.push(ItemSlot { taken });
            }
            frame.items = Some(items);
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
    use arena_sim::{HitZone, PlayerId, PlayerState, UserCmd};
    use glam::Vec3;

    use super::*;
    use crate::demo_frame::command::same_cmd;
    use crate::demo_frame::model::PlayerTick;
    use crate::demo_frame::player_tick::C_PITCH;
    use crate::demo_frame::state::same_state;

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
            frags: vec![DemoFrag {
                killer: PlayerId(4),
                victim: PlayerId(3),
                zone: HitZone::Head,
                score: FragScore::Counted,
            }],
            rockets: vec![DemoRocket {
                owner: PlayerId(3),
                origin: Vec3::new(0.1, 1.7, 2.3),
                dir: Vec3::new(0.0, 0.6, -0.8),
                cmd_tick: tick - 3,
            }],
            blasts: vec![DemoBlast { owner: PlayerId(3), point: Vec3::new(4.0, 0.01, 7.0) }],
            chat: Vec::new(),
            items: Some(vec![
                arena_sim::ItemSlot::default(),
                arena_sim::ItemSlot { taken: Some(arena_sim::Taken { tick: tick.wrapping_sub(100), by: PlayerId(4) }) },
            ]),
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
        // A steady run and turn: as expected exactly, an id and a mask.
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

    #[test]
    fn chat_lines_round_trip_and_a_long_one_is_refused() {
        let line = |text: &str| DemoChat { from: PlayerId(2), name: "Ada".into(), team: true, text: text.into() };
        let frame = DemoFrame { tick: 77, chat: vec![line("gg wp"), line(&"é".repeat(200))], ..Default::default() };
        let bytes = FrameCodec::default().encode(&frame);
        let back = FrameCodec::default().decode(77, &bytes).unwrap();
        assert_eq!(back.chat[0], frame.chat[0]);
        assert!(back.chat[1].text.len() <= MAX_CHAT_BYTES, "cut to the chat's limit on writing");
        // A crafted line longer than any chat line: an error, not an allocation.
        // (The flags, chat's bit, as a varint: 0x80 0x01.)
        let mut crafted = vec![0x80, 0x01, 0, 1, 2, 1, b'A', 0];
        crafted.extend_from_slice(&[0xff, 0xff, 0x03]);
        assert!(FrameCodec::default().decode(77, &crafted).is_err());
    }

    #[test]
    fn a_frags_score_round_trips_and_a_format_2_frag_reads_as_counted() {
        let frag = |score| DemoFrag { killer: PlayerId(1), victim: PlayerId(2), zone: HitZone::Limb, score };
        let mut f = frame(500);
        f.frags.extend([FragScore::TeamKill, FragScore::AfterTheEnd, FragScore::Counted].map(frag));
        let bytes = FrameCodec::default().encode(&f);
        let back = FrameCodec::default().decode(500, &bytes).unwrap();
        assert_eq!(back.frags, f.frags);
        // Format 2 wrote the zone alone (flags: frags; no players; one frag:
        // 4 kills 3, body).
        let old = FrameCodec::default().decode(500, &[0x08, 0, 1, 4, 3, 1]).unwrap();
        assert_eq!(
            old.frags,
            [DemoFrag { killer: PlayerId(4), victim: PlayerId(3), zone: HitZone::Body, score: FragScore::Counted }]
        );
        // Both marks at once is no score; any other high bit is no zone;
        // nor is a mark in a format 2 file, which never wrote one.
        assert!(FrameCodec::default().decode(500, &[0x08, 0, 1, 4, 3, 0xc1]).is_err());
        assert!(FrameCodec::default().decode(500, &[0x08, 0, 1, 4, 3, 0x21]).is_err());
        assert!(FrameCodec::reading_format(2).decode(500, &[0x08, 0, 1, 4, 3, 0x81]).is_err());
        assert!(FrameCodec::reading_format(2).decode(500, &[0x08, 0, 1, 4, 3, 0x41]).is_err());
        assert!(FrameCodec::reading_format(2).decode(500, &[0x08, 0, 1, 4, 3, 0x01]).is_ok());
        // Byte for byte: flags (frags), no players, two frags: 1 kills 2,
        // each mark over the limb.
        let only = DemoFrame {
            tick: 500,
            frags: vec![frag(FragScore::TeamKill), frag(FragScore::AfterTheEnd)],
            ..Default::default()
        };
        assert_eq!(FrameCodec::default().encode(&only), [0x08, 0, 2, 1, 2, 0x82, 1, 2, 0x42]);
    }

    #[test]
    fn the_format_holds_byte_for_byte() {
        // A frame with everything in it, then a player's run and turn (up
        // and to the left) coded against what its last two lead to expect.
        // A demo written by an earlier build of this format must still
        // read: a change here is a change of the file format (format 2
        // added armour and the quad to each state).
        let golden: [&[u8]; 4] = [
            &[
                255, 2, 1, 3, 1, 6, 72, 111, 112, 112, 101, 114, 1, 9, 2, 3, 179, 1, 208, 15, 127, 193, 174, 3, 250,
                32, 128, 16, 128, 8, 254, 51, 0, 0, 0, 144, 135, 11, 0, 8, 0, 100, 30, 0, 0, 0, 0, 0, 0, 0, 0, 4, 179,
                2, 208, 15, 127, 159, 215, 3, 250, 32, 128, 32, 128, 8, 254, 51, 0, 0, 0, 144, 135, 11, 0, 8, 0, 100,
                30, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4, 128, 30, 3, 3, 2, 18, 1, 4, 3, 0, 1, 3, 205, 204, 204, 61, 154, 153,
                217, 63, 51, 51, 19, 64, 0, 0, 0, 0, 154, 153, 25, 63, 205, 204, 76, 191, 6, 1, 3, 0, 0, 128, 64, 10,
                215, 35, 60, 0, 0, 224, 64, 2, 0, 1, 100, 4, 1, 4, 0, 5, 75, 110, 117, 116, 104, 3, 7, 180, 1, 128, 80,
                128, 8, 254, 51, 0, 0, 0, 144, 135, 11, 0, 8, 0, 100, 30, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
            &[0, 1, 3, 48, 208, 1, 204, 6],
            &[0, 1, 3, 16, 2],
            &[0, 1, 3, 16, 1],
        ];
        let (mut enc, mut dec) = (FrameCodec::default(), FrameCodec::default());
        let mut frames = vec![frame(1000)];
        for t in 1001..1004u32 {
            let k = (t - 1000) as f32;
            let mut c = cmd(t, 0.5 + 0.01 * k);
            c.pitch = 0.1 + 0.02 * k;
            c.quantize();
            frames.push(DemoFrame {
                tick: t,
                players: vec![PlayerTick { id: PlayerId(3), cmd: c, from: None, after: None }],
                ..Default::default()
            });
        }
        for (f, bytes) in frames.iter().zip(golden) {
            assert_eq!(enc.encode(f), bytes, "tick {}", f.tick);
            assert_eq!(&dec.decode(f.tick, bytes).unwrap(), f);
        }
    }
}
