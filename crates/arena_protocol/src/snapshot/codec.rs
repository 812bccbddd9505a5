//! The snapshot codec: a frame and its feedback into range-coded bytes and
//! back, whole or as a delta against a [`Baseline`]. Every state goes field by field as its
//! table in `fields.rs` says; decoding trusts nothing (ids, counts, ranges,
//! trailing bits).

use arena_sim::{ItemSlot, PlayerId, Taken};

use super::baseline::{Baseline, Expected, MAX_MOTION_GAP_TICKS};
use super::fields::{Delta, MAX_FIELDS, turn, turned};
use super::model::{
    FEEDBACK_PRESENT, HAS_MOTION, IS_DELTA, ITEM_CHANGED, ITEM_TAKEN, ITEMS_CHANGED, Known, Model, Modelled, Number,
    OWN_DELTA, OWN_PRESENT, PLAYER_CHANGED, PLAYER_GONE, changed, class_set,
};
use super::state::{Feedback, Frame, Others, OwnState, RemoteState};
use crate::range_coder::{RangeError, RangeIn, RangeOut};

/// Bits of a player id on the wire (ids below 128).
const ID_BITS: u32 = 7;
/// Most items a snapshot may list (the map check's cap).
const MAX_ITEMS: usize = arena_sim::map_check::MAX_ITEMS;
/// Longest ago an item may have been taken, ticks (the longest respawn,
/// 120 s, at the highest tick rate, with room).
const MAX_ITEM_AGE_TICKS: u32 = 1 << 16;
/// The oldest baseline a delta may name, ticks: a delta's tick is placed
/// within half its 12 bits' span of the client's newest.
const MAX_BASELINE_AGE_TICKS: u32 = (1 << (DELTA_TICK_BITS - 1)) - 1;
/// Bits of a delta's tick: its client places it nearest the newest snapshot
/// it decoded (half the span either way: 16 s at 128 Hz; a client whose
/// newest acknowledgement is older is sent a whole snapshot).
const DELTA_TICK_BITS: u32 = 12;

/// Why a snapshot did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// Bytes the range coder would not have written (left over, or a zero
    /// at the end).
    Coded(RangeError),
    /// A delta against a snapshot this client does not have (any more).
    UnknownBaseline(u32),
    /// A player twice, an id out of range, a removal of someone absent, or a
    /// field beyond its range (a position beyond the world's bounds).
    Inconsistent,
}

