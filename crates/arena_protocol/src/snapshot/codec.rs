//! The snapshot codec: a frame and its feedback into bits and back, whole or
//! as a delta against a [`Baseline`]. Every state goes field by field as its
//! table in `fields.rs` says; decoding trusts nothing (ids, counts, ranges,
//! trailing bits).

use std::collections::BTreeMap;

use arena_sim::PlayerId;

use super::baseline::{Baseline, MAX_MOTION_GAP_TICKS};
use super::fields::{Delta, Fields, MAX_FIELDS, turn, turned};
use super::state::{Feedback, Frame, OwnState, RemoteState};
use crate::bits::{BitsError, BitsIn, BitsOut};

/// Bits of a player id on the wire (ids below 128).
const ID_BITS: u32 = 7;
/// Bits of a count of players.
const COUNT_BITS: u32 = 7;
/// Widths of the feedback's tick offsets and margin.
const TICK_OFFSET: [u32; 4] = [4, 8, 16, 32];
const MARGIN: [u32; 3] = [7, 10, 16];
/// Widths of the time after its tick a snapshot left (a tick in 9 bits).
const SENT_AFTER: [u32; 3] = [8, 12, 16];
/// How far back a baseline may be, ticks.
const BASELINE_AGE: [u32; 3] = [5, 8, 16];
/// Widths of the span between the baseline and the older snapshot, less one.
const MOTION_GAP: [u32; 2] = [3, 4];

/// Why a snapshot did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    Bits(BitsError),
    /// A delta against a snapshot this client does not have (any more).
    UnknownBaseline(u32),
    /// A player twice, an id out of range, a removal of someone absent, or a
    /// field beyond its range (a position beyond the world's bounds).
    Inconsistent,
}

impl From<BitsError> for SnapshotError {
    fn from(e: BitsError) -> Self {
        SnapshotError::Bits(e)
    }
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Bits(e) => write!(f, "snapshot does not decode: {e}"),
            SnapshotError::UnknownBaseline(t) => write!(f, "snapshot is a delta against tick {t}, which is not kept"),
            SnapshotError::Inconsistent => f.write_str("snapshot is inconsistent"),
        }
    }
}

impl std::error::Error for SnapshotError {}

fn write_whole(out: &mut BitsOut, bits: u32, signed: bool, v: i32) {
    if signed { out.signed(bits, v) } else { out.unsigned(bits, v as u32) }
}

fn read_whole(input: &mut BitsIn, bits: u32, signed: bool) -> Result<i32, SnapshotError> {
    Ok(if signed { input.signed(bits)? } else { input.unsigned(bits)? as i32 })
}

/// A state, field by field as its table says: whole, or against the state
/// expected of it (`old`).
pub(super) fn write_state<S: Fields>(out: &mut BitsOut, new: &S, old: Option<&S>) {
    let new = new.values();
    let Some(old) = old.map(S::values) else {
        for (field, v) in S::TABLE.iter().zip(new) {
            write_whole(out, field.bits, field.signed, v);
        }
        return;
    };
    for i in 0..S::TABLE.len() {
        out.flag(new[i] != old[i]);
    }
    for (i, field) in S::TABLE.iter().enumerate() {
        if new[i] == old[i] {
            continue;
        }
        match field.delta {
            Delta::Difference(widths) => out.var_signed(new[i].wrapping_sub(old[i]), widths),
            Delta::Turn(widths) => out.var_signed(turn(new[i], old[i], field.bits), widths),
            Delta::Whole => write_whole(out, field.bits, field.signed, new[i]),
        }
    }
}

