//! The snapshot's probability model: which context (see `range_coder`)
//! each coded bit lives in, how a number becomes bits (its size class, the
//! top of its mantissa, the rest, its sign), where the contexts start (the
//! priors trained on recorded games, `priors.rs`), and the tally that
//! trains them. Both ends build the same model, so it is part of the
//! protocol: a change to the layout or the priors changes the wire.

use super::fields::{Fields, Values};
use super::priors::TRAINED;
use super::state::{OwnState, REMOTE_VEL_MAX_Q, RemoteState};
use crate::range_coder::{HALF, Prob, RangeIn, RangeOut};

/// Size classes of a magnitude: its bit length, 0 to 32.
const CLASSES: usize = 33;
/// Bits just below a magnitude's leading one coded in contexts (a tree of
/// three); the rest go at even chances.
const MODELLED_BITS: u32 = 2;
const TREE: usize = (1 << MODELLED_BITS) - 1;
/// Sets of class contexts a number chooses between by what came before it
/// (for a field: the largest class among the state's earlier changes, and
/// whether the field was changing between the two snapshots before).
pub(super) const CLASS_SETS: usize = 8;
/// Contexts of one number: the unary class (the last class needs no end)
/// in each set, the mantissa trees per class, the sign.
const INT: usize = CLASS_SETS * (CLASSES - 1) + CLASSES * TREE + 1;

/// The class set a field's number is coded in, after earlier changes of
/// its state whose largest class was `largest` (0: none), for a field that
/// was changing before or not.
pub(super) fn class_set(largest: u32, moving: bool) -> usize {
    let by_largest = match largest {
        0 => 0,
        1..=3 => 1,
        4..=6 => 2,
        _ => 3,
    };
    by_largest + 4 * usize::from(moving)
}
/// Contexts of one field: whether it changed (after a field that did or did
/// not, and as it was changing between the two snapshots before or not),
/// then its number.
const FIELD: usize = 4 + INT;
/// The owner's fields, the first of them (those of protocol 20) where
/// they always were, the rest after every other context (so the trained
/// priors of the first stay where they are).
const OWN_FIELDS: usize = 20;
const OWN_FIRST_FIELDS: usize = 18;
const REMOTE_FIELDS: usize = 12;

const OWN_BASE: usize = 0;
const REMOTE_BASE: usize = OWN_BASE + OWN_FIRST_FIELDS * FIELD;
/// Single contexts.
const FLAGS_BASE: usize = REMOTE_BASE + REMOTE_FIELDS * FIELD;
/// Whether a player changed, after one that did not or did.
pub(super) const PLAYER_CHANGED: usize = FLAGS_BASE;
pub(super) const PLAYER_GONE: usize = FLAGS_BASE + 2;
pub(super) const OWN_PRESENT: usize = FLAGS_BASE + 3;
pub(super) const OWN_DELTA: usize = FLAGS_BASE + 4;
pub(super) const IS_DELTA: usize = FLAGS_BASE + 5;
pub(super) const HAS_MOTION: usize = FLAGS_BASE + 6;
/// Whether the feedback's last command, newest command and margin are there.
pub(super) const FEEDBACK_PRESENT: [usize; 3] = [FLAGS_BASE + 7, FLAGS_BASE + 8, FLAGS_BASE + 9];
const INTS_BASE: usize = FLAGS_BASE + 10;

/// The numbers outside the states, each with its own contexts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Number {
    BaselineAge,
    MotionGap,
    LastCommand,
    NewestCommand,
    Margin,
    SentAfter,
    Newcomers,
    /// How many items the map has (with a delta, only when they changed).
    Items,
    /// How many ticks before the snapshot an item was taken.
    ItemAge,
}

impl Number {
    fn base(self) -> usize {
        INTS_BASE + self as usize * INT
    }
}

/// The numbers' contexts end here.
const NUMBERS_END: usize = INTS_BASE + 9 * INT;
/// The owner's fields past the first (armour, the quad).
const OWN_MORE_BASE: usize = NUMBERS_END;
/// Whether the items changed from the baseline's; whether one item changed;
/// whether an item is taken.
pub(super) const ITEMS_CHANGED: usize = OWN_MORE_BASE + (OWN_FIELDS - OWN_FIRST_FIELDS) * FIELD;
pub(super) const ITEM_CHANGED: usize = ITEMS_CHANGED + 1;
pub(super) const ITEM_TAKEN: usize = ITEMS_CHANGED + 2;

