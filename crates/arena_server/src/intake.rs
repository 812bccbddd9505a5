//! Command intake: decode what clients sent, check it, repair or drop bad
//! fields, and keep each player's newest command for the simulation.

use arena_protocol::{ToServer, channel, decode};
use arena_sim::{UserCmd, tick_after};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::connections::Roster;
use crate::{ServerSet, ServerStats};

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(PreUpdate, receive_commands.in_set(ServerSet::Intake));
}

/// The commands a player has sent that the simulation has not used yet.
///
/// The baseline server keeps only the newest command and runs it every tick
/// until a newer one arrives: one command per player per tick, so sending
/// faster gains nothing.
#[derive(Component, Debug, Default)]
pub struct CommandInbox {
    pub newest: Option<UserCmd>,
}

impl CommandInbox {
    /// Offers a sanitised command; returns false if it was older than the newest.
    pub fn offer(&mut self, cmd: UserCmd) -> bool {
        match self.newest {
            Some(newest) if !tick_after(cmd.tick, newest.tick) => false,
            _ => {
                self.newest = Some(cmd);
                true
            }
        }
    }
}

fn receive_commands(
    mut server: ResMut<RenetServer>,
    roster: Res<Roster>,
    mut inboxes: Query<&mut CommandInbox>,
    mut stats: ResMut<ServerStats>,
) {
    for client_id in server.clients_id() {
        let entity = roster.by_client(client_id).map(|(_, e)| e.entity);
        for channel in [channel::RELIABLE, channel::UNRELIABLE] {
            while let Some(bytes) = server.receive_message(client_id, channel) {
                let Some(mut inbox) = entity.and_then(|e| inboxes.get_mut(e).ok()) else {
                    stats.unknown_client_messages += 1;
                    debug!("dropped a message from client {client_id}, which has no player");
                    continue;
                };
                let message = match decode::<ToServer>(&bytes).map_err(|e| e.to_string()).and_then(|m| {
                    m.validate()?;
                    Ok(m)
                }) {
                    Ok(message) => message,
                    Err(e) => {
                        stats.bad_messages += 1;
                        debug!("dropped a bad message from client {client_id}: {e}");
                        continue;
                    }
                };
                match message {
                    ToServer::Commands(cmds) => {
                        for mut cmd in cmds {
                            if cmd.sanitize().any() {
                                stats.repaired_commands += 1;
                                debug!("repaired an out-of-range command from client {client_id}");
                            }
                            inbox.offer(cmd);
                        }
                    }
                }
            }
        }
    }
}
