//! Sending messages to clients: reliable ones through renet, unreliable
//! ones (snapshots, tracers) outside it, in the next datagram.

use arena_protocol::{ToClient, encode};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use crate::vocabulary::UnreliableOut;

/// Encodes and sends one message to one client on the message's channel
/// (an unreliable message goes by [`send_unreliable`]).
pub(crate) fn send(server: &mut RenetServer, client: ClientId, message: &ToClient) {
    debug_assert_eq!(message.channel(), arena_protocol::channel::RELIABLE, "unreliable: send_unreliable");
    match encode(message) {
        Ok(bytes) => server.send_message(client, message.channel(), bytes),
        Err(e) => error!("could not encode a message for client {client}: {e}"),
    }
}

/// Encodes one unreliable message for `client`'s next datagram.
pub(crate) fn send_unreliable(out: &mut UnreliableOut, client: ClientId, message: &ToClient) {
    match encode(message) {
        Ok(bytes) => out.push(client, bytes),
        Err(e) => error!("could not encode a message for client {client}: {e}"),
    }
}

/// Encodes one unreliable message for the next datagram of each of `clients`.
pub(crate) fn broadcast_unreliable(out: &mut UnreliableOut, clients: &[ClientId], message: &ToClient) {
    let Ok(bytes) = encode(message).inspect_err(|e| error!("could not encode a broadcast: {e}")) else {
        return;
    };
    for client in clients {
        out.push(*client, bytes.clone());
    }
}

/// As [`broadcast_unreliable`], in this frame's datagrams (voice).
pub(crate) fn broadcast_now(out: &mut UnreliableOut, clients: &[ClientId], message: &ToClient) {
    let Ok(bytes) = encode(message).inspect_err(|e| error!("could not encode a broadcast: {e}")) else {
        return;
    };
    for client in clients {
        out.push_now(*client, bytes.clone());
    }
}

/// Sends one message to every client but `except`.
pub(crate) fn broadcast(server: &mut RenetServer, message: &ToClient, except: Option<ClientId>) {
    debug_assert_eq!(message.channel(), arena_protocol::channel::RELIABLE, "unreliable: broadcast_unreliable");
    let Ok(bytes) = encode(message).inspect_err(|e| error!("could not encode a broadcast: {e}")) else {
        return;
    };
    for client in server.clients_id() {
        if Some(client) != except {
            server.send_message(client, message.channel(), bytes.clone());
        }
    }
}
