//! A demo as a server records one, made up: two players running, turning
//! and firing through the shared rules (`step_player`), for tests, fuzz
//! seeds and benchmarks.

use arena_protocol::demo::{DemoError, DemoHeader, DemoWriter};
use arena_protocol::demo_frame::{DemoFrame, DemoPlayerInfo, FrameCodec, KeyPlayer, PlayerTick};
use arena_sim::{ArenaWorld, MapDef, PlayerId, PlayerState, UserCmd, step_player};

/// The tick rate of [`example_demo`].
pub(crate) const EXAMPLE_DEMO_HZ: u32 = 64;

/// A demo as a server records one: two players running and turning (the
/// second firing in bursts when `fire`), a keyframe a second; `tamper`
/// changes a player's recorded tick after it ran (for tests). For tests,
/// fuzz seeds and benchmarks.
pub fn example_demo(ticks: u32, fire: bool, tamper: impl Fn(u32, &mut PlayerTick)) -> Result<Vec<u8>, DemoError> {
    let world = ArenaWorld::new(MapDef::foundry());
    let dt = 1.0 / EXAMPLE_DEMO_HZ as f32;
    let spawn = |x: f32| {
        arena_sim::quant::snap_state(&PlayerState {
            pos: glam::Vec3::new(x, 0.0, 0.0),
            alive: true,
            health: 100,
            ammo: 30,
            ..Default::default()
        })
    };
    let mut states = [spawn(-2.0), spawn(2.0)];
    let header = DemoHeader {
        protocol: arena_protocol::PROTOCOL_VERSION,
        tick_hz: EXAMPLE_DEMO_HZ as u16,
        map: MapDef::foundry().name,
        server_name: "example".into(),
        started_unix_s: 0,
    };
    let mut writer = DemoWriter::new(Vec::new(), &header)?;
    let mut codec = FrameCodec::default();
    for tick in 1..=ticks {
        let mut frame = DemoFrame { tick, ..Default::default() };
        for (i, state) in states.iter_mut().enumerate() {
            let mut cmd = UserCmd {
                tick,
                forward: 1.0,
                right: if (tick / 40) % 2 == 0 { 0.5 } else { -0.5 },
                yaw: 0.02 * tick as f32 * (i as f32 + 1.0),
                ..Default::default()
            };
            if fire && i == 1 && tick % 9 < 3 {
                cmd.buttons = arena_sim::Buttons::FIRE;
                cmd.render_tick = f64::from(tick) - 6.25;
            }
            cmd.quantize();
            let (next, _) = step_player(state, state, &cmd, &world, dt);
            let mut p = PlayerTick { id: PlayerId(i as u8), cmd, from: None, after: None };
            tamper(tick, &mut p);
            *state = next;
            frame.players.push(p);
        }
        if tick % EXAMPLE_DEMO_HZ == 1 {
            frame.keyframe = Some(
                states
                    .iter()
                    .enumerate()
                    .map(|(i, s)| KeyPlayer {
                        info: DemoPlayerInfo { id: PlayerId(i as u8), name: format!("P{i}"), bot: false },
                        state: *s,
                        frags: 0,
                        deaths: 0,
                        view_delay_ms: 100,
                    })
                    .collect(),
            );
        }
        if writer.buffered_bytes() == 0 {
            codec.reset();
        }
        writer.push(tick, &codec.encode(&frame))?;
    }
    writer.finish()
}
