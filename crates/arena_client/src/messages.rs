//! Every message from the server, in one place: decoded with size limits,
//! validated (a server may be hostile too), counted when bad, and routed to
//! the small systems that apply them: the roster, the snapshot, the game
//! messages (combat, scores, the match). A refusal ends the connection.

use arena_protocol::{Refusal, ToClient, decode};
use bevy::prelude::*;

use crate::connection::{ServerConnection, end_connection};
use crate::transport::{Received, UdpTransport};
use crate::vocabulary::{ClientStats, GameMessage, MessageTally, RosterNews, SessionState, SnapshotReceived};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<RosterNews>()
        .add_message::<SnapshotReceived>()
        .add_message::<GameMessage>()
        .init_session_resource::<MessageTally>();
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
            ToClient::Refused(Refusal::Name(refusal)) => {
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
            | ToClient::KillCam(_)) => {
                game.write(GameMessage(message));
            }
        }
    }
}
