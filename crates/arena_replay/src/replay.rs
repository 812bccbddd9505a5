//! Replaying a demo: its recorded commands run again through the shared
//! rules (`step_player`, the one function server and clients run), with
//! the server's own changes (hits, deaths, respawns, kicks) laid on where
//! the demo recorded them. Each keyframe is then a check: the replayed
//! states must equal the recorded ones bit for bit, the shots and rockets
//! the replay fires must be the ones the server resolved, and the frags
//! counted must give the recorded scores. Seeking starts at the last
//! keyframe before the tick sought and replays from there.

use std::collections::BTreeMap;

use arena_sim::{ArenaWorld, MapDef, PlayerId, PlayerState, Shot, UserCmd, step_player};

use arena_protocol::demo::{DemoError, DemoReader};
use arena_protocol::demo_frame::{DemoFrame, DemoPlayerInfo, FragScore, FrameCodec, FrameError, same_state};

/// A player as the replay has them.
#[derive(Clone, Debug)]
pub struct ReplayPlayer {
    pub info: DemoPlayerInfo,
    /// At the end of the replayed tick.
    pub state: PlayerState,
    /// What the last command ran from (the `before` of the next step).
    pub before: PlayerState,
    pub frags: i16,
    pub deaths: u16,
    /// How far behind the present this player's client drew the others, ms.
    pub view_delay_ms: u16,
    /// The command the last tick ran.
    pub cmd: UserCmd,
}

/// The match as replayed up to a tick.
#[derive(Clone, Debug, Default)]
pub struct ReplayWorld {
    /// The last tick replayed.
    pub tick: u32,
    pub players: BTreeMap<PlayerId, ReplayPlayer>,
    /// The map's items as the recording last listed them (none on a server
    /// without items, or a demo from before items).
    pub items: Vec<arena_sim::ItemSlot>,
}

/// What a replayed tick fired, as the shared rules give it.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    pub shots: Vec<(PlayerId, Shot)>,
    pub rockets: Vec<(PlayerId, Shot)>,
}

/// Where a replay and its recording disagree.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// A keyframe's state of a player differs from the replayed one.
    State { tick: u32, player: PlayerId, recorded: Box<PlayerState>, replayed: Box<PlayerState> },
    /// A keyframe's score differs from the frags counted.
    Score { tick: u32, player: PlayerId, recorded: (i16, u16), replayed: (i16, u16) },
    /// A command for a player the replay does not know, with no state to run from.
    UnknownPlayer { tick: u32, player: PlayerId },
    /// The server resolved other shots than the replay fired.
    Shots { tick: u32, player: PlayerId, recorded: usize, replayed: usize },
    /// A rocket the server launched that the replay did not fire exactly so.
    Rocket { tick: u32, player: PlayerId },
    /// A player the keyframe lacks or adds.
    Roster { tick: u32, player: PlayerId },
}

impl ReplayWorld {
    /// The world at a keyframe: its players, as recorded.
    fn adopt(&mut self, frame: &DemoFrame) {
        let Some(key) = &frame.keyframe else { return };
        self.tick = frame.tick;
        if let Some(items) = &frame.items {
            self.items.clone_from(items);
        }
        self.players = key
            .iter()
            .map(|k| {
                let p = ReplayPlayer {
                    info: k.info.clone(),
                    state: k.state,
                    before: k.state,
                    frags: k.frags,
                    deaths: k.deaths,
                    view_delay_ms: k.view_delay_ms,
                    cmd: UserCmd { tick: frame.tick, ..Default::default() },
                };
                (k.info.id, p)
            })
            .collect();
    }