pub(super) fn read_state<S: Fields>(input: &mut BitsIn, old: Option<&S>) -> Result<S, SnapshotError> {
    let mut v = [0i32; MAX_FIELDS];
    match old.map(S::values) {
        None => {
            for (field, v) in S::TABLE.iter().zip(&mut v) {
                *v = read_whole(input, field.bits, field.signed)?;
            }
        }
        Some(old) => {
            let mut changed = [false; MAX_FIELDS];
            for c in changed.iter_mut().take(S::TABLE.len()) {
                *c = input.flag()?;
            }
            for (i, field) in S::TABLE.iter().enumerate() {
                v[i] = if !changed[i] {
                    old[i]
                } else {
                    match field.delta {
                        Delta::Difference(widths) => old[i].wrapping_add(input.var_signed(widths)?),
                        Delta::Turn(widths) => turned(old[i], i64::from(input.var_signed(widths)?), field.bits),
                        Delta::Whole => read_whole(input, field.bits, field.signed)?,
                    }
                };
            }
        }
    }
    S::from_values(&v).ok_or(SnapshotError::Inconsistent)
}

fn write_offset(out: &mut BitsOut, v: Option<i32>, widths: &[u32]) {
    out.flag(v.is_some());
    if let Some(v) = v {
        out.var_signed(v, widths);
    }
}

fn read_offset(input: &mut BitsIn, widths: &[u32]) -> Result<Option<i32>, SnapshotError> {
    Ok(if input.flag()? { Some(input.var_signed(widths)?) } else { None })
}

/// What a snapshot says of itself, readable without its baselines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub tick: u32,
    /// The snapshot it is a delta against (`None`: whole).
    pub baseline: Option<u32>,
    /// The older snapshot that says how everyone was moving at the baseline.
    pub before: Option<u32>,
}

fn write_header(out: &mut BitsOut, h: &Header) {
    out.unsigned(32, h.tick);
    out.flag(h.baseline.is_some());
    if let Some(base) = h.baseline {
        out.var_unsigned(h.tick.wrapping_sub(base), &BASELINE_AGE);
        out.flag(h.before.is_some());
        if let Some(before) = h.before {
            out.var_unsigned(base.wrapping_sub(before).wrapping_sub(1), &MOTION_GAP);
        }
    }
}

fn read_header(input: &mut BitsIn) -> Result<Header, SnapshotError> {
    let tick = input.unsigned(32)?;
    let mut header = Header { tick, baseline: None, before: None };
    if input.flag()? {
        let age = input.var_unsigned(&BASELINE_AGE)?;
        if age == 0 {
            return Err(SnapshotError::Inconsistent);
        }
        let base = tick.wrapping_sub(age);
        header.baseline = Some(base);
        if input.flag()? {
            let gap = input.var_unsigned(&MOTION_GAP)? + 1;
            if gap > MAX_MOTION_GAP_TICKS {
                return Err(SnapshotError::Inconsistent);
            }
            header.before = Some(base.wrapping_sub(gap));
        }
    }
    Ok(header)
}

