//! A frame's bytes: varints, exact floats, names, a float on its grid.
//!
//! [`Out`] writes and [`In`] reads (bounded, every fault a [`FrameError`]):
//! unsigned varints, zigzag signed ones, floats as their exact bits, names
//! cut to [`MAX_DEMO_NAME_BYTES`], and a float as its grid integer where it
//! sits on the grid, else as its exact bits.

use arena_sim::PlayerId;
use glam::Vec3;

use super::model::{FrameError, MAX_DEMO_NAME_BYTES};

pub(super) struct Out(pub(super) Vec<u8>);

impl Out {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub(super) fn ivar(&mut self, v: i64) {
        self.var(((v << 1) ^ (v >> 63)) as u64);
    }
    pub(super) fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    pub(super) fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    pub(super) fn vec3(&mut self, v: Vec3) {
        for c in v.to_array() {
            self.f32(c);
        }
    }
    pub(super) fn str(&mut self, s: &str) {
        self.str_upto(s, MAX_DEMO_NAME_BYTES);
    }
    /// `s`, cut to at most `max` bytes (at a character's boundary).
    pub(super) fn str_upto(&mut self, s: &str, max: usize) {
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.var(end as u64);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
    /// A float on its grid as `(q << 1)`, else its exact bits `<< 1 | 1`.
    pub(super) fn grid(&mut self, v: f32, to: impl Fn(f32) -> i64, from: impl Fn(i64) -> f32) {
        let q = to(v);
        if from(q).to_bits() == v.to_bits() {
            let z = ((q << 1) ^ (q >> 63)) as u64;
            self.var(z << 1);
        } else {
            self.var((u64::from(v.to_bits()) << 1) | 1);
        }
    }
}

pub(super) struct In<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl In<'_> {
    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, FrameError> {
        let b = *self.bytes.get(self.at).ok_or(FrameError::Truncated { what })?;
        self.at += 1;
        Ok(b)
    }
    pub(super) fn var(&mut self, what: &'static str) -> Result<u64, FrameError> {
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
    pub(super) fn ivar(&mut self, what: &'static str) -> Result<i64, FrameError> {
        let z = self.var(what)?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }
    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32, FrameError> {
        u32::try_from(self.var(what)?).map_err(|_| FrameError::Invalid { what })
    }
    pub(super) fn f32(&mut self, what: &'static str) -> Result<f32, FrameError> {
        let b = self.bytes.get(self.at..self.at + 4).ok_or(FrameError::Truncated { what })?;
        self.at += 4;
        Ok(f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    }
    pub(super) fn f64(&mut self, what: &'static str) -> Result<f64, FrameError> {
        let b = self.bytes.get(self.at..self.at + 8).ok_or(FrameError::Truncated { what })?;
        self.at += 8;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(f64::from_bits(u64::from_le_bytes(a)))
    }
    pub(super) fn vec3(&mut self, what: &'static str) -> Result<Vec3, FrameError> {
        Ok(Vec3::new(self.f32(what)?, self.f32(what)?, self.f32(what)?))
    }
    pub(super) fn str(&mut self, what: &'static str) -> Result<String, FrameError> {
        self.str_upto(what, MAX_DEMO_NAME_BYTES)
    }
    /// A string of at most `max` bytes.
    pub(super) fn str_upto(&mut self, what: &'static str, max: usize) -> Result<String, FrameError> {
        let n = usize::try_from(self.var(what)?).unwrap_or(usize::MAX);
        if n > max {
            return Err(FrameError::Invalid { what });
        }
        let b = self.bytes.get(self.at..self.at + n).ok_or(FrameError::Truncated { what })?;
        self.at += n;
        String::from_utf8(b.to_vec()).map_err(|_| FrameError::Invalid { what })
    }
    pub(super) fn count(&mut self, what: &'static str, max: usize) -> Result<usize, FrameError> {
        let n = self.var(what)?;
        if n > max as u64 {
            return Err(FrameError::Invalid { what });
        }
        Ok(n as usize)
    }
    pub(super) fn grid(&mut self, what: &'static str, from: impl Fn(i64) -> f32) -> Result<f32, FrameError> {
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
    pub(super) fn id(&mut self, what: &'static str) -> Result<PlayerId, FrameError> {
        self.u8(what).map(PlayerId)
    }
}
