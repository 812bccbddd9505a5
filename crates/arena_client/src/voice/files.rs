//! Voice to and from WAV files, for `arena bots --voice-file` and
//! `--voice-out` and the lab: any WAV hound reads (8 to 32-bit integers or
//! floats, any rate, any channels) into the voice's mono 16 kHz, and
//! voice's samples out as a 16 kHz mono 16-bit WAV. A file longer than
//! [`MAX_FILE_S`] is refused, not cut.

use std::path::Path;

use arena_protocol::voice::SAMPLE_RATE_HZ;

/// Longest file taken, seconds.
pub(crate) const MAX_FILE_S: u32 = 600;

/// Why a WAV file could not be read or written.
#[derive(Debug)]
pub struct WavError(pub String);

impl std::fmt::Display for WavError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WavError {}

/// The file at `path` as the voice's samples (mono, 16 kHz).
pub fn read_wav(path: &Path) -> Result<Vec<i16>, WavError> {
    let fail = |e: hound::Error| WavError(format!("{}: {e}", path.display()));
    let mut reader = hound::WavReader::open(path).map_err(fail)?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels.max(1));
    if spec.sample_rate == 0 || u64::from(reader.duration()) > u64::from(MAX_FILE_S) * u64::from(spec.sample_rate) {
        return Err(WavError(format!(
            "{}: {} samples at {} Hz (at most {MAX_FILE_S} s)",
            path.display(),
            reader.duration(),
            spec.sample_rate
        )));
    }
    let samples: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader.samples::<f32>().collect::<Result<_, _>>().map_err(fail)?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << spec.bits_per_sample.clamp(1, 32).saturating_sub(1)) as f32;
            reader.samples::<i32>().map(|s| s.map(|s| s as f32 * scale)).collect::<Result<_, _>>().map_err(fail)?
        }
    };
    let mono: Vec<f32> = samples.chunks(channels).map(|c| c.iter().sum::<f32>() / c.len() as f32).collect();
    Ok(resample(&mono, spec.sample_rate, SAMPLE_RATE_HZ)
        .into_iter()
        .map(|s| (s.clamp(-1.0, 1.0) * 32767.0) as i16)
        .collect())
}

/// Linear resampling from `from` Hz to `to` Hz (with a moving average
/// first when going down, against the worst of aliasing).
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() {
        return samples.to_vec();
    }
    let width = (from / to.max(1)).max(1) as usize;
    let smoothed: Vec<f32> = if width > 1 {
        (0..samples.len())
            .map(|i| {
                let window = &samples[i.saturating_sub(width - 1)..=i];
                window.iter().sum::<f32>() / window.len() as f32
            })
            .collect()
    } else {
        samples.to_vec()
    };
    let n = (samples.len() as u64 * u64::from(to) / u64::from(from)) as usize;
    (0..n)
        .map(|i| {
            let x = i as f64 * f64::from(from) / f64::from(to);
            let j = x.floor() as usize;
            let frac = (x - j as f64) as f32;
            let a = smoothed[j.min(smoothed.len() - 1)];
            let b = smoothed[(j + 1).min(smoothed.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

/// The voice's samples as a 16 kHz mono 16-bit WAV at `path`.
pub fn write_wav(path: &Path, samples: &[i16]) -> Result<(), WavError> {
    let fail = |e: hound::Error| WavError(format!("{}: {e}", path.display()));
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE_HZ,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).map_err(fail)?;
    for &s in samples {
        writer.write_sample(s).map_err(fail)?;
    }
    writer.finalize().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stereo_44k_file_comes_back_as_mono_16k() {
        let dir = std::env::temp_dir().join(format!("arena-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("in.wav");
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 44_100,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut writer = hound::WavWriter::create(&path, spec).unwrap();
        for i in 0..44_100 {
            let s = ((i as f32 / 44_100.0 * 440.0 * std::f32::consts::TAU).sin() * 10_000.0) as i16;
            writer.write_sample(s).unwrap();
            writer.write_sample(s).unwrap();
        }
        writer.finalize().unwrap();
        let samples = read_wav(&path).unwrap();
        assert!((15_990..=16_010).contains(&samples.len()), "{}", samples.len());
        let peak = samples.iter().map(|s| s.unsigned_abs()).max().unwrap();
        assert!((9_000..=10_500).contains(&peak), "{peak}");
        write_wav(&dir.join("out.wav"), &samples).unwrap();
        let back = read_wav(&dir.join("out.wav")).unwrap();
        assert_eq!(back.len(), samples.len());
        assert!(back.iter().zip(&samples).all(|(a, b)| (a - b).abs() <= 1), "the same to the last bit");
        assert!(read_wav(&dir.join("missing.wav")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
