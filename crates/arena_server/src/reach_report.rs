//! What a host needs to know about being reached from the internet (a
//! leaf: the port mapping, the reachability check, the master list and
//! hole punching write it; the Host menu, the HUD and the log read it),
//! and the plain sentence of advice when strangers cannot reach them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arena_master::reach::Nat;
use bevy::prelude::*;

/// The port mapping's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MapState {
    /// Not asked for (`--map-port off`).
    #[default]
    Off,
    Asking,
    Mapped {
        method: arena_nat::Method,
        external: SocketAddr,
        lease: Duration,
    },
    Failed(String),
    /// Removed on a clean stop.
    Removed,
}

/// Whether strangers reach the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reachable {
    Yes,
    No,
    /// No master answered the check (none set, or one that does not speak
    /// Arena's extension).
    #[default]
    Unknown,
}

impl Reachable {
    pub fn label(self) -> &'static str {
        match self {
            Reachable::Yes => "yes",
            Reachable::No => "no",
            Reachable::Unknown => "unknown",
        }
    }
}

/// Everything a host is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReachReport {
    /// The game port as bound.
    pub port: u16,
    pub mapping: MapState,
    /// Public addresses given by hand (`--public-addr`).
    pub manual: Vec<SocketAddr>,
    /// The server as the master saw it.
    pub seen_by_master: Option<SocketAddr>,
    pub reachable: Reachable,
    /// Whether the master probed from its own address (no second one, see
    /// `arena master --probe-bind`): then a router that admits any port of
    /// an address the server talked to passes the check, and "reachable
    /// yes" may be wrong for strangers.
    pub one_address_check: bool,
    pub nat: Nat,
    /// Whether a master has listed it (answered its challenge lately).
    pub listed: bool,
    /// Whether any master is set.
    pub has_masters: bool,
    /// Introductions accepted (probes sent to a joining player).
    pub introductions: u64,
    /// Of those, players who came through the master's relay (their
    /// router and this one left no other way).
    pub relayed: u64,
}

impl ReachReport {
    pub fn new(port: u16, manual: Vec<SocketAddr>, has_masters: bool, mapping: MapState) -> Self {
        Self {
            port,
            mapping,
            manual,
            seen_by_master: None,
            reachable: Reachable::Unknown,
            one_address_check: false,
            nat: Nat::Unknown,
            listed: false,
            has_masters,
            introductions: 0,
            relayed: 0,
        }
    }

    /// The address strangers use, and how it was learnt: a mapping's, one
    /// given by hand, the master's view, or none.
    pub fn external(&self) -> (Option<SocketAddr>, &'static str) {
        if let MapState::Mapped { method, external, .. } = &self.mapping {
            // Another router in front of the one that mapped the port (a
            // provider's NAT): the master saw the address strangers use.
            if let Some(seen) = self.seen_by_master
                && seen.ip() != external.ip()
            {
                return (Some(seen), "master (double NAT)");
            }
            return (Some(*external), method.label());
        }
        if let Some(addr) = self.manual.first() {
            return (Some(*addr), "manual");
        }
        match self.seen_by_master {
            Some(addr) => (Some(addr), "master"),
            None => (None, "none"),
        }
    }

    /// The port to forward by hand: the mapped or seen one, else the bound one.
    fn port_to_forward(&self) -> u16 {
        self.port
    }

    /// A plain sentence when strangers may not reach the host.
    pub fn advice(&self) -> Option<String> {
        let port = self.port_to_forward();
        match (self.reachable, self.nat) {
            (_, Nat::Symmetric) => Some(symmetric_advice(port)),
            (Reachable::No, _) if self.external().1 == "master (double NAT)" => Some(
                "Your router mapped the port, but another router in front of it (your provider's?) did not: \
                 friends still join through the master (hole punching); if one cannot, host on a dedicated server."
                    .to_string(),
            ),
            (Reachable::No, _) => Some(format!(
                "Strangers cannot reach you directly; friends still join through the master (hole punching). \
                 If one cannot, forward UDP port {port} on your router to this computer."
            )),
            (Reachable::Unknown, _) if self.has_masters => match &self.mapping {
                MapState::Failed(_) => Some(format!(
                    "Your router did not map the port (UPnP, NAT-PMP and PCP off or refused): turn one on in its settings, \
                     or forward UDP port {port} to this computer."
                )),
                _ => None,
            },
            _ => None,
        }
    }

    /// One line for the log.
    pub fn line(&self) -> String {
        let (external, how) = self.external();
        format!(
            "internet: external {} ({how}), reachable {}{}, listed {}{}",
            external.map_or("unknown".to_string(), |a| a.to_string()),
            self.reachable.label(),
            if self.reachable == Reachable::Yes && self.one_address_check {
                " (checked from the master's one address only: a router that lets in any port of an address \
                 it has talked to passes too)"
            } else {
                ""
            },
            if self.listed { "yes" } else { "no" },
            self.advice().map(|a| format!(": {a}")).unwrap_or_default()
        )
    }
}

/// The advice for a router that gives every destination a new port (the
/// same sentence both sides are shown).
pub(crate) fn symmetric_advice(port: u16) -> String {
    format!(
        "Your router changes ports per destination: hole punching cannot cross it, so friends join only through \
         a master that runs a relay; forward UDP port {port}, or host on a dedicated server."
    )
}

/// The report, shared with whoever shows it (a listen server's host runs
/// in the same process).
#[derive(Resource, Clone, Debug)]
pub struct ReachHandle(Arc<Mutex<ReachReport>>);

impl ReachHandle {
    pub fn new(report: ReachReport) -> Self {
        Self(Arc::new(Mutex::new(report)))
    }

    pub fn get(&self) -> ReachReport {
        match self.0.lock() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn update(&self, change: impl FnOnce(&mut ReachReport)) {
        let mut guard = match self.0.lock() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        change(&mut guard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_port_and_the_way_out() {
        let mut report = ReachReport::new(27015, Vec::new(), true, MapState::Off);
        assert_eq!(report.advice(), None);
        report.reachable = Reachable::No;
        report.nat = Nat::Symmetric;
        assert_eq!(
            report.advice().as_deref(),
            Some(
                "Your router changes ports per destination: hole punching cannot cross it, so friends join only \
                 through a master that runs a relay; forward UDP port 27015, or host on a dedicated server."
            )
        );
        report.nat = Nat::Punchable;
        assert!(report.advice().is_some_and(|a| a.contains("hole punching") && a.contains("27015")));
        report.reachable = Reachable::Yes;
        report.nat = Nat::Open;
        assert_eq!(report.advice(), None);
        let mapped = MapState::Mapped {
            method: arena_nat::Method::Pcp,
            external: "11.0.1.1:27015".parse().unwrap(),
            lease: Duration::from_secs(60),
        };
        report.mapping = mapped;
        assert_eq!(report.external(), (Some("11.0.1.1:27015".parse().unwrap()), "PCP"));
    }
}