    /// Replays one frame (the tick after the last), and checks it against
    /// what it recorded: every disagreement goes into `mismatches`.
    pub fn apply(
        &mut self,
        frame: &DemoFrame,
        world: &ArenaWorld,
        dt_s: f32,
        mismatches: &mut Vec<Mismatch>,
    ) -> Replayed {
        let tick = frame.tick;
        self.tick = tick;
        if let Some(items) = &frame.items {
            self.items.clone_from(items);
        }
        for id in &frame.left {
            self.players.remove(id);
        }
        for info in &frame.joined {
            let p = ReplayPlayer {
                info: info.clone(),
                state: PlayerState::default(),
                before: PlayerState::default(),
                frags: 0,
                deaths: 0,
                view_delay_ms: 0,
                cmd: UserCmd::default(),
            };
            self.players.insert(info.id, p);
        }
        let mut out = Replayed::default();
        for p in &frame.players {
            let Some(player) = self.players.get_mut(&p.id) else {
                mismatches.push(Mismatch::UnknownPlayer { tick, player: p.id });
                continue;
            };
            let from = p.from.unwrap_or(player.state);
            let (next, events) = step_player(&player.before, &from, &p.cmd, world, dt_s);
            player.before = from;
            player.state = p.after.unwrap_or(next);
            player.cmd = p.cmd;
            if let Some(shot) = events.weapon.shot {
                out.shots.push((p.id, shot));
            }
            if let Some(aim) = events.weapon.rocket {
                out.rockets.push((p.id, aim.shot));
            }
        }
        // The shots the server resolved are the ones fired this tick.
        let mut shooters: BTreeMap<PlayerId, (usize, usize)> = BTreeMap::new();
        for s in &frame.shots {
            shooters.entry(s.shooter).or_default().0 += 1;
        }
        for (id, _) in &out.shots {
            shooters.entry(*id).or_default().1 += 1;
        }
        for (player, (recorded, replayed)) in shooters {
            if recorded != replayed {
                mismatches.push(Mismatch::Shots { tick, player, recorded, replayed });
            }
        }
        for r in &frame.rockets {
            let fired = out.rockets.iter().any(|(id, shot)| {
                *id == r.owner
                    && shot.origin.to_array().map(f32::to_bits) == r.origin.to_array().map(f32::to_bits)
                    && shot.dir.to_array().map(f32::to_bits) == r.dir.to_array().map(f32::to_bits)
            });
            if !fired {
                mismatches.push(Mismatch::Rocket { tick, player: r.owner });
            }
        }
        // The frags, as the server counted them.
        for f in &frame.frags {
            if f.score == FragScore::AfterTheEnd {
                continue; // the results stood
            }
            if let Some(v) = self.players.get_mut(&f.victim) {
                v.deaths = v.deaths.saturating_add(1);
            }
            if let Some(k) = self.players.get_mut(&f.killer) {
                // As the server scores (`modes::frag_worth`): one off for a
                // fall or a teammate, the demo saying which was which.
                k.frags = if f.killer == f.victim || f.score == FragScore::TeamKill {
                    k.frags.saturating_sub(1)
                } else {
                    k.frags.saturating_add(1)
                };
            }
        }
        if let Some(key) = &frame.keyframe {
            for k in key {
                let id = k.info.id;
                match self.players.get(&id) {
                    Some(p) if !same_state(&p.state, &k.state) => mismatches.push(Mismatch::State {
                        tick,
                        player: id,
                        recorded: Box::new(k.state),
                        replayed: Box::new(p.state),
                    }),
                    Some(p) if (p.frags, p.deaths) != (k.frags, k.deaths) => mismatches.push(Mismatch::Score {
                        tick,
                        player: id,
                        recorded: (k.frags, k.deaths),
                        replayed: (p.frags, p.deaths),
                    }),
                    Some(_) => {}
                    None => mismatches.push(Mismatch::Roster { tick, player: id }),
                }
            }
            for id in self.players.keys() {
                if !key.iter().any(|k| k.info.id == *id) {
                    mismatches.push(Mismatch::Roster { tick, player: *id });
                }
            }
            // The keyframe stands from here on (scores and delays with it).
            let befores: BTreeMap<PlayerId, PlayerState> = self.players.iter().map(|(id, p)| (*id, p.before)).collect();
            self.adopt(frame);
            for (id, p) in &mut self.players {
                if let Some(b) = befores.get(id) {
                    p.before = *b;
                }
            }
        }
        out
    }
}

