//! The server's last word to its masters on a clean stop (see
//! `internet/master_list.rs`, which says it after the clients were told): a
//! heartbeat to each, and to each master's `getinfo` an answer that says
//! the server is leaving, so that the master drops it at once instead of
//! listing a server that is gone until it times out.

use std::net::SocketAddr;
use std::time::Duration;

use arena_master::wire;
use arena_protocol::datagram::MAX_DATAGRAM_BYTES;

use super::transport::ServerTransport;

impl ServerTransport {
    /// Says farewell to `masters`, waiting for them at most `wait`;
    /// everything else that arrives meanwhile is left unread (the clients
    /// have been told already). Returns the masters that took the farewell.
    pub fn farewell(&mut self, masters: &[SocketAddr], wait: Duration) -> usize {
        if masters.is_empty() {
            return 0;
        }
        let masters: Vec<SocketAddr> = masters.iter().map(|m| arena_udp::canonical(*m)).collect();
        // With a nonce, as every heartbeat: a `getinfo` forged from a
        // master's address cannot take the farewell in its place (from a
        // master that echoes nonces; a plain one's first `getinfo` counts).
        let nonce = arena_master::reach::new_token();
        for master in &masters {
            self.send_to(&wire::heartbeat_with_nonce(&nonce), *master);
        }
        let deadline = std::time::Instant::now() + wait;
        let mut told: Vec<SocketAddr> = Vec::new();
        while told.len() < masters.len() && std::time::Instant::now() < deadline {
            match arena_udp::recv_from(&self.socket, &mut self.buffer[..]) {
                Ok((len, from)) if masters.contains(&from) && !told.contains(&from) => {
                    let datagram = self.buffer[..len.min(MAX_DATAGRAM_BYTES)].to_vec();
                    if let Ok(getinfo) = wire::parse_getinfo(&datagram)
                        && match &getinfo.nonce {
                            Some(echoed) => *echoed == nonce,
                            None => !self.guard.master_echoes_nonces(from),
                        }
                        && let Some(answer) = self.answers.info_response(getinfo.challenge, true, true)
                    {
                        self.send_to(&answer, from);
                        told.push(from);
                    }
                }
                Ok(_) => {}
                // Nothing yet (or an ICMP error from a peer): wait a little.
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        told.len()
    }
}