/// Every context.
pub(super) const CONTEXTS: usize = ITEMS_CHANGED + 3;

/// Tables of priors, by the baseline's age: what a delta says grows with it.
pub const AGE_BUCKETS: usize = 4;

/// Which table of priors codes a snapshot against a baseline `age_ticks`
/// old (0: whole): up to 2 ticks, 4, 8, older.
pub fn age_bucket(age_ticks: u32) -> usize {
    match age_ticks {
        0..=2 => 0,
        3..=4 => 1,
        5..=8 => 2,
        _ => 3,
    }
}

/// Where a state's field contexts start, and what its earlier fields say
/// of a later one.
pub(super) trait Modelled: Fields {
    const BASE: usize;

    /// Where field `i`'s contexts start.
    fn field_base(i: usize) -> usize {
        Self::BASE + i * FIELD
    }

    /// What field `i` is expected to be once the fields before it are known
    /// (`known.new[..i]`), given what the carry rule expects (`expected`).
    /// Both ends call it alike.
    fn refine(_i: usize, expected: i32, _known: &Known) -> i32 {
        expected
    }
}

/// What both ends know of a state while it is coded: its fields so far,
/// the baseline's state uncarried, how far on from it, at what tick rate.
pub(super) struct Known<'a> {
    pub new: &'a Values,
    pub base: Option<&'a Values>,
    pub age_ticks: u32,
    pub tick_hz: u32,
}

impl Modelled for OwnState {
    const BASE: usize = OWN_BASE;

    fn field_base(i: usize) -> usize {
        if i < OWN_FIRST_FIELDS { OWN_BASE + i * FIELD } else { OWN_MORE_BASE + (i - OWN_FIRST_FIELDS) * FIELD }
    }
}

/// Remote position steps in one remote gait step, as a fraction: a gait
/// step is 1/64 of the 3.2 m cycle (5 cm), a position step 1/64 m, so a
/// gait step is 3.2 position steps (16/5).
const GAIT_STEPS_PER_POS_STEP: (i64, i64) = (5, 16);
const GAIT: usize = 9;
const FLAGS: usize = 5;
const SPAWN_COUNT: usize = 6;
const VEL_X: usize = 7;
const VEL_Z: usize = 8;
/// Remote position steps a second at one remote velocity step (0.5 m/s at
/// 1/64 m).
const POS_STEPS_PER_VEL_STEP_S: i64 = 32;

impl Modelled for RemoteState {
    const BASE: usize = REMOTE_BASE;

    /// The gait: a player on the ground all along walked its cycle forward
    /// by the ground it covered, which the positions just decoded say (the
    /// straight line between them: over a snapshot or a few, nearly the
    /// path). Better than carrying on its pace when the pace changed.
    fn refine(i: usize, expected: i32, known: &Known) -> i32 {
        // Only later fields are refined, and only from earlier ones: the
        // decoder knows nothing past field `i`.
        if i != VEL_X && i != VEL_Z && i != GAIT {
            return expected;
        }
        let (new, Some(base)) = (known.new, known.base) else { return expected };
        if new[SPAWN_COUNT] != base[SPAWN_COUNT] {
            return expected;
        }
        if (i == VEL_X || i == VEL_Z) && known.age_ticks > 0 && known.tick_hz > 0 {
            // The mean velocity over the span, from the positions decoded.
            let axis = if i == VEL_X { 0 } else { 2 };
            let moved = i64::from(new[axis]) - i64::from(base[axis]);
            let (num, den) = (moved * i64::from(known.tick_hz), i64::from(known.age_ticks) * POS_STEPS_PER_VEL_STEP_S);
            let mean = (2 * num + den * num.signum()) / (2 * den);
            return mean.clamp(-i64::from(REMOTE_VEL_MAX_Q), i64::from(REMOTE_VEL_MAX_Q)) as i32;
        }
        let on_ground = |v: &Values| v[FLAGS] & <Self as Fields>::ON_GROUND != 0;
        if i != GAIT || !on_ground(new) || !on_ground(base) {
            return expected;
        }
        let (dx, dz) = (i64::from(new[0]) - i64::from(base[0]), i64::from(new[2]) - i64::from(base[2]));
        let walked = (dx * dx + dz * dz).isqrt();
        let (num, den) = GAIT_STEPS_PER_POS_STEP;
        let steps = (walked * num + den / 2) / den;
        super::fields::turned(base[GAIT], steps, Self::TABLE[GAIT].bits)
    }
}