/// What went wrong replaying a demo.
#[derive(Debug)]
pub enum ReplayError {
    Demo(DemoError),
    /// A frame that would not decode: its chunk and tick, and why.
    Frame {
        chunk: usize,
        tick: u32,
        error: FrameError,
    },
    /// The demo was recorded on a map this build does not have.
    UnknownMap(String),
    /// The demo has no keyframe at or before the tick sought.
    NoKeyframe {
        tick: u32,
    },
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Demo(e) => write!(f, "{e}"),
            Self::Frame { chunk, tick, error } => write!(f, "chunk {chunk}, tick {tick}: {error}"),
            Self::UnknownMap(m) => write!(f, "the demo's map {m:?} is not one this build has"),
            Self::NoKeyframe { tick } => write!(f, "no keyframe at or before tick {tick}"),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<DemoError> for ReplayError {
    fn from(e: DemoError) -> Self {
        Self::Demo(e)
    }
}

/// Chunk `i`'s frames, decoded (a chunk decodes on its own).
pub fn chunk_frames(reader: &DemoReader, i: usize) -> Result<Vec<DemoFrame>, ReplayError> {
    let mut codec = FrameCodec::reading_format(reader.format);
    reader
        .read_chunk(i)?
        .into_iter()
        .map(|(tick, bytes)| codec.decode(tick, &bytes).map_err(|error| ReplayError::Frame { chunk: i, tick, error }))
        .collect()
}

/// The world a demo's header names, built.
pub fn world_of(reader: &DemoReader) -> Result<ArenaWorld, ReplayError> {
    let map = MapDef::built_in(&reader.header.map).ok_or_else(|| ReplayError::UnknownMap(reader.header.map.clone()))?;
    Ok(ArenaWorld::new(map))
}

/// A replay in progress: the world, and where in the demo it stands.
pub struct Replay {
    reader: DemoReader,
    pub world: ReplayWorld,
    chunk: usize,
    frames: Vec<DemoFrame>,
    next: usize,
}

impl Replay {
    /// The world at the end of tick `target` (or of the last tick before
    /// it the demo has): from the last keyframe at or before it, replayed on.
    /// A demo cut before its first chunk is an error that says so.
    pub fn seek(reader: &DemoReader, target: u32, world: &ArenaWorld, dt_s: f32) -> Result<Self, ReplayError> {
        reader.check_playable()?;
        let last = reader.chunks.len().checked_sub(1).ok_or(ReplayError::NoKeyframe { tick: target })?;
        let mut i = reader.chunk_for(target).unwrap_or(last);
        loop {
            let frames = chunk_frames(reader, i)?;
            let key = frames.iter().rposition(|f| f.keyframe.is_some() && f.tick <= target);
            if let Some(k) = key {
                let mut replay =
                    Self { reader: reader.clone(), world: ReplayWorld::default(), chunk: i, frames, next: k + 1 };
                replay.world.adopt(&replay.frames[k]);
                let mut ignored = Vec::new();
                while replay.peek_tick()?.is_some_and(|t| t <= target) {
                    replay.step(world, dt_s, &mut ignored)?;
                }
                return Ok(replay);
            }
            i = i.checked_sub(1).ok_or(ReplayError::NoKeyframe { tick: target })?;
        }
    }

    /// The tick of the next frame, if any (reading its chunk when needed).
    pub fn peek_tick(&mut self) -> Result<Option<u32>, ReplayError> {
        while self.next >= self.frames.len() {
            if self.chunk + 1 >= self.reader.chunks.len() {
                return Ok(None);
            }
            self.chunk += 1;
            self.frames = chunk_frames(&self.reader, self.chunk)?;
            self.next = 0;
        }
        Ok(Some(self.frames[self.next].tick))
    }

    /// Replays the next frame; `None` at the end. The frame comes back with
    /// what the replay fired (for drawing), mismatches into `mismatches`.
    pub fn step(
        &mut self,
        world: &ArenaWorld,
        dt_s: f32,
        mismatches: &mut Vec<Mismatch>,
    ) -> Result<Option<(DemoFrame, Replayed)>, ReplayError> {
        if self.peek_tick()?.is_none() {
            return Ok(None);
        }
        let frame = std::mem::take(&mut self.frames[self.next]);
        self.next += 1;
        let fired = self.world.apply(&frame, world, dt_s, mismatches);
        Ok(Some((frame, fired)))
    }
}

/// What `arena demo verify` finds.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub frames: u64,
    pub keyframes: u64,
    /// Player ticks replayed through the shared rules.
    pub player_ticks: u64,
    /// Player states compared at keyframes, bit for bit.
    pub states_checked: u64,
    /// States the server changed outside the rules (hits, deaths, respawns, kicks).
    pub server_changes: u64,
    pub shots: u64,
    pub rockets: u64,
    pub mismatches: u64,
    /// The first few, described.
    pub first_mismatches: Vec<String>,
    /// The slowest seek to the start of a minute, milliseconds.
    pub seek_ms_max: f64,
    /// The ticks sought (each minute's start).
    pub seeks: usize,
    /// Whether the recording finished; a cut demo is verified up to its
    /// last whole chunk (every check is at a keyframe, so none is left out
    /// for want of the end).
    pub complete: bool,
    /// The last tick verified: the demo's last, or a cut one's last whole.
    pub ends_at_tick: Option<u32>,
    /// Where a cut demo ends, said; none when complete.
    pub ends: Option<String>,
}

