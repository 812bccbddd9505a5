//! The connection's traffic each frame, in one place: the transport pumped
//! (what arrived, into renet; what renet and the command outbox hold, out
//! at its departure time), and every message from the server decoded with
//! size limits, validated (a server may be hostile too), counted when bad,
//! and routed to the small systems that apply them: the roster, the
//! snapshot, the game messages (combat, scores, the match). A refusal, or a
//! transport that fails, ends the connection.

use arena_protocol::{ToClient, decode};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::connection::{ServerConnection, end_connection};
use crate::transport::{Received, UdpTransport};
use crate::vocabulary::{ClientStats, GameMessage, MessageTally, Outbox, RosterNews, SessionState, SnapshotReceived};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<RosterNews>()
        .add_message::<SnapshotReceived>()
        .add_message::<GameMessage>()
        .init_session_resource::<MessageTally>();
}

/// What arrived since the last frame, into renet (at its arrival times).
pub(crate) fn receive_packets(
    mut transport: ResMut<UdpTransport>,
    mut client: ResMut<RenetClient>,
    time: Res<Time<Real>>,
    mut commands: Commands,
) {
    if let Some(first) = time.first_update() {
        transport.start_clock(first);
    }
    if let Err(e) = transport.receive(time.elapsed(), &mut client) {
        end_connection(&mut commands, format!("Lost the connection: {e}"));
    }
}

/// What renet and the command outbox hold, out: each command at its
/// departure time.
pub(crate) fn send_packets(
    mut transport: ResMut<UdpTransport>,
    mut client: ResMut<RenetClient>,
    mut outbox: ResMut<Outbox>,
    time: Res<Time<Real>>,
    mut commands: Commands,
) {
    let now = time.elapsed();
    let mut sent = Ok(());
    // Each command message goes in its own datagram at its departure time,
    // outside renet (with whatever else renet had queued, on the first);
    // voice frames ride with the first, or go now in one of their own.
    let mut voice = std::mem::take(&mut outbox.voice);
    for (at, _channel, bytes, newest) in std::mem::take(&mut outbox.commands) {
        let riders = std::mem::take(&mut voice);
        sent = sent.and_then(|()| transport.send_with(at.max(now), &mut client, Some((&bytes, newest)), &riders));
    }
    if !voice.is_empty() {
        sent = sent.and_then(|()| transport.send_with(now, &mut client, None, &voice));
    }
    // The rest (acknowledgements, reliable messages) went with the commands;
    // without commands, it goes once it has waited long enough.
    if let Err(e) = sent.and_then(|()| transport.send(now, &mut client, false)) {
        end_connection(&mut commands, format!("Lost the connection: {e}"));
    }
}

/// Reads, checks and routes what the server sent since the last frame.
pub(crate) fn route_messages(
    mut stats: ResMut<ClientStats>,
    mut tally: ResMut<MessageTally>,
    connection: Option<Res<ServerConnection>>,
    mut transport: Option<ResMut<UdpTransport>>,
    mut roster: MessageWriter<RosterNews>,
    mut snapshots: MessageWriter<SnapshotReceived>,
    mut game: MessageWriter<GameMessage>,
    mut commands: Commands,
) {
    let Some(received) = transport.as_mut().map(|t| t.take_messages()) else { return };
    for Received { bytes, at, .. } in received {
        let checked = decode::<ToClient>(&bytes).map_err(|e| e.to_string()).and_then(|m| {
            m.validate()?;
            Ok(m)
        });
        let message = match checked {
            Ok(message) => {
                tally.count_down(message.kind(), bytes.len());
                message
            }
            Err(e) => {
                stats.bad_messages += 1;
                debug!("dropped a bad message from the server: {e}");
                continue;
            }
        };
        match message {
            ToClient::Refused(refusal) => {
                let name = connection.as_ref().map(|c| c.name.clone()).unwrap_or_default();
                end_connection(&mut commands, refusal.explain(&name));
                if let Some(transport) = transport.as_mut() {
                    transport.disconnect();
                }
                return;
            }
            ToClient::Welcome(welcome) => {
                roster.write(RosterNews::Welcome(welcome));
            }
            ToClient::PlayerJoined(info) => {
                roster.write(RosterNews::Joined(info));
            }
            ToClient::PlayerLeft { id } => {
                roster.write(RosterNews::Left(id));
            }
            ToClient::SideChanged { id, side } => {
                roster.write(RosterNews::Side(id, side));
            }
            ToClient::ChangeMap(id) => {
                roster.write(RosterNews::Map(id));
            }
            ToClient::ModeChanged { mode } => {
                roster.write(RosterNews::Mode(mode));
            }
            ToClient::Snapshot(bytes) => {
                stats.snapshots_received += 1;
                snapshots.write(SnapshotReceived { bytes, arrived: at });
            }
            message @ (ToClient::ShotResult(_)
            | ToClient::ShotFired { .. }
            | ToClient::Damaged { .. }
            | ToClient::Killed { .. }
            | ToClient::Scores(_)
            | ToClient::Match(_)
            | ToClient::Range(_)
            | ToClient::RocketFired { .. }
            | ToClient::RocketExploded { .. }
            | ToClient::RocketHit(_)
            | ToClient::KillCam(_)
            | ToClient::Chat { .. }
            | ToClient::ChatRefused(_)
            | ToClient::Notice { .. }
            | ToClient::Vote(_)
            | ToClient::VoteRefused(_)
            | ToClient::MapData { .. }
            | ToClient::MapRefused { .. }
            | ToClient::Voice { .. }) => {
                game.write(GameMessage(message));
            }
        }
    }
}
