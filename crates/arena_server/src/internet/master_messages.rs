//! Every message of Arena's extension to the dpmaster protocol that came
//! from a master (the guard lets them through from masters' addresses
//! only, see `socket/guard.rs`), each to what it is for: the reachability
//! check's answers to `reach_check.rs`, introductions to `hole_punch.rs`.
//! Then, in this order each frame: the check decides, and the probes due go.

use arena_master::reach::Reach;
use arena_udp::canonical;
use bevy::prelude::*;

use super::hole_punch::{self, Punches};
use super::master_list::Masters;
use super::reach_check::{self, CHECK_EVERY, ReachCheck};
use crate::reach_report::ReachHandle;
use crate::socket::transport::ServerTransport;

pub(crate) fn plugin(app: &mut App) {
    // The check's decisions take a second or more: ten times a second is
    // plenty (messages and probes go every frame).
    let now_and_then = bevy::time::common_conditions::on_real_timer(CHECK_EVERY);
    app.init_resource::<ReachCheck>().add_systems(
        Update,
        (read_master_messages, reach_check::check.run_if(now_and_then), hole_punch::send_probes).chain(),
    );
}

/// Every master message the guard let through: the check's answers, and
/// introductions.
fn read_master_messages(
    mut state: ResMut<ReachCheck>,
    mut transport: ResMut<ServerTransport>,
    mut punches: ResMut<Punches>,
    masters: Res<Masters>,
    report: Res<ReachHandle>,
    time: Res<Time<Real>>,
) {
    let now = time.elapsed();
    if punches.masters.as_slice() != masters.resolved() {
        punches.masters = masters.resolved().to_vec();
    }
    for (from, message) in transport.take_reach_inbox() {
        let from = canonical(from);
        match message {
            Reach::PunchIntro { client, key } => {
                if punches.introduce(from, client, &key, now) {
                    info!("a master introduced a player at {client}: probing it so that its connection passes");
                    report.update(|r| r.introductions += 1);
                }
            }
            Reach::PunchIntroRelayed { client, key } => {
                if punches.introduce(from, client, &key, now) {
                    info!(
                        "a master introduced a player through its relay at {client}: probing it so that its \
                         connection passes"
                    );
                    report.update(|r| {
                        r.introductions += 1;
                        r.relayed += 1;
                    });
                }
            }
            message => {
                if let Some((whoami, to)) = state.hear(from, message, now) {
                    transport.send_datagram(&whoami, to);
                }
            }
        }
    }
}
