//! Sending messages to clients.

use arena_protocol::{ToClient, encode};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

/// Encodes and sends one message to one client on the message's channel.
pub(crate) fn send(server: &mut RenetServer, client: ClientId, message: &ToClient) {
    match encode(message) {
        Ok(bytes) => server.send_message(client, message.channel(), bytes),
        Err(e) => error!("could not encode a message for client {client}: {e}"),
    }
}

/// Sends one message to every client but `except`.
pub(crate) fn broadcast(server: &mut RenetServer, message: &ToClient, except: Option<ClientId>) {
    let Ok(bytes) = encode(message).inspect_err(|e| error!("could not encode a broadcast: {e}")) else {
        return;
    };
    for client in server.clients_id() {
        if Some(client) != except {
            server.send_message(client, message.channel(), bytes.clone());
        }
    }
}