/// Where field `i`'s change flag lives, after a field that changed or not,
/// for a field that was changing (between the baseline and the snapshot
/// before it) or not.
pub(super) fn changed<S: Modelled>(i: usize, after_change: bool, moving: bool) -> usize {
    S::field_base(i) + usize::from(after_change) + 2 * usize::from(moving)
}

fn field_number<S: Modelled>(i: usize) -> usize {
    S::field_base(i) + 4
}

/// How often each context coded a zero and a one: what the priors are
/// trained from.
#[derive(Clone, Debug)]
pub struct Tally(Vec<[u64; 2]>, Vec<u64>);

impl Default for Tally {
    fn default() -> Self {
        Self(vec![[0; 2]; CONTEXTS], vec![0; CONTEXTS])
    }
}

/// What context `ctx` is, for reports: a field's change flag or number,
/// or one of the rest.
fn group_of(ctx: usize) -> String {
    let field = |table: &'static [super::fields::Field], base: usize, who: &str| {
        let i = (ctx - base) / FIELD;
        let what = if (ctx - base) % FIELD < 4 { "changed" } else { "number" };
        format!("{who} {} {what}", table[i].name)
    };
    if ctx < REMOTE_BASE {
        field(OwnState::TABLE, OWN_BASE, "own")
    } else if ctx < FLAGS_BASE {
        field(RemoteState::TABLE, REMOTE_BASE, "other")
    } else if ctx < INTS_BASE {
        match ctx {
            c if c < PLAYER_GONE => "player changed".into(),
            PLAYER_GONE => "player gone".into(),
            _ => "header and feedback flags".into(),
        }
    } else if ctx >= ITEMS_CHANGED {
        "items".into()
    } else if ctx >= OWN_MORE_BASE {
        let i = (ctx - OWN_MORE_BASE) / FIELD + OWN_FIRST_FIELDS;
        let what = if (ctx - OWN_MORE_BASE) % FIELD < 4 { "changed" } else { "number" };
        format!("own {} {what}", OwnState::TABLE[i].name)
    } else {
        format!(
            "{:?}",
            [
                Number::BaselineAge,
                Number::MotionGap,
                Number::LastCommand,
                Number::NewestCommand,
                Number::Margin,
                Number::SentAfter,
                Number::Newcomers,
                Number::Items,
                Number::ItemAge,
            ][(ctx - INTS_BASE) / INT]
        )
    }
}

/// Contexts seen fewer times than this keep an even prior.
const MIN_TRAINING_BITS: u64 = 16;