/// Encodes `frame` (and the feedback for its client) as a delta against
/// `baseline`, or whole without one. A `before` more than
/// [`MAX_MOTION_GAP_TICKS`] behind the baseline (or not behind it) is not used.
///
/// Layout, in order (widths in bits; `v[a,b,..]` is a prefix of ones ended
/// by a zero that picks the first width holding the value; `?` a flag that
/// says whether what follows in brackets is there):
///
/// ```text
/// header     tick 32 | delta? [tick - baseline v[5,8,16] | motion? [baseline - before - 1 v[3,4]]]
/// feedback   last command? [v[4,8,16,32]] | newest command? [v[4,8,16,32]] | margin? [v[7,10,16]]
///            | sent after v[8,12,16]
///            (command ticks as offsets from the snapshot's tick, the margin in hundredths of a tick,
///            the time after its tick the snapshot left in 1/256 tick)
/// own        present? [id 7 | delta? [own state against the one expected] or [own state whole]]
/// others     each player of the baseline, in id order: 0 as expected | 10 then its state against
///            the one expected | 11 gone
/// newcomers  count 7 | (id 7 | remote state whole) per newcomer
/// end        zero bits to the byte
/// ```
///
/// A state whole is each field at its width, in table order; against the
/// one expected, a bit per field (changed or not), then each changed field
/// as its delta says: a difference, a turn the short way round, or whole.
/// "Expected" carries moving and turning fields on (see `baseline.rs`).
///
/// ```text
/// own state     whole delta                        carried
/// pos.x         s26   difference [5,10,14,26]      moves
/// pos.y         s26   difference [5,10,14,26]      moves
/// pos.z         s26   difference [5,10,14,26]      moves
/// vel.x         s20   difference [5,9,13,21]       held
/// vel.y         s20   difference [5,9,13,21]       held
/// vel.z         s20   difference [5,9,13,21]       held
/// yaw           u16   turn [5,8,11,17]             turns
/// pitch         s16   difference [5,8,11,17]       held
/// flags         u7    whole                        held
/// step_phase    u16   difference [6,10,17]         held
/// health        u8    whole                        held
/// ammo          u8    whole                        held
/// fire_cooldown s16   difference [6,10,17]         held
/// reload        u16   difference [6,10,17]         held
/// spawn_count   u8    whole                        held
/// protected     u16   difference [6,10,17]         held
/// twist         s15   difference [5,9,13,16]       held
/// landing       u8    whole                        held
///
/// remote state  whole delta                        carried
/// pos.x         s26   difference [4,6,8,10,12,25]  moves
/// pos.y         s26   difference [4,6,8,10,12,25]  moves
/// pos.z         s26   difference [4,6,8,10,12,25]  moves
/// yaw           u10   turn [3,5,7,10]              turns
/// pitch         s9    difference [3,5,7,10]        held
/// flags         u5    whole                        held
/// spawn_count   u8    whole                        held
/// vel.x         s7    difference [3,5,8]           held
/// vel.z         s7    difference [3,5,8]           held
/// gait          u6    turn [2,4,6]                 turns
/// twist         s7    difference [2,4,8]           held
/// landing       u4    whole                        held
/// ```
pub fn encode(frame: &Frame, feedback: &Feedback, baseline: Option<Baseline>) -> Vec<u8> {
    let baseline = baseline.map(|b| Baseline {
        before: b.before.filter(|before| {
            let gap = b.frame.tick.wrapping_sub(before.tick);
            (1..=MAX_MOTION_GAP_TICKS).contains(&gap)
        }),
        ..b
    });
    let mut out = BitsOut::new();
    write_header(
        &mut out,
        &Header {
            tick: frame.tick,
            baseline: baseline.map(|b| b.frame.tick),
            before: baseline.and_then(|b| b.before).map(|b| b.tick),
        },
    );
    let offset = |t: Option<u32>| t.map(|t| t.wrapping_sub(frame.tick) as i32);
    write_offset(&mut out, offset(feedback.last_cmd_tick), &TICK_OFFSET);
    write_offset(&mut out, offset(feedback.newest_cmd_tick), &TICK_OFFSET);
    write_offset(&mut out, feedback.margin_centiticks.map(i32::from), &MARGIN);
    out.var_unsigned(u32::from(feedback.sent_after_256ths), &SENT_AFTER);

    out.flag(frame.own.is_some());
    if let Some((id, own)) = &frame.own {
        out.unsigned(ID_BITS, u32::from(id.0));
        let expected = baseline.and_then(|b| b.own_at(*id, frame.tick));
        out.flag(expected.is_some());
        write_state(&mut out, own, expected.as_ref());
    }

    let expected = baseline.map(|b| b.others_at(frame.tick)).unwrap_or_default();
    for (id, old) in &expected {
        match frame.others.get(id) {
            Some(new) if new == old => out.flag(false),
            Some(new) => {
                out.flag(true);
                out.flag(false);
                write_state(&mut out, new, Some(old));
            }
            None => {
                out.flag(true);
                out.flag(true);
            }
        }
    }
    let newcomers: Vec<(&PlayerId, &RemoteState)> =
        frame.others.iter().filter(|(id, _)| !expected.contains_key(id)).collect();
    out.unsigned(COUNT_BITS, newcomers.len() as u32);
    for (id, s) in newcomers {
        out.unsigned(ID_BITS, u32::from(id.0));
        write_state(&mut out, s, None);
    }
    out.finish()
}

