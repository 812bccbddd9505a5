//! Input generation: random bytes, and mutations of a target's seeds.

use arena_sim::rng::SplitMix64;

/// Largest input generated, bytes (above the largest datagram).
pub const MAX_INPUT_BYTES: usize = 1500;

/// Makes inputs from a seeded random generator.
#[derive(Debug, Clone)]
pub struct Generator {
    rng: SplitMix64,
}

impl Generator {
    pub fn new(seed: u64) -> Self {
        Self { rng: SplitMix64::new(seed) }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    /// A length biased towards the small: most bugs live near the edges.
    pub fn length(&mut self) -> usize {
        match self.below(10) {
            0..=4 => self.below(64),
            5..=7 => self.below(512),
            _ => self.below(MAX_INPUT_BYTES + 1),
        }
    }

    /// A byte biased towards the interesting values.
    pub fn byte(&mut self) -> u8 {
        match self.below(8) {
            0 => 0,
            1 => 0xFF,
            2 => [1, 0x7F, 0x80, 0xFE, 0x0F, 0xF0, 0x40, 0xC0][self.below(8)],
            _ => self.next_u64() as u8,
        }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }

    /// The next input: fresh random bytes, or a seed mutated.
    pub fn input(&mut self, seeds: &[Vec<u8>]) -> Vec<u8> {
        if seeds.is_empty() || self.chance(4) {
            let len = self.length();
            return self.bytes(len);
        }
        let mut input = seeds[self.below(seeds.len())].clone();
        let rounds = 1 + self.below(8);
        for _ in 0..rounds {
            self.mutate(&mut input);
        }
        input.truncate(MAX_INPUT_BYTES);
        input
    }

    /// One mutation: flip a bit, set a byte, insert, delete, truncate,
    /// duplicate a run, or overwrite eight bytes with an extreme integer.
    pub fn mutate(&mut self, input: &mut Vec<u8>) {
        let len = input.len();
        match self.below(8) {
            0 if len > 0 => {
                let i = self.below(len);
                input[i] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let i = self.below(len);
                input[i] = self.byte();
            }
            2 => {
                let i = self.below(len + 1);
                let b = self.byte();
                input.insert(i, b);
            }
            3 if len > 0 => {
                let i = self.below(len);
                input.remove(i);
            }
            4 => input.truncate(self.below(len + 1)),
            5 if len > 0 => {
                let start = self.below(len);
                let end = (start + 1 + self.below(16)).min(len);
                let run: Vec<u8> = input[start..end].to_vec();
                let at = self.below(len + 1);
                input.splice(at..at, run);
            }
            6 if len >= 8 => {
                let i = self.below(len - 7);
                let value = [u64::MAX, u64::MAX - 1, 1 << 63, 1 << 62, 0, 1, u32::MAX as u64][self.below(7)];
                input[i..i + 8].copy_from_slice(&value.to_le_bytes());
            }
            _ => {
                let extra = self.below(8);
                let bytes = self.bytes(extra);
                input.extend(bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let seeds = vec![vec![1, 2, 3, 4, 5, 6, 7, 8, 9]];
        let a: Vec<Vec<u8>> = {
            let mut g = Generator::new(5);
            (0..100).map(|_| g.input(&seeds)).collect()
        };
        let b: Vec<Vec<u8>> = {
            let mut g = Generator::new(5);
            (0..100).map(|_| g.input(&seeds)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|i| i.len() <= MAX_INPUT_BYTES));
        assert!(a.iter().any(|i| i.len() > 64) && a.iter().any(|i| i.len() < 16));
    }
}