impl Tally {
    /// The priors this tally trains: (context, chance of a zero in
    /// 1/4096ths) for each context seen often enough and not even.
    pub fn priors(&self) -> Vec<(u16, u16)> {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, [zeros, ones])| zeros + ones >= MIN_TRAINING_BITS)
            .map(|(ctx, [zeros, ones])| {
                let p = ((*zeros as f64 + 0.5) / ((zeros + ones) as f64 + 1.0) * 4096.0).round() as u16;
                (ctx as u16, Prob::new(p).get())
            })
            .filter(|(_, p)| *p != HALF)
            .collect()
    }

    /// The priors these tallies train, one per baseline age
    /// ([`AGE_BUCKETS`]), as the source of `priors.rs`.
    pub fn priors_source(tallies: &[Tally]) -> String {
        let mut s = String::from(
            "//! The snapshot model's trained priors (generated: `cargo run --release -p arena_lab\n\
             //! --example snapshot_sizes -- train`): each context's chance of a zero, in\n\
             //! 1/4096ths, as counted on recorded games, one table per age of the baseline\n\
             //! (`model::age_bucket`); contexts not listed start at a half. Part of the\n\
             //! protocol: both ends must start from the same numbers.\n\n\
             /// (context, chance of a zero in 1/4096ths), by context, per baseline age.\n\
             #[rustfmt::skip]\n",
        );
        s.push_str(&format!("pub(super) const TRAINED: [&[(u16, u16)]; {}] = [\n", tallies.len()));
        for tally in tallies {
            s.push_str("    &[\n");
            let mut line = String::new();
            for (ctx, p) in tally.priors() {
                let entry = format!("({ctx}, {p}), ");
                if line.len() + entry.len() > 92 {
                    s.push_str("        ");
                    s.push_str(line.trim_end());
                    s.push('\n');
                    line.clear();
                }
                line.push_str(&entry);
            }
            if !line.is_empty() {
                s.push_str("        ");
                s.push_str(line.trim_end());
                s.push('\n');
            }
            s.push_str("    ],\n");
        }
        s.push_str("];\n");
        s
    }

    /// Bits spent on each group of contexts at `model`'s priors without
    /// adapting (even bits included), most first: where a snapshot's bits go.
    pub fn report(&self, model: &Model) -> Vec<(String, f64)> {
        let mut groups: std::collections::BTreeMap<String, f64> = Default::default();
        for (ctx, ([z, o], even)) in self.0.iter().zip(&self.1).enumerate() {
            let bits = *z as f64 * model.p[ctx].cost_bits(false) + *o as f64 * model.p[ctx].cost_bits(true);
            if bits + *even as f64 > 0.0 {
                *groups.entry(group_of(ctx)).or_default() += bits + *even as f64;
            }
        }
        let mut groups: Vec<(String, f64)> = groups.into_iter().collect();
        groups.sort_by(|a, b| b.1.total_cmp(&a.1));
        groups
    }

    /// Bits the trained priors would spend on what was tallied, without
    /// adapting: a measure of how well they fit (for reports).
    pub fn bits_at(&self, model: &Model) -> f64 {
        self.0
            .iter()
            .zip(&model.p)
            .map(|([z, o], p)| *z as f64 * p.cost_bits(false) + *o as f64 * p.cost_bits(true))
            .sum()
    }
}

/// Every context at `priors` ((context, chance of a zero); the rest at a half).
fn contexts_at(priors: &[(u16, u16)]) -> Vec<Prob> {
    let mut p = vec![Prob::default(); CONTEXTS];
    for &(ctx, prior) in priors {
        if let Some(slot) = p.get_mut(usize::from(ctx)) {
            *slot = Prob::new(prior);
        }
    }
    p
}

/// The contexts each table of trained priors starts them at, built once:
/// every snapshot coded or decoded copies one over its model (twice: for
/// its header, then its age's), rather than applying the sparse tables
/// again.
static STARTS: std::sync::LazyLock<Vec<Vec<Prob>>> = std::sync::LazyLock::new(|| {
    TRAINED
        .iter()
        .map(|priors| {
            let mut p = contexts_at(priors);
            for (ctx, prior) in untrained_priors() {
                if !priors.iter().any(|(c, _)| usize::from(*c) == ctx) {
                    p[ctx] = Prob::new(prior);
                }
            }
            p
        })
        .collect()
});

/// Where the contexts added in protocol 21 start until the priors are
/// trained again: the owner's armour and quad rarely change, the items are
/// nearly always as they were, and one item rarely changes among them.
fn untrained_priors() -> Vec<(usize, u16)> {
    let mut p = Vec::new();
    for i in OWN_FIRST_FIELDS..OWN_FIELDS {
        for flag in 0..4 {
            p.push((OwnState::field_base(i) + flag, 4000));
        }
    }
    p.push((ITEMS_CHANGED, 4000));
    p.push((ITEM_CHANGED, 3600));
    p
}

/// The contexts, starting at the trained priors, in one flat table. Made
/// once per thread and used for snapshot after snapshot (`codec.rs`): a
/// new snapshot copies its start over it ([`Model::restart`]), no
/// allocation. (Issue 61 tried reading each context from its start until
/// first coded in, stamped per snapshot, instead of the copy: a third
/// fewer instructions, no faster, as the check on every bit cost what the
/// copy, a fast `memcpy`, saved.)
#[derive(Clone, Debug)]
pub struct Model {
    p: Vec<Prob>,
    tally: Option<Tally>,
}

impl Default for Model {
    fn default() -> Self {
        Self::trained()
    }
}

impl Model {
    /// The model both ends start a snapshot in (its header; the rest is
    /// coded from the priors of its baseline's age: [`Model::start_age`]).
    pub fn trained() -> Self {
        Self { p: STARTS[0].clone(), tally: None }
    }

