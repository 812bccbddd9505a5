//! Fuzz targets of demos: files opened, every chunk read and its frames
//! replayed through the shared rules, whatever the bytes; and one frame's
//! bytes (inside a file they are compressed, which mutations rarely get
//! through) decoded, chat lines among them.

use crate::target::Target;

/// Demo files as read from disk: any bytes, and (through the seeds' mutations)
/// real demos damaged anywhere, are opened and every chunk read; an error is
/// fine, a panic or an allocation past the limits is not.
#[derive(Default)]
pub struct DemoFiles {
    /// The built-in maps' worlds, each built once (parsing a map and
    /// building its collision tree took longer than the rest of an input);
    /// keyed by the demo's map name, so at most the built-in maps.
    worlds: std::collections::HashMap<String, arena_sim::ArenaWorld>,
}

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
        // Keyed as the built-in maps are found (any case, spaces around
        // trimmed), so that a name's spellings share one world.
        let world = match self.worlds.entry(reader.header.map.trim().to_ascii_lowercase()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let Ok(world) = world_of(&reader) else { return };
                e.insert(world)
            }
        };
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
                replay.apply(frame, world, 1.0 / 64.0, &mut mismatches);
            }
        }
    }
}

/// One demo frame's bytes, as a chunk holds them once inflated: decoded
/// with the limits, and what decodes encodes to bytes that decode the same.
pub struct DemoFrames;

impl Target for DemoFrames {
    fn name(&self) -> &'static str {
        "demo_frames"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use arena_protocol::demo_frame::{DemoChat, DemoFrag, DemoFrame, DemoPlayerInfo, FragScore, FrameCodec};
        use arena_sim::{HitZone, PlayerId};
        let frame = DemoFrame {
            tick: 1000,
            joined: vec![DemoPlayerInfo { id: PlayerId(2), name: "Ada".into(), bot: false }],
            frags: vec![DemoFrag {
                killer: PlayerId(2),
                victim: PlayerId(3),
                zone: HitZone::Head,
                score: FragScore::TeamKill,
            }],
            chat: vec![
                DemoChat { from: PlayerId(2), name: "Ada".into(), team: true, text: "push B".into() },
                DemoChat { from: PlayerId(3), name: "Sam".into(), team: false, text: "gg \u{e9}".into() },
            ],
            ..Default::default()
        };
        vec![FrameCodec::default().encode(&frame)]
    }

    fn run(&mut self, input: &[u8]) {
        use arena_protocol::demo_frame::{FrameCodec, MAX_FRAME_CHAT};
        let Ok(frame) = FrameCodec::default().decode(1000, input) else { return };
        assert!(frame.chat.len() <= MAX_FRAME_CHAT);
        assert!(frame.chat.iter().all(|c| c.text.len() <= arena_protocol::chat::MAX_CHAT_BYTES));
        let again = FrameCodec::default().encode(&frame);
        let twice = FrameCodec::default().decode(1000, &again).expect("an encoded frame decodes");
        assert_eq!(twice.chat, frame.chat);
        assert_eq!(twice.frags, frame.frags);
    }
}