/// Replays a whole demo from its first keyframe, checking every frame, and
/// times a seek to the start of every minute. A cut demo (its recording did
/// not finish) is replayed up to its last whole chunk and passes if that
/// does, saying where it ends; one cut before its first chunk is an error.
pub fn verify(reader: &DemoReader) -> Result<VerifyReport, ReplayError> {
    verify_with_maps(reader, &[])
}

/// [`verify`] of a demo whose map may be one of `maps` (map files a server
/// played, `arena demo verify --map FILE`) as well as a built-in one.
pub fn verify_with_maps(reader: &DemoReader, maps: &[MapDef]) -> Result<VerifyReport, ReplayError> {
    reader.check_playable()?;
    let world = match maps.iter().find(|m| m.name == reader.header.map) {
        Some(map) => ArenaWorld::new(map.clone()),
        None => world_of(reader)?,
    };
    let hz = u32::from(reader.header.tick_hz.max(1));
    let dt_s = 1.0 / hz as f32;
    let mut report = VerifyReport {
        complete: reader.cut.is_none(),
        ends_at_tick: reader.chunks.last().map(|c| c.last_tick),
        ends: reader.ends(),
        ..VerifyReport::default()
    };
    let mut mismatches = Vec::new();
    let mut started = false;
    let mut replay =
        Replay { reader: reader.clone(), world: ReplayWorld::default(), chunk: 0, frames: Vec::new(), next: 0 };
    if !reader.chunks.is_empty() {
        replay.frames = chunk_frames(reader, 0)?;
    }
    while replay.peek_tick()?.is_some() {
        if !started {
            // Up to the first keyframe there is nothing to run from.
            let frame = std::mem::take(&mut replay.frames[replay.next]);
            replay.next += 1;
            report.frames += 1;
            if frame.keyframe.is_some() {
                replay.world.adopt(&frame);
                report.keyframes += 1;
                started = true;
            }
            continue;
        }
        let before = mismatches.len();
        let Some((frame, fired)) = replay.step(&world, dt_s, &mut mismatches)? else { break };
        report.frames += 1;
        report.player_ticks += frame.players.len() as u64;
        report.server_changes += frame.players.iter().filter(|p| p.after.is_some()).count() as u64;
        report.shots += fired.shots.len() as u64;
        report.rockets += frame.rockets.len() as u64;
        if let Some(key) = &frame.keyframe {
            report.keyframes += 1;
            report.states_checked += key.len() as u64;
        }
        for m in &mismatches[before..] {
            if report.first_mismatches.len() < 8 {
                report.first_mismatches.push(format!("{m:?}"));
            }
        }
    }
    report.mismatches = mismatches.len() as u64;
    report.ok = started && mismatches.is_empty();
    if let (Some(first), Some(last)) = (reader.chunks.first(), reader.chunks.last()) {
        let minute = 60 * hz;
        let mut t = first.first_tick;
        while t <= last.last_tick {
            let start = std::time::Instant::now();
            let seeked = Replay::seek(reader, t, &world, dt_s)?;
            std::hint::black_box(&seeked.world);
            report.seek_ms_max = report.seek_ms_max.max(start.elapsed().as_secs_f64() * 1000.0);
            report.seeks += 1;
            t = match t.checked_add(minute) {
                Some(t) => t,
                None => break,
            };
        }
    }
    Ok(report)
}

/// [`verify`] of a file.
pub fn verify_file(path: &std::path::Path) -> Result<VerifyReport, ReplayError> {
    verify_file_with_maps(path, &[])
}