    /// Starts a new snapshot: every context at the trained priors again
    /// (as [`Model::trained`]), tally kept.
    pub(super) fn restart(&mut self) {
        self.p.clone_from(&STARTS[0]);
    }

    /// Starts again from the priors trained for baselines `age_ticks` old
    /// (a whole snapshot: 0), once the header said it.
    pub(super) fn start_age(&mut self, age_ticks: u32) {
        self.p.clone_from(&STARTS[age_bucket(age_ticks)]);
    }

    /// Contexts starting at `priors` ((context, chance of a zero in
    /// 1/4096ths); the rest at a half), for training and comparisons (a
    /// [`Tally`]'s cost at them): a restart or [`Model::start_age`] goes
    /// back to the trained priors.
    pub fn with_priors(priors: &[(u16, u16)]) -> Self {
        Self { p: contexts_at(priors), tally: None }
    }

    /// A model that counts what it codes into `tally`.
    pub fn tallying(tally: Tally) -> Self {
        Self { tally: Some(tally), ..Self::trained() }
    }

    pub fn into_tally(self) -> Option<Tally> {
        self.tally
    }

    // Always inlined: the coder's innermost step, on every bit coded, and
    // a call of its own at the dev build's opt-level 1.
    #[inline(always)]
    pub(super) fn put(&mut self, out: &mut RangeOut, ctx: usize, bit: bool) {
        if let Some(t) = &mut self.tally {
            t.0[ctx][usize::from(bit)] += 1;
        }
        out.bit(&mut self.p[ctx], bit);
    }

    #[inline(always)]
    pub(super) fn get(&mut self, input: &mut RangeIn, ctx: usize) -> bool {
        input.bit(&mut self.p[ctx])
    }

    /// A number in the contexts at `base`: its class (bit length) in unary,
    /// the two bits under its leading one in a tree per class, the rest
    /// even, then its sign if `signed` and not zero.
    /// Returns the class (bit length) coded.
    fn put_int(&mut self, out: &mut RangeOut, base: usize, set: usize, v: i32, signed: bool) -> u32 {
        let mag = if signed { v.unsigned_abs() } else { v as u32 };
        let class = (32 - mag.leading_zeros()) as usize;
        let classes = base + set * (CLASSES - 1);
        for i in 0..class {
            self.put(out, classes + i, true);
        }
        if class < CLASSES - 1 {
            self.put(out, classes + class, false);
        }
        if class >= 2 {
            let below = class as u32 - 1;
            let modelled = below.min(MODELLED_BITS);
            let tree = base + CLASS_SETS * (CLASSES - 1) + class * TREE;
            let mut node = 1usize;
            for j in 0..modelled {
                let bit = (mag >> (below - 1 - j)) & 1 == 1;
                self.put(out, tree + node - 1, bit);
                node = node * 2 + usize::from(bit);
            }
            out.direct(below - modelled, mag);
            if let Some(t) = &mut self.tally {
                t.1[base] += u64::from(below - modelled);
            }
        }
        if signed && mag != 0 {
            self.put(out, base + INT - 1, v < 0);
        }
        class as u32
    }

    /// A number [`Model::put_int`] wrote, and its class; `None` if it does
    /// not fit an i32.
    fn get_int(&mut self, input: &mut RangeIn, base: usize, set: usize, signed: bool) -> Option<(i32, u32)> {
        let classes = base + set * (CLASSES - 1);
        let mut class = 0;
        while class < CLASSES - 1 && self.get(input, classes + class) {
            class += 1;
        }
        let mag: u32 = match class {
            0 => 0,
            1 => 1,
            _ => {
                let below = class as u32 - 1;
                let modelled = below.min(MODELLED_BITS);
                let tree = base + CLASS_SETS * (CLASSES - 1) + class * TREE;
                let mut node = 1usize;
                for _ in 0..modelled {
                    let bit = self.get(input, tree + node - 1);
                    node = node * 2 + usize::from(bit);
                }
                let top = (node as u32) & ((1 << modelled) - 1);
                let rest_bits = below - modelled;
                let rest = input.direct(rest_bits);
                // The leading one, the modelled bits, the rest.
                let lead = 1u64 << below;
                (lead | (u64::from(top) << rest_bits) | u64::from(rest)) as u32
            }
        };
        let class = class as u32;
        if !signed {
            return i32::try_from(mag).ok().map(|v| (v, class));
        }
        let negative = mag != 0 && self.get(input, base + INT - 1);
        let v = if negative { -i64::from(mag) } else { i64::from(mag) };
        i32::try_from(v).ok().map(|v| (v, class))
    }

