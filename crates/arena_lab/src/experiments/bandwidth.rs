//! `arena lab bandwidth`: a server with N moving players (one measured
//! client, the rest server bots running about and fighting) over real UDP;
//! what the measured client's link carries each way, per second: bytes at the
//! UDP level (UDP payloads: netcode's and renet's headers included; the IP and
//! UDP headers, 28 bytes a datagram over IPv4, are given apart), datagrams, and
//! a breakdown by message kind and by part of each datagram (netcode's
//! header and MAC, the bundle's lengths, renet's framing, renet's
//! acknowledgements, the messages).

use std::collections::BTreeMap;

use arena_client::{ClientStats, LocalInput, MessageTally, NetStats, transport::UdpTransport};
use arena_protocol::wire_anatomy::Anatomy;
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{LAB_FRAME_HZ, LabError, LabSettings, WARMUP_S, frame, frames_for};
use crate::harness::LoopbackGame;

/// IPv4 and UDP headers, bytes per datagram.
pub(super) const IP_UDP_HEADER_BYTES: f64 = 28.0;

/// One message kind's share of a direction.
#[derive(Debug, Clone, Serialize)]
pub struct KindRate {
    pub per_s: f64,
    pub bytes_per_s: f64,
}

/// Bytes a second of each part of the datagrams one way.
#[derive(Debug, Clone, Serialize)]
pub struct Parts {
    /// netcode's prefix byte, sequence number and 16-byte MAC.
    pub netcode: f64,
    /// The bundle's length bytes before each renet packet.
    pub bundle: f64,
    /// renet's packet and message framing (type, sequence, channel, count,
    /// ids, lengths).
    pub renet_framing: f64,
    /// renet's acknowledgement packets.
    pub acks: f64,
    /// The messages themselves.
    pub messages: f64,
    /// Datagrams without a payload (netcode's keep-alives).
    pub other: f64,
}

impl Parts {
    fn of(anatomy: &Anatomy, udp_bytes: u64, seconds: f64) -> Self {
        let per_s = |bytes: u64| bytes as f64 / seconds;
        Self {
            netcode: per_s(anatomy.netcode),
            bundle: per_s(anatomy.bundle),
            renet_framing: per_s(anatomy.renet_framing),
            acks: per_s(anatomy.acks),
            messages: per_s(anatomy.messages),
            other: per_s(udp_bytes.saturating_sub(anatomy.total())),
        }
    }
}

/// What `arena lab bandwidth` prints.
#[derive(Debug, Serialize)]
pub struct BandwidthReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    pub players: usize,
    /// UDP payload bytes per second, each way.
    pub down_bytes_per_s: f64,
    pub up_bytes_per_s: f64,
    pub down_kbit_s: f64,
    pub up_kbit_s: f64,
    /// The same with each datagram's IP and UDP headers.
    pub down_kbit_s_with_ip: f64,
    pub up_kbit_s_with_ip: f64,
    pub packets_down_per_s: f64,
    pub packets_up_per_s: f64,
    /// Encoded messages by kind (without renet's and netcode's headers).
    pub messages_down: BTreeMap<&'static str, KindRate>,
    pub messages_up: BTreeMap<&'static str, KindRate>,
    /// Where each way's bytes go.
    pub down_parts: Parts,
    pub up_parts: Parts,
    pub snapshots_per_s: f64,
    /// How old the baselines of the delta snapshots were, on average: the
    /// round trip and the wait for the next snapshot. What a delta says
    /// grows with it.
    pub mean_baseline_age_ms: f64,
    pub rtt_ms: f64,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

#[derive(Clone, Copy)]
struct Counts {
    bytes_in: u64,
    bytes_out: u64,
    datagrams_in: u64,
    datagrams_out: u64,
    snapshots: u64,
    deltas: u64,
    baseline_age_ticks: u64,
    anatomy: (Anatomy, Anatomy),
}

fn counts(client: &App) -> Counts {
    let world = client.world();
    let transport = world.get_resource::<UdpTransport>();
    Counts {
        bytes_in: transport.map(|t| t.counters().bytes_received).unwrap_or(0),
        bytes_out: transport.map(|t| t.counters().bytes_sent).unwrap_or(0),
        datagrams_in: transport.map(|t| t.counters().datagrams_received).unwrap_or(0),
        datagrams_out: transport.map(|t| t.counters().datagrams_sent).unwrap_or(0),
        snapshots: world.resource::<ClientStats>().snapshots_received,
        deltas: world.resource::<ClientStats>().delta_snapshots,
        baseline_age_ticks: world.resource::<ClientStats>().baseline_age_ticks,
        anatomy: transport.map(|t| t.anatomy()).unwrap_or_default(),
    }
}