/// [`verify_with_maps`] of a file.
pub fn verify_file_with_maps(path: &std::path::Path, maps: &[MapDef]) -> Result<VerifyReport, ReplayError> {
    let bytes = arena_protocol::demo::read_file(path)?;
    let reader = DemoReader::open(bytes)?;
    verify_with_maps(&reader, maps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::example_demo;
    use arena_protocol::demo_frame::PlayerTick;

    const HZ: u32 = 64;

    fn recorded(ticks: u32, fire: bool, tamper: impl Fn(u32, &mut PlayerTick)) -> Vec<u8> {
        example_demo(ticks, fire, tamper).unwrap()
    }

    #[test]
    fn a_faithful_recording_verifies_and_a_changed_command_does_not() {
        let bytes = recorded(300, false, |_, _| {});
        let reader = DemoReader::open(bytes).unwrap();
        let report = verify(&reader).unwrap();
        assert!(report.ok, "{report:?}");
        assert_eq!(report.keyframes, 5);
        assert_eq!(report.states_checked, 8);
        assert_eq!(report.player_ticks, 2 * 299);
        // One command changed after the state was stepped (a standing
        // tick recorded where it ran): the replay runs the changed one and
        // the next keyframe disagrees.
        let bytes = recorded(300, false, |tick, p| {
            if tick == 100 && p.id == PlayerId(0) {
                p.cmd.forward = 0.0;
            }
        });
        let reader = DemoReader::open(bytes).unwrap();
        let report = verify(&reader).unwrap();
        assert!(!report.ok);
        assert!(report.first_mismatches[0].contains("State { tick: 129, player: PlayerId(0)"), "{report:?}");
    }

    #[test]
    fn a_format_2_file_still_reads_and_verifies() {
        let mut bytes = recorded(200, false, |_, _| {});
        // The format is the two bytes after the magic (outside the header's check).
        assert_eq!(bytes[10..12], arena_protocol::demo::DEMO_FORMAT.to_le_bytes());
        bytes[10..12].copy_from_slice(&2u16.to_le_bytes());
        let reader = DemoReader::open(bytes.clone()).unwrap();
        assert_eq!(reader.format, 2);
        assert!(verify(&reader).unwrap().ok);
        bytes[10..12].copy_from_slice(&1u16.to_le_bytes());
        assert!(matches!(DemoReader::open(bytes), Err(DemoError::UnsupportedFormat(1))));
    }

    #[test]
    fn unrecorded_shots_are_found() {
        // Player 1 fires, the recording lists no resolved shot.
        let bytes = recorded(120, true, |_, _| {});
        let reader = DemoReader::open(bytes).unwrap();
        let report = verify(&reader).unwrap();
        assert!(!report.ok);
        assert!(report.first_mismatches.iter().all(|m| m.starts_with("Shots")), "{report:?}");
    }

    #[test]
    fn seeking_lands_on_the_same_world_as_replaying_from_the_start() {
        let bytes = recorded(400, false, |_, _| {});
        let reader = DemoReader::open(bytes).unwrap();
        let world = world_of(&reader).unwrap();
        let dt = 1.0 / HZ as f32;
        let mut from_start = Replay::seek(&reader, 1, &world, dt).unwrap();
        let mut ignored = Vec::new();
        while from_start.world.tick < 333 {
            from_start.step(&world, dt, &mut ignored).unwrap();
        }
        let sought = Replay::seek(&reader, 333, &world, dt).unwrap();
        assert_eq!(sought.world.tick, 333);
        for (id, p) in &from_start.world.players {
            assert!(same_state(&p.state, &sought.world.players[id].state));
        }
        assert!(ignored.is_empty());
        // Before the first keyframe there is nothing to seek to.
        assert!(matches!(Replay::seek(&reader, 0, &world, dt), Err(ReplayError::NoKeyframe { tick: 0 })));
    }

    #[test]
    fn a_cut_recording_verifies_up_to_its_last_whole_chunk_and_says_where_it_ends() {
        let bytes = recorded(300, false, |_, _| {});
        let full = DemoReader::open(bytes.clone()).unwrap();
        let report = verify(&full).unwrap();
        assert!(report.ok && report.complete && report.ends.is_none(), "{report:?}");
        assert_eq!(report.ends_at_tick, Some(300));
        // A chunk a second, each starting on a keyframe: cut inside the
        // fourth (a recorder killed), the first three verify.
        assert_eq!(full.chunks.len(), 5);
        let reader = DemoReader::open(bytes[..full.chunks[3].offset as usize + 40].to_vec()).unwrap();
        let report = verify(&reader).unwrap();
        assert!(report.ok && !report.complete, "{report:?}");
        assert_eq!((report.ends_at_tick, report.keyframes, report.frames), (Some(192), 3, 192));
        let ends = report.ends.unwrap_or_default();
        assert!(ends.contains("did not finish") && ends.contains("whole up to tick 192, 0:03"), "{ends}");
        // Cut before its first chunk: nothing to verify or play, said.
        let reader = DemoReader::open(bytes[..full.chunks[0].offset as usize + 10].to_vec()).unwrap();
        let error = verify(&reader).unwrap_err().to_string();
        assert!(error.contains("cut before its first chunk"), "{error}");
        let world = world_of(&reader).unwrap();
        let error = Replay::seek(&reader, 1, &world, 1.0 / HZ as f32).err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains("cut before its first chunk")));
    }
}
