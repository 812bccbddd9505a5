//! A binary range coder (LZMA's, after Igor Pavlov's public-domain coder):
//! each bit is coded in the space its probability gives it, so a bit that
//! is nearly always the same costs a small fraction of a bit. Probabilities
//! live in contexts the caller keeps ([`Prob`]), start where the caller
//! says (trained on recorded games, for snapshots) and follow what is coded.
//! Decoding trusts nothing: any bytes decode to some bits without a panic,
//! and [`RangeIn::finish`] refuses bytes left over and a trailing zero.

/// Bits of a probability: [`Prob`] is the chance of a zero in 1/4096ths.
pub const PROB_BITS: u32 = 12;
/// A probability of one half.
pub const HALF: u16 = 1 << (PROB_BITS - 1);
/// How fast a context follows what it codes: it moves 1/2^ADAPT_SHIFT of
/// the way towards each bit seen (1/16: a context learns from a few
/// players' fields within one snapshot).
const ADAPT_SHIFT: u32 = 4;
/// The range is renormalised (a byte shifted out) below this.
const TOP: u32 = 1 << 24;
/// The probabilities a context may hold: never certain either way, so
/// every bit stays codable and the range never collapses.
pub const PROB_MIN: u16 = 1 << ADAPT_SHIFT;
pub const PROB_MAX: u16 = (1 << PROB_BITS) - (1 << ADAPT_SHIFT);

/// One context: the chance the next bit coded in it is a zero, in 1/4096ths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prob(u16);

impl Default for Prob {
    fn default() -> Self {
        Prob(HALF)
    }
}

impl Prob {
    /// A context starting at `p` (1/4096ths of a zero), held within
    /// [`PROB_MIN`]..=[`PROB_MAX`].
    pub fn new(p: u16) -> Self {
        Prob(p.clamp(PROB_MIN, PROB_MAX))
    }

    pub fn get(self) -> u16 {
        self.0
    }

    #[inline(always)]
    fn update(&mut self, bit: bool) {
        // Stays within PROB_MIN..=PROB_MAX: the step shrinks to zero at the
        // edges (a shift of 4 cannot cross 16 or 4096 - 16).
        if bit {
            self.0 -= self.0 >> ADAPT_SHIFT;
        } else {
            self.0 += ((1 << PROB_BITS) - self.0) >> ADAPT_SHIFT;
        }
        self.0 = self.0.clamp(PROB_MIN, PROB_MAX);
    }

    /// The bits it takes to code `bit` here (for training and reports).
    pub fn cost_bits(self, bit: bool) -> f64 {
        let zero = f64::from(self.0) / f64::from(1u32 << PROB_BITS);
        -(if bit { 1.0 - zero } else { zero }).log2()
    }
}

/// Codes bits into bytes.
#[derive(Debug)]
pub struct RangeOut {
    /// The interval's low end; bit 32 is a carry not yet added to the bytes.
    low: u64,
    range: u32,
    /// The last byte not yet written (a carry may still change it), and how
    /// many 0xFF bytes wait behind it.
    cache: u8,
    pending: u64,
    out: Vec<u8>,
}

impl Default for RangeOut {
    fn default() -> Self {
        Self::new()
    }
}

impl RangeOut {
    pub fn new() -> Self {
        Self { low: 0, range: u32::MAX, cache: 0, pending: 1, out: Vec::new() }
    }

    #[inline]
    fn shift_low(&mut self) {
        if (self.low as u32) < 0xFF00_0000 || (self.low >> 32) != 0 {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            while self.pending > 0 {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.pending -= 1;
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.pending += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    #[inline(always)]
    fn normalise(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// `bit` in context `p`, which then moves towards it. Always inlined,
    /// as the steps under it: the coder's innermost loop, which the dev
    /// build's opt-level 1 would otherwise leave as calls.
    #[inline(always)]
    pub fn bit(&mut self, p: &mut Prob, bit: bool) {
        let bound = (self.range >> PROB_BITS) * u32::from(p.0);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
        } else {
            self.range = bound;
        }
        p.update(bit);
        self.normalise();
    }

    /// The low `bits` bits of `v` (up to 32), high first, each an even chance.
    pub fn direct(&mut self, bits: u32, v: u32) {
        for i in (0..bits.min(32)).rev() {
            self.range >>= 1;
            if (v >> i) & 1 == 1 {
                self.low += u64::from(self.range);
            }
            self.normalise();
        }
    }

    /// The bytes: as few as pin the final interval, with the decoder's
    /// zeros standing in for the ones left off the end.
    pub fn finish(mut self) -> Vec<u8> {
        // The value with the most trailing zero bits in [low, low + range).
        let end = self.low + u64::from(self.range);
        for k in (0..=32u32).rev() {
            let mask = (1u64 << k) - 1;
            let v = (self.low + mask) & !mask;
            if v < end {
                self.low = v;
                break;
            }
        }
        for _ in 0..5 {
            self.shift_low();
        }
        // The first byte is always zero (the interval starts inside
        // [0, 2^32)): the decoder assumes it.
        let mut out = self.out.split_off(1.min(self.out.len()));
        while out.last() == Some(&0) {
            out.pop();
        }
        out
    }
}

/// Why coded bytes did not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeError {
    /// Bytes no encoder writes: a first word out of range, bytes left over
    /// after the last symbol, or a zero byte at the end.
    Invalid,
}

impl std::fmt::Display for RangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("range-coded bytes no encoder writes")
    }
}

impl std::error::Error for RangeError {}