    pub(super) fn put_number(&mut self, out: &mut RangeOut, n: Number, v: i32, signed: bool) {
        self.put_int(out, n.base(), 0, v, signed);
    }

    pub(super) fn get_number(&mut self, input: &mut RangeIn, n: Number, signed: bool) -> Option<i32> {
        self.get_int(input, n.base(), 0, signed).map(|(v, _)| v)
    }

    /// Field `i`'s change (its difference, signed) in class set `set`; its class.
    pub(super) fn put_field<S: Modelled>(&mut self, out: &mut RangeOut, i: usize, set: usize, v: i32) -> u32 {
        self.put_int(out, field_number::<S>(i), set, v, true)
    }

    pub(super) fn get_field<S: Modelled>(&mut self, input: &mut RangeIn, i: usize, set: usize) -> Option<(i32, u32)> {
        self.get_int(input, field_number::<S>(i), set, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_fit_the_layout() {
        assert_eq!(OwnState::TABLE.len(), OWN_FIELDS);
        assert_eq!(RemoteState::TABLE.len(), REMOTE_FIELDS);
        assert!(CONTEXTS < usize::from(u16::MAX), "contexts are named in u16");
        assert!(TRAINED.iter().flat_map(|t| t.iter()).all(|(ctx, _)| usize::from(*ctx) < CONTEXTS));
    }

    #[test]
    fn numbers_round_trip() {
        let values = [0, 1, -1, 2, -2, 3, 5, -7, 8, 100, -1000, 65_535, 1 << 30, i32::MAX, i32::MIN, -(1 << 30)];
        let mut model = Model::trained();
        let mut out = RangeOut::new();
        for v in values {
            model.put_number(&mut out, Number::Margin, v, true);
            model.put_number(&mut out, Number::SentAfter, v.max(0), false);
            model.put_field::<RemoteState>(&mut out, 3, 2, v);
        }
        let bytes = out.finish();
        let mut model = Model::trained();
        let mut input = RangeIn::new(&bytes).unwrap();
        for v in values {
            assert_eq!(model.get_number(&mut input, Number::Margin, true), Some(v));
            assert_eq!(model.get_number(&mut input, Number::SentAfter, false), Some(v.max(0)));
            assert_eq!(model.get_field::<RemoteState>(&mut input, 3, 2).map(|(v, _)| v), Some(v));
        }
        assert_eq!(input.finish(), Ok(()));
    }

    /// Codes the same numbers in `model`.
    fn coded_in(model: &mut Model) -> Vec<u8> {
        let mut out = RangeOut::new();
        for v in [0, 3, -7, 3, 3, 100, 3] {
            model.put_field::<RemoteState>(&mut out, 0, 1, v);
            model.put(&mut out, PLAYER_GONE, v > 50);
        }
        model.start_age(5);
        for v in [2, 2, -2, 9] {
            model.put_field::<OwnState>(&mut out, 4, 0, v);
        }
        out.finish()
    }

    #[test]
    fn a_model_started_again_codes_as_a_new_one() {
        let fresh = coded_in(&mut Model::trained());
        // One that coded other things in between, at another age, then
        // started again.
        let mut reused = Model::trained();
        for _ in 0..3 {
            reused.start_age(40);
            for v in [40, -41, 42] {
                reused.put_field::<RemoteState>(&mut RangeOut::new(), 0, 1, v);
            }
            reused.restart();
            assert_eq!(coded_in(&mut reused), fresh);
        }
    }

    #[test]
    fn a_tally_counts_what_was_coded_and_trains_priors() {
        let mut model = Model::tallying(Tally::default());
        let mut out = RangeOut::new();
        for _ in 0..100 {
            model.put(&mut out, PLAYER_GONE, false);
        }
        let tally = model.into_tally().unwrap();
        assert_eq!(tally.0[PLAYER_GONE], [100, 0]);
        let source = Tally::priors_source(&[tally]);
        assert!(source.contains(&format!("({PLAYER_GONE}, ")), "{source}");
    }
}
