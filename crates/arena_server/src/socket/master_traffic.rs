//! The game socket's traffic with masters, as the internet wing drives it
//! (see `internet/master_list.rs`): heartbeats from the game socket, each
//! telling the guard that the master's `getinfo` that follows is to be
//! answered in full; the masters that are; the pairs only their answers
//! carry (see `answers.rs`); and the messages of Arena's extension that came
//! from them, handed on (see `internet/master_messages.rs`).

use std::net::SocketAddr;

use arena_master::reach::Reach;
use arena_master::wire;

use super::transport::ServerTransport;

impl ServerTransport {
    /// Sends a heartbeat to `master` from the game socket: its `getinfo`
    /// is answered in full for a few seconds.
    pub fn send_heartbeat(&mut self, master: SocketAddr) {
        // A fresh nonce each time: Arena's master echoes it in its
        // `getinfo`, which a forger cannot (see `guard.rs`).
        let nonce = arena_master::reach::new_token();
        self.guard.heartbeat_sent(master, &nonce, self.clock);
        self.send_to(&wire::heartbeat_with_nonce(&nonce), master);
    }

    /// `getinfo` from `master` answered in full so far.
    pub fn master_answers(&self, master: SocketAddr) -> u64 {
        self.guard.master_answers(master)
    }

    /// Of those, the ones confirmed by the heartbeat's nonce (only these
    /// say the server is listed).
    pub fn master_confirmed(&self, master: SocketAddr) -> u64 {
        self.guard.master_confirmed(master)
    }

    /// The reachability check's nonce in progress: the probe and `youAre`
    /// carrying it pass the guard from any address.
    pub fn expect_reach_nonce(&mut self, nonce: Option<String>) {
        self.guard.expect_reach_nonce(nonce);
    }

    /// The masters whose `getinfo` is answered in full.
    pub fn set_masters(&mut self, masters: Vec<SocketAddr>) {
        self.guard.set_masters(masters);
    }

    /// Pairs that only answers to masters carry from now on.
    pub fn set_master_pairs(&mut self, pairs: Vec<(String, String)>) {
        self.answers.set_master_pairs(pairs);
    }

    /// The master-extension datagrams that came since the last call.
    pub fn take_reach_inbox(&mut self) -> Vec<(SocketAddr, Reach)> {
        std::mem::take(&mut self.reach_inbox)
    }
}
