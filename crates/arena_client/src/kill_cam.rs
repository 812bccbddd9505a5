//! The kill-cam, client side: the server's account of our last death (the
//! killer's eyes, the victim as the killer drew it, the fatal shot beside
//! where the server had us), kept for the view to play while we are dead;
//! a skip tells the server, which then respawns us as soon as the usual
//! delay allows.

use arena_protocol::kill_cam::KillCam;
use arena_protocol::{ToClient, ToServer};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::vocabulary::{GameMessage, MessageTally, send_to_server};

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<KillCamFeed>().add_message::<SkipKillCam>();
}

/// The newest kill-cam, and when it came.
#[derive(Resource, Debug, Default)]
pub struct KillCamFeed {
    pub current: Option<ReceivedKillCam>,
    /// Kill-cams received since connecting.
    pub received: u32,
}

#[derive(Debug, Clone)]
pub struct ReceivedKillCam {
    pub cam: KillCam,
    /// Real time it came, seconds (the app's clock).
    pub received_s: f64,
}

/// The player skipped the kill-cam (the view writes it).
#[derive(Message, Debug, Clone, Copy)]
pub struct SkipKillCam;

pub(crate) fn receive_kill_cams(
    mut messages: MessageReader<GameMessage>,
    time: Res<Time<Real>>,
    mut feed: ResMut<KillCamFeed>,
) {
    for GameMessage(message) in messages.read() {
        if let ToClient::KillCam(cam) = message {
            feed.current = Some(ReceivedKillCam { cam: (**cam).clone(), received_s: time.elapsed_secs_f64() });
            feed.received = feed.received.saturating_add(1);
        }
    }
}

pub(crate) fn send_skips(
    mut skips: MessageReader<SkipKillCam>,
    mut feed: ResMut<KillCamFeed>,
    client: Option<ResMut<RenetClient>>,
    mut tally: ResMut<MessageTally>,
) {
    if skips.read().count() == 0 {
        return;
    }
    feed.current = None;
    let Some(mut client) = client else { return };
    send_to_server(&mut client, &mut tally, &ToServer::SkipKillCam);
}
