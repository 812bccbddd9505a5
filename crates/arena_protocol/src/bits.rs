//! Bit-level packing for the two messages sent every tick (snapshots and
//! commands), on top of bitstream-io: fixed-width fields, and small numbers in
//! few bits with a short prefix that says how many (`widths`). Everything
//! read is bounds-checked: a short or garbage body is an error, never a panic.

use bitstream_io::{BigEndian, BitRead, BitReader, BitWrite, BitWriter};

/// Why bits did not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitsError {
    /// The body ended too soon.
    Truncated,
    /// A value out of its range, or bytes after the end.
    Invalid,
}

impl std::fmt::Display for BitsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BitsError::Truncated => f.write_str("the body ends too soon"),
            BitsError::Invalid => f.write_str("a field is out of its range"),
        }
    }
}

impl std::error::Error for BitsError {}

impl From<std::io::Error> for BitsError {
    fn from(_: std::io::Error) -> Self {
        BitsError::Truncated
    }
}

/// Writes bits into a byte vector.
pub struct BitsOut {
    w: BitWriter<Vec<u8>, BigEndian>,
}

impl Default for BitsOut {
    fn default() -> Self {
        Self::new()
    }
}

/// The prefix and width for `v` among `widths`: the first that holds it.
fn pick(fits: impl Fn(u32) -> bool, widths: &[u32]) -> usize {
    widths.iter().position(|w| fits(*w)).unwrap_or(widths.len() - 1)
}

fn fits_signed(v: i64, bits: u32) -> bool {
    bits >= 64 || (-(1i64 << (bits - 1))..(1i64 << (bits - 1))).contains(&v)
}

fn fits_unsigned(v: u64, bits: u32) -> bool {
    bits >= 64 || v < (1u64 << bits)
}

impl BitsOut {
    pub fn new() -> Self {
        Self { w: BitWriter::new(Vec::new()) }
    }

    // Writing to a Vec cannot fail; the results are ignored on purpose.
    pub fn flag(&mut self, b: bool) {
        let _ = self.w.write_bit(b);
    }

    /// `v` in `bits` bits (1..=32); higher bits are dropped.
    pub fn unsigned(&mut self, bits: u32, v: u32) {
        let masked = if bits >= 32 { v } else { v & ((1u32 << bits) - 1) };
        let _ = self.w.write_unsigned_var::<u32>(bits, masked);
    }

    /// `v` in `bits` bits, two's complement (2..=32); must fit.
    pub fn signed(&mut self, bits: u32, v: i32) {
        let _ = self.w.write_signed_var::<i32>(bits, v);
    }

    /// The prefix choosing a width: "0", "10", "110", ..., and none after the last.
    fn prefix(&mut self, index: usize, count: usize) {
        for _ in 0..index {
            self.flag(true);
        }
        if index + 1 < count {
            self.flag(false);
        }
    }

    /// A signed number in the first of `widths` that holds it (the last must
    /// hold every value it is given).
    pub fn var_signed(&mut self, v: i32, widths: &[u32]) {
        let i = pick(|w| fits_signed(i64::from(v), w), widths);
        self.prefix(i, widths.len());
        self.signed(widths[i], v);
    }

    /// An unsigned number in the first of `widths` that holds it.
    pub fn var_unsigned(&mut self, v: u32, widths: &[u32]) {
        let i = pick(|w| fits_unsigned(u64::from(v), w), widths);
        self.prefix(i, widths.len());
        self.unsigned(widths[i], v);
    }

    /// The bytes, the last padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        let _ = self.w.byte_align();
        self.w.into_writer()
    }
}

/// Reads bits from a byte slice.
pub struct BitsIn<'a> {
    r: BitReader<std::io::Cursor<&'a [u8]>, BigEndian>,
    len: usize,
}

impl<'a> BitsIn<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { r: BitReader::new(std::io::Cursor::new(bytes)), len: bytes.len() }
    }

    pub fn flag(&mut self) -> Result<bool, BitsError> {
        Ok(self.r.read_bit()?)
    }

    pub fn unsigned(&mut self, bits: u32) -> Result<u32, BitsError> {
        Ok(self.r.read_unsigned_var::<u32>(bits)?)
    }

    pub fn signed(&mut self, bits: u32) -> Result<i32, BitsError> {
        Ok(self.r.read_signed_var::<i32>(bits)?)
    }

    fn prefix(&mut self, count: usize) -> Result<usize, BitsError> {
        let mut i = 0;
        while i + 1 < count && self.flag()? {
            i += 1;
        }
        Ok(i)
    }

    pub fn var_signed(&mut self, widths: &[u32]) -> Result<i32, BitsError> {
        let i = self.prefix(widths.len())?;
        self.signed(widths[i])
    }

    pub fn var_unsigned(&mut self, widths: &[u32]) -> Result<u32, BitsError> {
        let i = self.prefix(widths.len())?;
        self.unsigned(widths[i])
    }

    /// Checks that only the zero padding of the last byte is left.
    pub fn finish(mut self) -> Result<(), BitsError> {
        while !self.r.byte_aligned() {
            if self.flag()? {
                return Err(BitsError::Invalid);
            }
        }
        let reader = self.r.into_reader();
        if reader.position() as usize == self.len { Ok(()) } else { Err(BitsError::Invalid) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_in_few_bits() {
        let widths = [4, 8, 16, 32];
        let values = [0, 1, -1, 7, -8, 8, 127, -128, 300, -40_000, i32::MAX, i32::MIN];
        let mut out = BitsOut::new();
        for v in values {
            out.var_signed(v, &widths);
            out.var_unsigned(v.unsigned_abs(), &widths);
        }
        out.flag(true);
        let bytes = out.finish();
        let mut input = BitsIn::new(&bytes);
        for v in values {
            assert_eq!(input.var_signed(&widths), Ok(v));
            assert_eq!(input.var_unsigned(&widths), Ok(v.unsigned_abs()));
        }
        assert_eq!(input.flag(), Ok(true));
        assert_eq!(input.finish(), Ok(()));
        // Small values are small: a zero takes the prefix and four bits.
        let mut out = BitsOut::new();
        out.var_signed(0, &widths);
        assert_eq!(out.finish().len(), 1);
    }

    #[test]
    fn short_and_trailing_bodies_are_errors() {
        assert_eq!(BitsIn::new(&[]).unsigned(8), Err(BitsError::Truncated));
        let mut input = BitsIn::new(&[0x80, 0x00]);
        assert_eq!(input.flag(), Ok(true));
        assert_eq!(input.finish(), Err(BitsError::Invalid), "a whole byte left over");
    }
}