/// The tick a snapshot is for and the snapshots it needs, without decoding
/// the rest.
pub fn header(bytes: &[u8]) -> Result<Header, SnapshotError> {
    read_header(&mut BitsIn::new(bytes))
}

/// Decodes a snapshot, finding the snapshots it is coded against (if it is
/// a delta) with `baseline_of`. Every player id is below `max_players`;
/// `tick_hz` is the server's tick rate (the carry rule's fall), as the
/// encoder's baseline had it.
pub fn decode<'a>(
    bytes: &[u8],
    baseline_of: impl Fn(u32) -> Option<&'a Frame>,
    max_players: usize,
    tick_hz: u32,
) -> Result<(Frame, Feedback), SnapshotError> {
    let mut input = BitsIn::new(bytes);
    let header = read_header(&mut input)?;
    let tick = header.tick;
    let find = |t: u32| baseline_of(t).filter(|f| f.tick == t).ok_or(SnapshotError::UnknownBaseline(t));
    let baseline = match header.baseline {
        // Without the tick rate the fall cannot be expected as the server
        // expected it: ask for a whole snapshot rather than guess.
        Some(base) if header.before.is_some() && tick_hz == 0 => return Err(SnapshotError::UnknownBaseline(base)),
        Some(base) => Some(Baseline { frame: find(base)?, before: header.before.map(find).transpose()?, tick_hz }),
        None => None,
    };
    let back = |v: Option<i32>| v.map(|v| tick.wrapping_add(v as u32));
    let last_cmd_tick = back(read_offset(&mut input, &TICK_OFFSET)?);
    let newest_cmd_tick = back(read_offset(&mut input, &TICK_OFFSET)?);
    let margin_centiticks = read_offset(&mut input, &MARGIN)?
        .map(|m| i16::try_from(m).map_err(|_| SnapshotError::Inconsistent))
        .transpose()?;
    let sent_after_256ths = u16::try_from(input.var_unsigned(&SENT_AFTER)?).map_err(|_| SnapshotError::Inconsistent)?;
    let feedback = Feedback { last_cmd_tick, newest_cmd_tick, margin_centiticks, sent_after_256ths };

    let read_id = |input: &mut BitsIn| -> Result<PlayerId, SnapshotError> {
        let id = input.unsigned(ID_BITS)?;
        if (id as usize) < max_players { Ok(PlayerId(id as u8)) } else { Err(SnapshotError::Inconsistent) }
    };
    let own = if input.flag()? {
        let id = read_id(&mut input)?;
        let is_delta = input.flag()?;
        let expected = baseline.and_then(|b| b.own_at(id, tick));
        if is_delta && expected.is_none() {
            return Err(SnapshotError::Inconsistent);
        }
        Some((id, read_state::<OwnState>(&mut input, if is_delta { expected.as_ref() } else { None })?))
    } else {
        None
    };

    // Unlisted players are where they were expected.
    let mut others: BTreeMap<PlayerId, RemoteState> = baseline.map(|b| b.others_at(tick)).unwrap_or_default();
    let known: Vec<PlayerId> = others.keys().copied().collect();
    for id in known {
        if !input.flag()? {
            continue;
        }
        if input.flag()? {
            others.remove(&id);
        } else if let Some(old) = others.get(&id).copied() {
            others.insert(id, read_state(&mut input, Some(&old))?);
        }
    }
    let newcomers = input.unsigned(COUNT_BITS)?;
    for _ in 0..newcomers {
        let id = read_id(&mut input)?;
        // A newcomer is nobody the baseline had (nor one listed twice).
        if baseline.is_some_and(|b| b.frame.others.contains_key(&id)) || others.contains_key(&id) {
            return Err(SnapshotError::Inconsistent);
        }
        others.insert(id, read_state(&mut input, None)?);
    }
    input.finish()?;
    if own.as_ref().is_some_and(|(id, _)| others.contains_key(id)) || others.len() > max_players {
        return Err(SnapshotError::Inconsistent);
    }
    Ok((Frame { tick, own, others }, feedback))
}
