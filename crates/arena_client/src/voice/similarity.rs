//! How close what a listener heard is to what the talker said, 0 to 1:
//! the heard signal is aligned to the said one by the cross-correlation of
//! their loudness envelopes (10 ms steps, up to [`MAX_LAG_S`] apart), then
//! both are cut into 20 ms windows, each described by its energy in
//! [`BANDS`] bands spaced evenly on a log scale from 150 Hz to 7 kHz
//! (Goertzel filters), in decibels; the figure is the correlation of the
//! two descriptions over the windows where the talker said something
//! (louder than a hundredth of its loudest), 0 when negative. A codec at
//! speech rates keeps the spectrum's shape, not the waveform, so this is
//! what it should keep; silence heard for speech, or speech heard for
//! silence, pulls the figure down. No Bevy, no library.

/// Bands each window is described by.
pub(crate) const BANDS: usize = 24;
/// The furthest apart the two may be, seconds.
pub(crate) const MAX_LAG_S: f64 = 2.0;
const LOW_HZ: f32 = 150.0;
const HIGH_HZ: f32 = 7_000.0;

/// The similarity of `heard` to `said`, both at `rate_hz`.
pub fn similarity(said: &[i16], heard: &[i16], rate_hz: u32) -> f64 {
    let step = (rate_hz / 100).max(1) as usize;
    let lag_steps = ((MAX_LAG_S * f64::from(rate_hz)) as usize) / step;
    let said_env = envelope(said, step);
    let heard_env = envelope(heard, step);
    let lag = best_lag(&said_env, &heard_env, lag_steps) * step;
    let heard = heard.get(lag..).unwrap_or(&[]);
    let window = step * 2;
    let windows = said.len().min(heard.len()) / window;
    if windows == 0 {
        return 0.0;
    }
    let loudest = (0..windows).map(|w| energy(&said[w * window..(w + 1) * window])).fold(0.0f64, f64::max);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for w in 0..windows {
        let range = w * window..(w + 1) * window;
        if energy(&said[range.clone()]) < loudest * 0.01 {
            continue;
        }
        a.extend(bands(&said[range.clone()], rate_hz));
        b.extend(bands(&heard[range], rate_hz));
    }
    correlation(&a, &b).max(0.0)
}

/// The offset into `heard`, in steps, at which it best matches `said`.
fn best_lag(said: &[f64], heard: &[f64], max: usize) -> usize {
    let mut best = (f64::MIN, 0);
    for lag in 0..=max.min(heard.len()) {
        let n = said.len().min(heard.len() - lag);
        if n < 10 {
            break;
        }
        let r = correlation(&said[..n], &heard[lag..lag + n]);
        if r > best.0 {
            best = (r, lag);
        }
    }
    best.1
}

/// Loudness in steps of `step` samples (root mean square).
fn envelope(samples: &[i16], step: usize) -> Vec<f64> {
    samples.chunks_exact(step).map(|c| energy(c).sqrt()).collect()
}

fn energy(samples: &[i16]) -> f64 {
    samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum::<f64>() / samples.len().max(1) as f64
}

/// A window's energy in each band, decibels (Goertzel at each band's centre).
fn bands(window: &[i16], rate_hz: u32) -> [f64; BANDS] {
    let n = window.len() as f32;
    std::array::from_fn(|i| {
        let hz = LOW_HZ * (HIGH_HZ / LOW_HZ).powf(i as f32 / (BANDS - 1) as f32);
        let k = (n * hz / rate_hz as f32).round();
        let coeff = 2.0 * (std::f32::consts::TAU * k / n).cos();
        let (mut s1, mut s2) = (0.0f32, 0.0f32);
        for &x in window {
            let s = f32::from(x) / 32768.0 + coeff * s1 - s2;
            s2 = s1;
            s1 = s;
        }
        let power = (s1 * s1 + s2 * s2 - coeff * s1 * s2).max(0.0);
        10.0 * f64::from(power + 1e-9).log10()
    })
}

/// Pearson's correlation (0 when either side does not vary).
fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n == 0 {
        return 0.0;
    }
    let mean = |v: &[f64]| v[..n].iter().sum::<f64>() / n as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (x, y) = (a[i] - ma, b[i] - mb);
        sab += x * y;
        saa += x * x;
        sbb += y * y;
    }
    if saa <= 0.0 || sbb <= 0.0 { 0.0 } else { sab / (saa * sbb).sqrt() }
}

/// A second or more of something like speech, for tests and the lab: a
/// voice whose pitch glides (110 to 190 Hz) with its harmonics shaped by
/// moving formants, in syllables of 100-300 ms with short pauses between.
pub fn speech_like(seconds: f64, rate_hz: u32, seed: u64) -> Vec<i16> {
    let n = (seconds * f64::from(rate_hz)) as usize;
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = Vec::with_capacity(n);
    let mut phase = 0.0f64;
    while out.len() < n {
        let syllable = ((0.1 + next() * 0.2) * f64::from(rate_hz)) as usize;
        let pause = ((0.03 + next() * 0.08) * f64::from(rate_hz)) as usize;
        let (f1, f2) = (300.0 + next() * 500.0, 900.0 + next() * 1400.0);
        let (p0, p1) = (110.0 + next() * 80.0, 110.0 + next() * 80.0);
        for i in 0..syllable {
            let t = i as f64 / syllable as f64;
            let pitch = p0 + (p1 - p0) * t;
            phase += pitch / f64::from(rate_hz);
            let mut s = 0.0;
            for h in 1..=30 {
                let hz = pitch * f64::from(h);
                if hz > 7000.0 {
                    break;
                }
                let formant = (-((hz - f1) / 150.0).powi(2)).exp() + 0.6 * (-((hz - f2) / 250.0).powi(2)).exp() + 0.02;
                s += formant * (std::f64::consts::TAU * phase * f64::from(h)).sin();
            }
            let envelope = (std::f64::consts::PI * t).sin();
            out.push((s * envelope * 6000.0).clamp(-32767.0, 32767.0) as i16);
        }
        out.extend(std::iter::repeat_n(0, pause));
    }
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itself_late_is_one_noise_is_near_nothing_and_silence_is_nothing() {
        let said = speech_like(3.0, 16_000, 1);
        let mut heard = vec![0i16; 4000];
        heard.extend_from_slice(&said);
        assert!(similarity(&said, &heard, 16_000) > 0.99);
        let other = speech_like(3.0, 16_000, 2);
        let unlike = similarity(&said, &other, 16_000);
        assert!(unlike < 0.6, "another voice's words: {unlike}");
        assert!(similarity(&said, &vec![0; said.len()], 16_000) < 0.1);
        assert_eq!(similarity(&said, &[], 16_000), 0.0);
    }
}
