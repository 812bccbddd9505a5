//! The messages. Client to server: [`ToServer`]. Server to client: [`ToClient`].

use arena_sim::{PlayerId, PlayerState, UserCmd};
use serde::{Deserialize, Serialize};

use crate::channel;

/// Most commands one packet may carry (the newest and the unacknowledged ones
/// before it). More is a malformed packet.
pub const MAX_CMDS_PER_PACKET: usize = 16;
/// Longest player name, in characters.
pub const MAX_NAME_CHARS: usize = 16;

/// Client to server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToServer {
    /// User commands, oldest first, newest last.
    Commands(Vec<UserCmd>),
}

impl ToServer {
    pub fn channel(&self) -> u8 {
        match self {
            ToServer::Commands(_) => channel::UNRELIABLE,
        }
    }

    /// Structural checks beyond decoding; field values are sanitised separately.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            ToServer::Commands(cmds) if cmds.len() > MAX_CMDS_PER_PACKET => {
                Err(format!("{} commands in one packet (at most {MAX_CMDS_PER_PACKET})", cmds.len()))
            }
            ToServer::Commands(_) => Ok(()),
        }
    }
}

/// Server to client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToClient {
    Welcome(Welcome),
    PlayerJoined(PlayerInfo),
    PlayerLeft { id: PlayerId },
    Snapshot(Snapshot),
}

impl ToClient {
    pub fn channel(&self) -> u8 {
        match self {
            ToClient::Snapshot(_) => channel::UNRELIABLE,
            _ => channel::RELIABLE,
        }
    }
}

/// The first message a client receives after connecting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub your_id: PlayerId,
    /// Simulation rate, ticks per second.
    pub tick_hz: u32,
    /// The server's tick when it sent this.
    pub server_tick: u32,
    pub map_name: String,
    /// Everyone on the server, the new player included.
    pub players: Vec<PlayerInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerInfo {
    pub id: PlayerId,
    pub name: String,
}

/// The world as the server had it at the end of one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub tick: u32,
    /// The newest of this client's commands that the server has run (the
    /// tick it simulated last, with that command or, if it never came, a
    /// repeat of the one before), if any.
    pub last_cmd_tick: Option<u32>,
    /// The newest command tick received from this client, run or not: how far
    /// ahead its commands arrive, for its clock sync.
    pub newest_cmd_tick: Option<u32>,
    /// How early the command run at `tick` reached the server before that
    /// tick, in hundredths of a tick; -100 if it had not come (the last one
    /// was repeated). For the client's clock sync.
    pub cmd_margin_centiticks: Option<i16>,
    pub players: Vec<PlayerSnapshot>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayerSnapshot {
    pub id: PlayerId,
    pub state: PlayerState,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{DecodeError, decode, encode};

    #[test]
    fn messages_round_trip() {
        let messages = vec![
            ToClient::Welcome(Welcome {
                your_id: PlayerId(3),
                tick_hz: 64,
                server_tick: 1234,
                map_name: "Foundry".into(),
                players: vec![PlayerInfo { id: PlayerId(3), name: "Ada".into() }],
            }),
            ToClient::PlayerLeft { id: PlayerId(9) },
            ToClient::Snapshot(Snapshot {
                tick: 99,
                last_cmd_tick: Some(97),
                newest_cmd_tick: Some(99),
                cmd_margin_centiticks: Some(-40),
                players: vec![PlayerSnapshot { id: PlayerId(1), state: PlayerState::default() }],
            }),
        ];
        for m in messages {
            let bytes = encode(&m).expect("encodes");
            assert_eq!(decode::<ToClient>(&bytes).expect("decodes"), m);
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut seed = 0x1234_5678_u32;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect();
            let _ = decode::<ToServer>(&bytes);
            let _ = decode::<ToClient>(&bytes);
        }
        // A length prefix claiming a huge vector must not allocate it.
        let huge = [0u8, 0xfc, 0xff, 0xff, 0xff, 0x7f];
        assert!(decode::<ToServer>(&huge).is_err());
        assert!(matches!(decode::<ToServer>(&vec![0u8; 20_000]), Err(DecodeError::TooLarge(_))));
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = encode(&ToServer::Commands(vec![UserCmd::default()])).expect("encodes");
        bytes.push(7);
        assert!(matches!(decode::<ToServer>(&bytes), Err(DecodeError::TrailingBytes(1))));
    }

    #[test]
    fn too_many_commands_fail_validation() {
        let m = ToServer::Commands(vec![UserCmd::default(); MAX_CMDS_PER_PACKET + 1]);
        assert!(m.validate().is_err());
    }
}
