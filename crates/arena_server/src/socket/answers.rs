//! What the socket answers on its own, encoded ahead so that a flood of
//! requests costs no encoding: server queries (A2S's info, players and
//! rules) and a `getinfo` (the dpmaster protocol), whose `infoResponse`
//! carries to masters alone the pairs only they are told, and says on a
//! farewell that the server is leaving. The game hands the content in (see
//! `internet/queries.rs`); the guard decides who is answered (see `guard.rs`).

use arena_master::wire::{self, InfoString};
use arena_protocol::query::{PlayerEntry, QueryKind, Reply, ServerListing};

/// The server's answers, encoded ahead.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    info: Vec<Vec<u8>>,
    players: Vec<Vec<u8>>,
    rules: Vec<Vec<u8>>,
    /// The id of the next multi-packet reply.
    message_id: u32,
    /// What a `getinfo` is answered with (the challenge is added per answer).
    info_string: InfoString,
    /// Pairs only masters' `getinfo` answers carry (the introduction key,
    /// what the server knows of its router).
    master_pairs: Vec<(String, String)>,
}

impl Answers {
    /// A2S's three answers, and the infostring of a `getinfo` answer.
    pub(crate) fn set(
        &mut self,
        info: ServerListing,
        players: Vec<PlayerEntry>,
        rules: Vec<(String, String)>,
        info_string: InfoString,
    ) {
        self.info_string = info_string;
        self.message_id = self.message_id.wrapping_add(1);
        self.info = Reply::Info(info).datagrams(self.message_id);
        self.message_id = self.message_id.wrapping_add(1);
        self.players = Reply::Players(players).datagrams(self.message_id);
        self.message_id = self.message_id.wrapping_add(1);
        self.rules = Reply::Rules(rules).datagrams(self.message_id);
    }

    /// Pairs that only answers to masters carry from now on.
    pub(crate) fn set_master_pairs(&mut self, pairs: Vec<(String, String)>) {
        self.master_pairs = pairs;
    }

    /// Whether `key` is the introduction key masters were told (an
    /// introduction without it is a stranger's).
    pub(crate) fn is_intro_key(&self, key: &str) -> bool {
        self.master_pairs.iter().any(|(k, v)| k == arena_master::reach::INTRO_KEY && v == key)
    }

    /// The datagrams that answer a query of this kind.
    pub(crate) fn to_query(&self, kind: QueryKind) -> &[Vec<u8>] {
        match kind {
            QueryKind::Info => &self.info,
            QueryKind::Players => &self.players,
            QueryKind::Rules => &self.rules,
        }
    }

    /// An `infoResponse` carrying `challenge`; with `leaving`, one that
    /// says the server is going (`sv_maxclients` 0: a master drops it);
    /// `to_master` adds the pairs only masters get.
    pub(crate) fn info_response(&self, challenge: Option<String>, leaving: bool, to_master: bool) -> Option<Vec<u8>> {
        let mut pairs: Vec<(String, String)> = self.info_string.pairs().to_vec();
        if to_master && !leaving {
            pairs.extend(self.master_pairs.iter().cloned());
        }
        if leaving {
            for (key, value) in &mut pairs {
                if key == "sv_maxclients" {
                    *value = "0".into();
                }
            }
        }
        if let Some(challenge) = challenge {
            pairs.insert(0, ("challenge".into(), challenge));
        }
        wire::info_response(&InfoString::new(pairs).ok()?).ok()
    }
}