impl From<RangeError> for SnapshotError {
    fn from(e: RangeError) -> Self {
        SnapshotError::Coded(e)
    }
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Coded(e) => write!(f, "snapshot does not decode: {e}"),
            SnapshotError::UnknownBaseline(t) => write!(f, "snapshot is a delta against tick {t}, which is not kept"),
            SnapshotError::Inconsistent => f.write_str("snapshot is inconsistent"),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// A field sent whole: its low `bits` bits at even chances (a newcomer, a
/// snapshot without a baseline).
fn write_whole(out: &mut RangeOut, bits: u32, v: i32) {
    out.direct(bits, v as u32);
}

fn read_whole(input: &mut RangeIn, bits: u32, signed: bool) -> i32 {
    let raw = input.direct(bits);
    if signed && bits < 32 && (raw >> (bits - 1)) & 1 == 1 {
        // Sign-extended from its width.
        (raw | !((1u32 << bits) - 1)) as i32
    } else {
        raw as i32
    }
}

/// Whether `v` is a value field's whole width holds.
fn fits_whole(field: &super::fields::Field, v: i32) -> bool {
    let v = i64::from(v);
    if field.signed {
        let half = 1i64 << (field.bits - 1);
        (-half..half).contains(&v)
    } else {
        (0..1i64 << field.bits).contains(&v)
    }
}

/// A field's change as a number: its difference from the expected value (a
/// turn the short way round).
fn change_of(field: &super::fields::Field, new: i32, old: i32) -> i32 {
    match field.delta {
        Delta::Turn => turn(new, old, field.bits),
        Delta::Difference => new.wrapping_sub(old),
    }
}

fn changed_by(field: &super::fields::Field, old: i32, by: i32) -> i32 {
    match field.delta {
        Delta::Turn => turned(old, i64::from(by), field.bits),
        Delta::Difference => old.wrapping_add(by),
    }
}

/// Whether field `i` changed between the snapshot before the baseline and
/// the baseline: a field that was changing tends to go on changing.
fn moving(base: Option<&super::fields::Values>, before: Option<&super::fields::Values>, i: usize) -> bool {
    base.zip(before).is_some_and(|(base, before)| base[i] != before[i])
}

/// A state, field by field as its table says: whole, or against the state
/// expected of it (`old`): per field whether it changed (in a context that
/// knows whether the field before did and whether this one was changing
/// from the snapshot before the baseline to the baseline: `base`, `before`),
/// and if so by how much.
pub(super) fn write_state<S: Modelled>(
    model: &mut Model,
    out: &mut RangeOut,
    new: &S,
    old: Option<&S>,
    (base, before): (Option<&S>, Option<&S>),
    span: (u32, u32),
) {
    let new = new.values();
    let base = base.map(S::values);
    let before = before.map(S::values);
    let Some(old) = old.map(S::values) else {
        for (field, v) in S::TABLE.iter().zip(new) {
            write_whole(out, field.bits, v);
        }
        return;
    };
    let (mut after_change, mut largest) = (false, 0);
    // The fields coded so far, and zeros: what the decoder knows at each.
    let mut so_far = [0i32; MAX_FIELDS];
    for (i, field) in S::TABLE.iter().enumerate() {
        let known = Known { new: &so_far, base: base.as_ref(), age_ticks: span.0, tick_hz: span.1 };
        let expected = S::refine(i, old[i], &known);
        let change = new[i] != expected;
        let moving = moving(base.as_ref(), before.as_ref(), i);
        model.put(out, changed::<S>(i, after_change, moving), change);
        if change {
            let class = model.put_field::<S>(out, i, class_set(largest, moving), change_of(field, new[i], expected));
            largest = largest.max(class);
        }
        after_change = change;
        so_far[i] = new[i];
    }
}

pub(super) fn read_state<S: Modelled>(
    model: &mut Model,
    input: &mut RangeIn,
    old: Option<&S>,
    (base, before): (Option<&S>, Option<&S>),
    span: (u32, u32),
) -> Result<S, SnapshotError> {
    let mut v = [0i32; MAX_FIELDS];
    let base = base.map(S::values);
    let before = before.map(S::values);
    match old.map(S::values) {
        None => {
            for (field, v) in S::TABLE.iter().zip(&mut v) {
                *v = read_whole(input, field.bits, field.signed);
            }
        }
        Some(old) => {
            let (mut after_change, mut largest) = (false, 0);
            for (i, field) in S::TABLE.iter().enumerate() {
                let known = Known { new: &v, base: base.as_ref(), age_ticks: span.0, tick_hz: span.1 };
                let expected = S::refine(i, old[i], &known);
                let moving = moving(base.as_ref(), before.as_ref(), i);
                after_change = model.get(input, changed::<S>(i, after_change, moving));
                v[i] = if after_change {
                    let (by, class) = model
                        .get_field::<S>(input, i, class_set(largest, moving))
                        .ok_or(SnapshotError::Inconsistent)?;
                    largest = largest.max(class);
                    changed_by(field, expected, by)
                } else {
                    expected
                };
                // A difference can say any number: only what the field's
                // whole width holds is a value it can have.
                if !fits_whole(field, v[i]) {
                    return Err(SnapshotError::Inconsistent);
                }
            }
        }
    }
    S::from_values(&v).ok_or(SnapshotError::Inconsistent)
}

fn write_offset(model: &mut Model, out: &mut RangeOut, present: usize, n: Number, v: Option<i32>) {
    model.put(out, present, v.is_some());
    if let Some(v) = v {
        model.put_number(out, n, v, true);
    }
}

fn read_offset(
    model: &mut Model,
    input: &mut RangeIn,
    present: usize,
    n: Number,
) -> Result<Option<i32>, SnapshotError> {
    Ok(if model.get(input, present) {
        Some(model.get_number(input, n, true).ok_or(SnapshotError::Inconsistent)?)
    } else {
        None
    })
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

fn write_header(model: &mut Model, out: &mut RangeOut, h: &Header) {
    model.put(out, IS_DELTA, h.baseline.is_some());
    // A delta's client has snapshots near its tick: the low bits do.
    out.direct(if h.baseline.is_some() { DELTA_TICK_BITS } else { 32 }, h.tick);
    if let Some(base) = h.baseline {
        model.put_number(out, Number::BaselineAge, h.tick.wrapping_sub(base) as i32, false);
        model.put(out, HAS_MOTION, h.before.is_some());
        if let Some(before) = h.before {
            model.put_number(out, Number::MotionGap, base.wrapping_sub(before).wrapping_sub(1) as i32, false);
        }
    }
}

fn read_header(model: &mut Model, input: &mut RangeIn, near: Option<u32>) -> Result<Header, SnapshotError> {
    let is_delta = model.get(input, IS_DELTA);
    let tick = if is_delta {
        let low = input.direct(DELTA_TICK_BITS);
        // Without a snapshot of its own a client cannot place a delta (nor
        // has its baseline): it asks for a whole one.
        arena_sim::tick_near(low, DELTA_TICK_BITS, near.ok_or(SnapshotError::UnknownBaseline(low))?)
    } else {
        input.direct(32)
    };
    let mut header = Header { tick, baseline: None, before: None };
    if is_delta {
        let age = model.get_number(input, Number::BaselineAge, false).ok_or(SnapshotError::Inconsistent)?;
        if !(1..=MAX_BASELINE_AGE_TICKS as i32).contains(&age) {
            return Err(SnapshotError::Inconsistent);
        }
        let base = tick.wrapping_sub(age as u32);
        header.baseline = Some(base);
        if model.get(input, HAS_MOTION) {
            let gap = model.get_number(input, Number::MotionGap, false).ok_or(SnapshotError::Inconsistent)?;
            let gap = gap as u32 + 1;
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
pub fn encode(frame: &Frame, feedback: &Feedback, baseline: Option<Baseline>) -> Vec<u8> {
    MODEL.with_borrow_mut(|model| encode_with(model, frame, feedback, baseline))
}

thread_local! {
    /// The model this thread codes and decodes snapshots in, made once:
    /// each snapshot starts it again ([`Model::restart`], its contexts
    /// copied over) rather than allocating 15 000 contexts anew (a 128 Hz
    /// server codes 2 000 snapshots a second).
    static MODEL: std::cell::RefCell<Model> = std::cell::RefCell::new(Model::trained());
}

/// [`encode`] in a given model (a tallying one, to train the priors),
/// started again first: the trained priors, whatever it held, its tally kept.
///
/// Layout, in order; every bit but those marked "even" is range-coded in
/// its own context (`model.rs`), starting at the trained priors
/// (`priors.rs`) and following what the snapshot codes; a number is its
/// size class in unary, the two bits under its leading one, the rest even,
/// then its sign:
///
/// ```text
/// header     delta? [tick's low 12 bits (even) | tick - baseline | motion? [baseline - before - 1]]
///            or [tick (32 even)]
/// feedback   last command? [offset] | newest command? [offset] | margin? [margin] | sent after
///            (command ticks as offsets from the snapshot's tick, the margin in hundredths of a tick,
///            the time after its tick the snapshot left in 1/256 tick)
/// own        present? [id (7 even) | delta? [own state against the one expected] or [own state whole]]
/// others     each player of the baseline, in id order: changed? (in a context after one that did or
///            did not) [gone? or its state against the one expected]
/// newcomers  count | (id (7 even) | remote state whole) per newcomer
/// items      (with a baseline: changed?) [count | per item: (with a baseline's item: changed?)
///            [taken? [ticks since | by (7 even)]]]
/// ```
///
/// A state whole is each field at its width, even, in table order; against
/// the one expected, per field whether it changed (in a context that knows
/// whether the field before did and whether this one was changing before
/// the baseline), and if so its difference from the
/// expected value (an angle's the short way round). "Expected" carries
/// moving and turning fields on (see `baseline.rs`).
///
/// ```text
/// own state     whole delta       carried
/// pos.x         s26   difference  moves
/// pos.y         s26   difference  moves
/// pos.z         s26   difference  moves
/// vel.x         s20   difference  held
/// vel.y         s20   difference  held
/// vel.z         s20   difference  held
/// yaw           u16   turn        turns
/// pitch         s16   difference  held
/// flags         u7    difference  held
/// step_phase    u16   difference  held
/// health        u8    difference  held
/// ammo          u8    difference  held
/// fire_cooldown s16   difference  held
/// reload        u16   difference  held
/// spawn_count   u8    difference  held
/// protected     u16   difference  held
/// twist         s15   difference  held
/// landing       u8    difference  held
/// armour        u8    difference  held
/// quad          u18   difference  held
///
/// remote state  whole delta       carried
/// pos.x         s26   difference  moves
/// pos.y         s26   difference  moves
/// pos.z         s26   difference  moves
/// yaw           u9    turn        turns
/// pitch         s8    difference  held
/// flags         u6    difference  held
/// spawn_count   u8    difference  held
/// vel.x         s6    difference  held
/// vel.z         s6    difference  held
/// gait          u6    turn        turns
/// twist         s7    difference  held
/// landing       u4    difference  held
/// ```
pub fn encode_with(model: &mut Model, frame: &Frame, feedback: &Feedback, baseline: Option<Baseline>) -> Vec<u8> {
    model.restart();
    // A baseline too old for a delta's tick to place: whole, then.
    let baseline = baseline.filter(|b| (1..=MAX_BASELINE_AGE_TICKS).contains(&frame.tick.wrapping_sub(b.frame.tick)));
    let baseline = baseline.map(|b| Baseline {
        before: b.before.filter(|before| {
            let gap = b.frame.tick.wrapping_sub(before.tick);
            (1..=MAX_MOTION_GAP_TICKS).contains(&gap)
        }),
        ..b
    });
    let mut out = RangeOut::new();
    write_header(
        model,
        &mut out,
        &Header {
            tick: frame.tick,
            baseline: baseline.map(|b| b.frame.tick),
            before: baseline.and_then(|b| b.before).map(|b| b.tick),
        },
    );
    // How far on from the baseline, and the tick rate where both ends
    // know it alike (a delta with motion): what refines the expectations
    // (see `Modelled::refine`).
    let span = baseline
        .map(|b| (frame.tick.wrapping_sub(b.frame.tick), if b.before.is_some() { b.tick_hz } else { 0 }))
        .unwrap_or((0, 0));
    model.start_age(span.0);
    let offset = |t: Option<u32>| t.map(|t| t.wrapping_sub(frame.tick) as i32);
    write_offset(model, &mut out, FEEDBACK_PRESENT[0], Number::LastCommand, offset(feedback.last_cmd_tick));
    write_offset(model, &mut out, FEEDBACK_PRESENT[1], Number::NewestCommand, offset(feedback.newest_cmd_tick));
    write_offset(model, &mut out, FEEDBACK_PRESENT[2], Number::Margin, feedback.margin_centiticks.map(i32::from));
    model.put_number(&mut out, Number::SentAfter, i32::from(feedback.sent_after_256ths), false);

    model.put(&mut out, OWN_PRESENT, frame.own.is_some());
    if let Some((id, own)) = &frame.own {
        out.direct(ID_BITS, u32::from(id.0));
        let expected = baseline.and_then(|b| b.own_at(*id, frame.tick));
        model.put(&mut out, OWN_DELTA, expected.is_some());
        let (base, before) = baseline.map(|b| b.own_ends(*id)).unwrap_or_default();
        write_state(model, &mut out, own, expected.as_ref(), (base.as_ref(), before.as_ref()), span);
    }

    // The baseline's players and this frame's, both in id order, walked
    // together: a frame's player not in the baseline is a newcomer.
    let expected = baseline.map(|b| b.others_expected(frame.tick)).unwrap_or_default();
    let mut news = frame.others.iter().peekable();
    let mut newcomers: Vec<(&PlayerId, &RemoteState)> = Vec::new();
    let mut after_change = false;
    for Expected { id, expected: old, ends } in &expected {
        while let Some(newcomer) = news.next_if(|(new_id, _)| *new_id < id) {
            newcomers.push(newcomer);
        }
        let new = news.next_if(|(new_id, _)| *new_id == id).map(|(_, s)| s);
        let change = new != Some(old);
        model.put(&mut out, PLAYER_CHANGED + usize::from(after_change), change);
        after_change = change;
        if change {
            model.put(&mut out, PLAYER_GONE, new.is_none());
            if let Some(new) = new {
                write_state(model, &mut out, new, Some(old), *ends, span);
            }
        }
    }
    newcomers.extend(news);
    model.put_number(&mut out, Number::Newcomers, newcomers.len() as i32, false);
    for (id, s) in newcomers {
        out.direct(ID_BITS, u32::from(id.0));
        write_state(model, &mut out, s, None, (None, None), span);
    }
    write_items(model, &mut out, frame, baseline.map(|b| b.frame.items.as_slice()));
    out.finish()
}

/// The items: with a baseline, whether they are as they were; if not (or
/// without one), how many, then each (with a baseline holding it, whether
/// it changed) as taken or there, a taken one with how long ago and by whom.
fn write_items(model: &mut Model, out: &mut RangeOut, frame: &Frame, base: Option<&[ItemSlot]>) {
    if let Some(base) = base {
        // Coded as "changed": the common case a zero, which ends a
        // snapshot in no extra bytes.
        model.put(out, ITEMS_CHANGED, base != frame.items.as_slice());
        if base == frame.items.as_slice() {
            return;
        }
    }
    model.put_number(out, Number::Items, frame.items.len() as i32, false);
    for (i, slot) in frame.items.iter().enumerate() {
        if let Some(old) = base.and_then(|b| b.get(i)) {
            model.put(out, ITEM_CHANGED, old != slot);
            if old == slot {
                continue;
            }
        }
        model.put(out, ITEM_TAKEN, slot.taken.is_some());
        if let Some(taken) = slot.taken {
            let age = frame.tick.wrapping_sub(taken.tick).min(MAX_ITEM_AGE_TICKS);
            model.put_number(out, Number::ItemAge, age as i32, false);
            out.direct(ID_BITS, u32::from(taken.by.0));
        }
    }
}

fn read_items(
    model: &mut Model,
    input: &mut RangeIn,
    tick: u32,
    base: Option<&[ItemSlot]>,
    max_players: usize,
) -> Result<Vec<ItemSlot>, SnapshotError> {
    if let Some(base) = base
        && !model.get(input, ITEMS_CHANGED)
    {
        return Ok(base.to_vec());
    }
    let count = model.get_number(input, Number::Items, false).ok_or(SnapshotError::Inconsistent)?;
    // A count from the network: checked before anything is made of it.
    let count = usize::try_from(count).ok().filter(|n| *n <= MAX_ITEMS).ok_or(SnapshotError::Inconsistent)?;
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        if let Some(old) = base.and_then(|b| b.get(i))
            && !model.get(input, ITEM_CHANGED)
        {
            items.push(*old);
            continue;
        }
        let taken = if model.get(input, ITEM_TAKEN) {
            let age = model.get_number(input, Number::ItemAge, false).ok_or(SnapshotError::Inconsistent)?;
            let age =
                u32::try_from(age).ok().filter(|a| *a <= MAX_ITEM_AGE_TICKS).ok_or(SnapshotError::Inconsistent)?;
            let by = input.direct(ID_BITS);
            if by as usize >= max_players {
                return Err(SnapshotError::Inconsistent);
            }
            Some(Taken { tick: tick.wrapping_sub(age), by: PlayerId(by as u8) })
        } else {
            None
        };
        items.push(ItemSlot { taken });
    }
    Ok(items)
}

/// The tick a snapshot is for and the snapshots it needs, without decoding
/// the rest; `near` is the newest tick the client decoded (a delta's tick is
/// placed nearest it).
pub fn header(bytes: &[u8], near: Option<u32>) -> Result<Header, SnapshotError> {
    let mut input = RangeIn::new(bytes)?;
    MODEL.with_borrow_mut(|model| {
        model.restart();
        read_header(model, &mut input, near)
    })
}

/// Decodes a snapshot, finding the snapshots it is coded against (if it is
/// a delta) with `baseline_of`, and placing a delta's tick nearest `near`
/// (the newest tick decoded before). Every player id is below
/// `max_players`; `tick_hz` is the server's tick rate (the carry rule's
/// fall), as the encoder's baseline had it. `baseline_of` runs while this
/// thread's model is in use: it must not code or decode a snapshot itself.
pub fn decode<'a>(
    bytes: &[u8],
    baseline_of: impl Fn(u32) -> Option<&'a Frame>,
    near: Option<u32>,
    max_players: usize,
    tick_hz: u32,
) -> Result<(Frame, Feedback), SnapshotError> {
    MODEL.with_borrow_mut(|model| decode_with(model, bytes, baseline_of, near, max_players, tick_hz))
}

/// [`decode`] in a given model (started again first).
fn decode_with<'a>(
    model: &mut Model,
    bytes: &[u8],
    baseline_of: impl Fn(u32) -> Option<&'a Frame>,
    near: Option<u32>,
    max_players: usize,
    tick_hz: u32,
) -> Result<(Frame, Feedback), SnapshotError> {
    model.restart();
    let mut input = RangeIn::new(bytes)?;
    let header = read_header(model, &mut input, near)?;
    let tick = header.tick;
    let find = |t: u32| baseline_of(t).filter(|f| f.tick == t).ok_or(SnapshotError::UnknownBaseline(t));
    let baseline = match header.baseline {
        // Without the tick rate the fall cannot be expected as the server
        // expected it: ask for a whole snapshot rather than guess.
        Some(base) if header.before.is_some() && tick_hz == 0 => return Err(SnapshotError::UnknownBaseline(base)),
        Some(base) => Some(Baseline { frame: find(base)?, before: header.before.map(find).transpose()?, tick_hz }),
        None => None,
    };
    let span = baseline
        .map(|b| (tick.wrapping_sub(b.frame.tick), if b.before.is_some() { b.tick_hz } else { 0 }))
        .unwrap_or((0, 0));
    model.start_age(span.0);
    let back = |v: Option<i32>| v.map(|v| tick.wrapping_add(v as u32));
    let last_cmd_tick = back(read_offset(model, &mut input, FEEDBACK_PRESENT[0], Number::LastCommand)?);
    let newest_cmd_tick = back(read_offset(model, &mut input, FEEDBACK_PRESENT[1], Number::NewestCommand)?);
    let margin_centiticks = read_offset(model, &mut input, FEEDBACK_PRESENT[2], Number::Margin)?
        .map(|m| i16::try_from(m).map_err(|_| SnapshotError::Inconsistent))
        .transpose()?;
    let sent_after_256ths = model
        .get_number(&mut input, Number::SentAfter, false)
        .and_then(|v| u16::try_from(v).ok())
        .ok_or(SnapshotError::Inconsistent)?;
    let feedback = Feedback { last_cmd_tick, newest_cmd_tick, margin_centiticks, sent_after_256ths };

    let read_id = |input: &mut RangeIn| -> Result<PlayerId, SnapshotError> {
        let id = input.direct(ID_BITS);
        if (id as usize) < max_players { Ok(PlayerId(id as u8)) } else { Err(SnapshotError::Inconsistent) }
    };
    let own = if model.get(&mut input, OWN_PRESENT) {
        let id = read_id(&mut input)?;
        let is_delta = model.get(&mut input, OWN_DELTA);
        let expected = baseline.and_then(|b| b.own_at(id, tick));
        if is_delta && expected.is_none() {
            return Err(SnapshotError::Inconsistent);
        }
        let old = if is_delta { expected.as_ref() } else { None };
        let (base, before) = baseline.map(|b| b.own_ends(id)).unwrap_or_default();
        Some((id, read_state::<OwnState>(model, &mut input, old, (base.as_ref(), before.as_ref()), span)?))
    } else {
        None
    };

    // Unlisted players are where they were expected.
    let mut others: Others = baseline.map(|b| b.others_at(tick)).unwrap_or_default();
    let known: Vec<PlayerId> = others.keys().copied().collect();
    let mut after_change = false;
    for id in known {
        after_change = model.get(&mut input, PLAYER_CHANGED + usize::from(after_change));
        if !after_change {
            continue;
        }
        if model.get(&mut input, PLAYER_GONE) {
            others.remove(&id);
        } else if let Some(old) = others.get(&id).copied() {
            let ends = baseline.map(|b| b.other_ends(id)).unwrap_or_default();
            others.insert(id, read_state(model, &mut input, Some(&old), ends, span)?);
        }
    }
    let newcomers = model.get_number(&mut input, Number::Newcomers, false).ok_or(SnapshotError::Inconsistent)?;
    // Checked before the loop: a count is a number from the network.
    if newcomers as usize > max_players {
        return Err(SnapshotError::Inconsistent);
    }
    for _ in 0..newcomers {
        let id = read_id(&mut input)?;
        // A newcomer is nobody the baseline had (nor one listed twice).
        if baseline.is_some_and(|b| b.frame.others.contains_key(&id)) || others.contains_key(&id) {
            return Err(SnapshotError::Inconsistent);
        }
        others.insert(id, read_state(model, &mut input, None, (None, None), span)?);
    }
    let items = read_items(model, &mut input, tick, baseline.map(|b| b.frame.items.as_slice()), max_players)?;
    input.finish()?;
    if own.as_ref().is_some_and(|(id, _)| others.contains_key(id)) || others.len() > max_players {
        return Err(SnapshotError::Inconsistent);
    }
    Ok((Frame { tick, own, others, items }, feedback))
}