fn rates(
    start: &BTreeMap<&'static str, (u64, u64)>,
    end: &BTreeMap<&'static str, (u64, u64)>,
    seconds: f64,
) -> BTreeMap<&'static str, KindRate> {
    end.iter()
        .map(|(kind, (n, bytes))| {
            let (n0, b0) = start.get(kind).copied().unwrap_or((0, 0));
            (*kind, KindRate { per_s: (n - n0) as f64 / seconds, bytes_per_s: (bytes - b0) as f64 / seconds })
        })
        .collect()
}

/// The measured player's input `t` seconds in, at [`LAB_FRAME_HZ`] frames a
/// second: running three seconds of four, strafing one way then the other,
/// turning steadily (1.2 rad/s).
pub fn run_a_loop(input: &mut LocalInput, t: f64) {
    input.forward = if (t % 4.0) < 3.0 { 1.0 } else { 0.0 };
    input.right = ((t * 0.7).sin() as f32).signum();
    input.yaw = arena_sim::cmd::wrap_angle(input.yaw + 1.2 / LAB_FRAME_HZ as f32);
}

/// Runs `arena lab bandwidth` with `players` in all.
pub fn bandwidth(settings: LabSettings, players: usize) -> Result<BandwidthReport, LabError> {
    settings.validate()?;
    if players == 0 || players > arena_protocol::MAX_PLAYERS {
        return Err(LabError::Players(players));
    }
    let config = arena_server::ServerConfig {
        bots: players - 1,
        max_clients: 1,
        bot_seed: Some(settings.seed),
        ..settings.server_config()
    };
    let mut lab = LoopbackGame::start(&config, &settings.netcode(), settings.seed, &["Lab"], frame())
        .map_err(|_| LabError::NotJoined)?;
    lab.step(frames_for(WARMUP_S));
    let start = counts(&lab.clients[0]);
    let tally_start = lab.clients[0].world().resource::<MessageTally>().clone();
    let frames = frames_for(settings.seconds);
    for frame_index in 0..frames {
        // The measured player runs a loop too, so its own state keeps changing.
        run_a_loop(&mut lab.clients[0].world_mut().resource_mut::<LocalInput>(), frame_index as f64 / LAB_FRAME_HZ);
        lab.step(1);
    }
    let end = counts(&lab.clients[0]);
    let tally_end = lab.clients[0].world().resource::<MessageTally>().clone();
    let seconds = settings.seconds;
    let per_s = |a: u64, b: u64| a.saturating_sub(b) as f64 / seconds;
    let down_bytes_per_s = per_s(end.bytes_in, start.bytes_in);
    let up_bytes_per_s = per_s(end.bytes_out, start.bytes_out);
    let packets_down_per_s = per_s(end.datagrams_in, start.datagrams_in);
    let packets_up_per_s = per_s(end.datagrams_out, start.datagrams_out);
    let kbit = |bytes: f64| bytes * 8.0 / 1000.0;
    Ok(BandwidthReport {
        experiment: "bandwidth",
        players,
        down_bytes_per_s,
        up_bytes_per_s,
        down_kbit_s: kbit(down_bytes_per_s),
        up_kbit_s: kbit(up_bytes_per_s),
        down_kbit_s_with_ip: kbit(down_bytes_per_s + packets_down_per_s * IP_UDP_HEADER_BYTES),
        up_kbit_s_with_ip: kbit(up_bytes_per_s + packets_up_per_s * IP_UDP_HEADER_BYTES),
        packets_down_per_s,
        packets_up_per_s,
        messages_down: rates(&tally_start.down, &tally_end.down, seconds),
        messages_up: rates(&tally_start.up, &tally_end.up, seconds),
        down_parts: Parts::of(
            &end.anatomy.0.since(&start.anatomy.0),
            end.bytes_in.saturating_sub(start.bytes_in),
            seconds,
        ),
        up_parts: Parts::of(
            &end.anatomy.1.since(&start.anatomy.1),
            end.bytes_out.saturating_sub(start.bytes_out),
            seconds,
        ),
        snapshots_per_s: per_s(end.snapshots, start.snapshots),
        mean_baseline_age_ms: (end.baseline_age_ticks - start.baseline_age_ticks) as f64
            / (end.deltas - start.deltas).max(1) as f64
            * 1000.0
            / f64::from(settings.tick),
        rtt_ms: lab.clients[0].world().resource::<NetStats>().rtt_ms,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
        settings,
    })
}