/// Reads bits back from bytes; past their end it reads zeros (the encoder
/// leaves trailing zeros off).
#[derive(Debug)]
pub struct RangeIn<'a> {
    bytes: &'a [u8],
    pos: usize,
    range: u32,
    code: u32,
}

impl<'a> RangeIn<'a> {
    pub fn new(bytes: &'a [u8]) -> Result<Self, RangeError> {
        let mut input = Self { bytes, pos: 0, range: u32::MAX, code: 0 };
        for _ in 0..4 {
            input.code = (input.code << 8) | u32::from(input.next_byte());
        }
        // The encoder's first word always lies below the range. (Hostile
        // bytes can later push the code to the range or past it; the
        // arithmetic stays in bounds and the bits are then garbage.)
        if input.code >= input.range {
            return Err(RangeError::Invalid);
        }
        Ok(input)
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    #[inline(always)]
    fn normalise(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
    }

    /// A bit in context `p`, which then moves towards it (always inlined,
    /// as [`RangeOut::bit`]).
    #[inline(always)]
    pub fn bit(&mut self, p: &mut Prob) -> bool {
        let bound = (self.range >> PROB_BITS) * u32::from(p.0);
        let bit = self.code >= bound;
        if bit {
            self.code -= bound;
            self.range -= bound;
        } else {
            self.range = bound;
        }
        p.update(bit);
        self.normalise();
        bit
    }

    /// `bits` bits (up to 32), high first, as [`RangeOut::direct`] wrote them.
    pub fn direct(&mut self, bits: u32) -> u32 {
        let mut v = 0u32;
        for _ in 0..bits.min(32) {
            self.range >>= 1;
            let bit = self.code >= self.range;
            if bit {
                self.code -= self.range;
            }
            v = (v << 1) | u32::from(bit);
            self.normalise();
        }
        v
    }

    /// Checks that every byte was read (none left over) and the last is not
    /// a zero the encoder would have left off.
    pub fn finish(self) -> Result<(), RangeError> {
        if self.pos < self.bytes.len() || self.bytes.last() == Some(&0) {
            return Err(RangeError::Invalid);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::rng::SplitMix64;

    /// Random bits (skewed per context) and direct runs round-trip, and
    /// nothing is left over.
    #[test]
    fn bits_round_trip_in_their_contexts() {
        let mut rng = SplitMix64::new(0x9E37_79B9_7F4A_7C15);
        for round in 0..300 {
            let n = (rng.next_u64() % 400) as usize;
            let symbols: Vec<(usize, bool, u32, u32)> = (0..n)
                .map(|_| {
                    let ctx = (rng.next_u64() % 8) as usize;
                    // Context c is a one with chance c/8: some nearly certain.
                    let bit = rng.next_u64() % 8 < ctx as u64;
                    let bits = (rng.next_u64() % 33) as u32;
                    (ctx, bit, bits, rng.next_u64() as u32)
                })
                .collect();
            let mut out = RangeOut::new();
            let mut probs = [Prob::default(); 8];
            for &(ctx, bit, bits, v) in &symbols {
                out.bit(&mut probs[ctx], bit);
                if round % 2 == 0 {
                    out.direct(bits, v);
                }
            }
            let bytes = out.finish();
            assert_ne!(bytes.last(), Some(&0));
            let mut input = RangeIn::new(&bytes).expect("the encoder's first word");
            let mut probs = [Prob::default(); 8];
            for &(ctx, bit, bits, v) in &symbols {
                assert_eq!(input.bit(&mut probs[ctx]), bit, "round {round}");
                if round % 2 == 0 {
                    let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
                    assert_eq!(input.direct(bits), v & mask, "round {round}");
                }
            }
            assert_eq!(input.finish(), Ok(()), "round {round}: {} bytes", bytes.len());
        }
    }

    #[test]
    fn a_nearly_certain_bit_costs_a_fraction_of_a_bit() {
        let mut out = RangeOut::new();
        let mut p = Prob::new(PROB_MAX);
        for _ in 0..800 {
            out.bit(&mut p, false);
        }
        // 800 zeros at 4080/4096 each: about 5 bits in all.
        assert!(out.finish().len() <= 2);
        assert!(RangeOut::new().finish().is_empty(), "nothing coded, nothing sent");
    }

    #[test]
    fn left_over_bytes_and_trailing_zeros_are_refused() {
        let mut out = RangeOut::new();
        let mut p = Prob::default();
        for i in 0..40 {
            out.bit(&mut p, i % 3 == 0);
        }
        let bytes = out.finish();
        let read = |bytes: &[u8]| -> Result<(), RangeError> {
            let mut input = RangeIn::new(bytes)?;
            let mut p = Prob::default();
            for _ in 0..40 {
                input.bit(&mut p);
            }
            input.finish()
        };
        assert_eq!(read(&bytes), Ok(()));
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[1; 8]);
        assert_eq!(read(&longer), Err(RangeError::Invalid));
        let mut zero = bytes.clone();
        zero.push(0);
        assert_eq!(read(&zero), Err(RangeError::Invalid));
        assert_eq!(RangeIn::new(&[0xFF; 4]).err(), Some(RangeError::Invalid));
    }

    /// Any bytes decode to something without a panic (the dev profile
    /// panics on overflow).
    #[test]
    fn garbage_decodes_without_a_panic() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..2000 {
            let len = (rng.next_u64() % 24) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let Ok(mut input) = RangeIn::new(&bytes) else { continue };
            let mut probs = [Prob::default(); 4];
            for i in 0..300 {
                if i % 7 == 0 {
                    input.direct((i % 33) as u32);
                } else {
                    input.bit(&mut probs[i % 4]);
                }
            }
            let _ = input.finish();
        }
    }
}
