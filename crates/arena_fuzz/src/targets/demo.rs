//! Fuzz target of demo files: opened, every chunk read and its frames
//! replayed through the shared rules, whatever the bytes.

use crate::target::Target;

/// Demo files as read from disk: any bytes, and (through the seeds' mutations)
/// real demos damaged anywhere, are opened and every chunk read; an error is
/// fine, a panic or an allocation past the limits is not.
pub struct DemoFiles;

impl Target for DemoFiles {
    fn name(&self) -> &'static str {
        "demo_files"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        // Real recordings (frames as a server codes them), short and long.
        [3u32, 70, 700].iter().filter_map(|&ticks| arena_replay::example_demo(ticks, true, |_, _| {}).ok()).collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::demo::{DemoReader, MAX_CHUNK_BYTES, MAX_FRAME_BYTES};
        use arena_replay::{Mismatch, ReplayWorld, chunk_frames, world_of};
        /// Player ticks replayed per input: enough to run every path of a
        /// replay on what decoded, few enough for millions of inputs.
        const REPLAY_BUDGET: usize = 48;
        let Ok(reader) = DemoReader::open(input) else { return };
        for i in 0..reader.chunks.len() {
            if let Ok(frames) = reader.read_chunk(i) {
                let bytes: usize = frames.iter().map(|(_, b)| b.len()).sum();
                assert!(bytes <= MAX_CHUNK_BYTES && frames.iter().all(|(_, b)| b.len() <= MAX_FRAME_BYTES));
            }
        }
        let _ = reader.chunk_for(u32::MAX);
        // The frames decoded, and replayed through the shared rules: an
        // error or a mismatch is fine, a panic is not.
        let Ok(world) = world_of(&reader) else { return };
        let mut replay = ReplayWorld::default();
        let mut mismatches: Vec<Mismatch> = Vec::new();
        let mut budget = REPLAY_BUDGET;
        for i in 0..reader.chunks.len() {
            let Ok(frames) = chunk_frames(&reader, i) else { continue };
            for frame in &frames {
                budget = budget.saturating_sub(frame.players.len().max(1));
                if budget == 0 {
                    return;
                }
                replay.apply(frame, &world, 1.0 / 64.0, &mut mismatches);
            }
        }
    }
}
