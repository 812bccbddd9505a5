//! What goes to Agones, through the official SDK: Ready, health pings,
//! labels (the map, the people playing), player tracking, Shutdown.
//!
//! A server with people in it is Allocated (the SDK's self-allocation), and
//! Ready again once the last one leaves: a fleet's Buffer autoscaler then
//! keeps a number of empty servers waiting, and scaling down never stops a
//! match.
//!
//! Player tracking (`PlayerConnect`/`PlayerDisconnect`) is an alpha feature
//! of Agones, off unless the cluster turns its `PlayerTracking` gate on, and
//! other SDK servers may not have it at all: the first call that answers
//! "unimplemented" turns it off here, said once in the log. The `players`
//! label and the `arena-connects`/`arena-disconnects` annotations are always
//! kept, so fleets, dashboards and allocators see the count either way.

use agones::Sdk;
use agones::errors::Error as SdkError;
use tokio::sync::mpsc::Sender;

use crate::tracking::{Changes, Tracker};

/// Label keys (Agones prefixes them with `agones.dev/sdk-`).
pub const LABEL_MAP: &str = "map";
pub const LABEL_PLAYERS: &str = "players";
/// Annotation keys for the running totals of joins and leaves.
pub const ANNOTATION_CONNECTS: &str = "arena-connects";
pub const ANNOTATION_DISCONNECTS: &str = "arena-disconnects";
/// Longest Kubernetes label value, characters.
const MAX_LABEL_VALUE_CHARS: usize = 63;

/// The SDK, and what this sidecar learnt of it.
pub struct Reporter {
    sdk: Sdk,
    health: Sender<()>,
    /// Whether the SDK server takes player tracking calls.
    pub player_tracking: bool,
    /// SDK calls that failed (each is logged once a kind; see `failed`).
    pub failures: u64,
    said: std::collections::BTreeSet<&'static str>,
}

impl Reporter {
    pub fn new(sdk: Sdk) -> Self {
        let health = sdk.health_check();
        Reporter { sdk, health, player_tracking: true, failures: 0, said: Default::default() }
    }

    /// The server answered for the first time: its map as a label, the
    /// people it takes as the player capacity, then Ready.
    pub async fn ready(&mut self, map: &str, capacity: u8) {
        let r = self.sdk.set_label(LABEL_MAP, label_value(map)).await;
        self.check("set_label(map)", r);
        self.set_players(0).await;
        if self.player_tracking {
            let r = self.sdk.alpha().clone().set_player_capacity(i64::from(capacity)).await;
            self.check_tracking("set_player_capacity", r);
        }
        let r = self.sdk.ready().await;
        self.check("ready", r);
    }

    /// The server plays another map now (its rotation): the label follows.
    pub async fn map_changed(&mut self, map: &str) {
        let r = self.sdk.set_label(LABEL_MAP, label_value(map)).await;
        self.check("set_label(map)", r);
    }

    /// The server answered: it is healthy.
    pub fn healthy(&mut self) {
        // A full queue means the pings are not getting out; the next one
        // will do, and the SDK server's own timeout notices a real stall.
        if self.health.try_send(()).is_err() {
            self.failures += 1;
        }
    }

    /// People came or went.
    pub async fn players(&mut self, changes: &Changes, tracker: &Tracker) {
        if changes.is_empty() {
            return;
        }
        for name in &changes.joined {
            if !self.player_tracking {
                break;
            }
            let r = self.sdk.alpha().clone().player_connect(name.as_str()).await.map(|_| ());
            self.check_tracking("player_connect", r);
        }
        for name in &changes.left {
            if !self.player_tracking {
                break;
            }
            let r = self.sdk.alpha().clone().player_disconnect(name.as_str()).await.map(|_| ());
            self.check_tracking("player_disconnect", r);
        }
        self.set_players(tracker.count()).await;
        let r = self.sdk.set_annotation(ANNOTATION_CONNECTS, tracker.connects.to_string()).await;
        self.check("set_annotation(connects)", r);
        let r = self.sdk.set_annotation(ANNOTATION_DISCONNECTS, tracker.disconnects.to_string()).await;
        self.check("set_annotation(disconnects)", r);
    }

    /// Someone is playing: Allocated, so a fleet's scale-down leaves this
    /// server alone and its autoscaler's buffer counts only empty servers.
    pub async fn allocate(&mut self) {
        let r = self.sdk.allocate().await;
        self.check("allocate", r);
    }

    /// Everyone left: Ready again (Agones takes an Allocated server back),
    /// one of the fleet's spare servers.
    pub async fn ready_again(&mut self) {
        let r = self.sdk.ready().await;
        self.check("ready", r);
    }

    /// The server is gone: Agones may delete this GameServer.
    pub async fn shutdown(&mut self) {
        let r = self.sdk.shutdown().await;
        self.check("shutdown", r);
    }

    async fn set_players(&mut self, count: usize) {
        let r = self.sdk.set_label(LABEL_PLAYERS, count.to_string()).await;
        self.check("set_label(players)", r);
    }

    fn check(&mut self, call: &'static str, result: Result<(), SdkError>) {
        if let Err(e) = result {
            self.failed(call, &e);
        }
    }

    /// A player tracking call: "unimplemented" turns tracking off.
    fn check_tracking(&mut self, call: &'static str, result: Result<(), SdkError>) {
        match result {
            Err(SdkError::Rpc(status)) if status.code() == tonic::Code::Unimplemented => {
                self.player_tracking = false;
                eprintln!(
                    "arena-agones: player tracking is not available on this SDK server ({call}: {:?} {}); \
                     the players label and the connect/disconnect annotations carry the count",
                    status.code(),
                    status.message()
                );
            }
            other => self.check(call, other),
        }
    }

    fn failed(&mut self, call: &'static str, e: &SdkError) {
        self.failures += 1;
        if self.said.insert(call) {
            eprintln!("arena-agones: {call} failed: {e} (said once; {} failures so far)", self.failures);
        }
    }
}

/// A label value Kubernetes takes: at most 63 characters of letters, digits,
/// `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn label_value(raw: &str) -> String {
    let mapped: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(MAX_LABEL_VALUE_CHARS)
        .collect();
    mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_what_kubernetes_takes() {
        assert_eq!(label_value("Foundry"), "Foundry");
        assert_eq!(label_value("Dust 2 (night)"), "Dust-2--night");
        assert_eq!(label_value("__x__"), "x");
        assert_eq!(label_value("ÉÉ"), "");
        assert_eq!(label_value(&"a".repeat(100)).len(), 63);
    }
}
