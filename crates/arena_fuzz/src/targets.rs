//! Every fuzz target, by name, and the families they come from (one file
//! each under `targets/`). Each target takes bytes, never panics on any of
//! them, and asserts what must hold of its result.

pub mod any;
pub mod client;
pub mod commands;
pub mod demo;
pub mod hits;
pub mod kill_cam;
pub mod map_transfer;
pub mod master;
pub mod messages;
pub mod nat;
pub mod network;
pub mod queries;
pub mod remote_console;
pub mod text;
pub mod turn;
pub mod voice;
pub mod web;

use crate::target::Target;

/// Every target, in the order `arena-fuzz` runs and lists them (scripts and
/// CI pick targets by these names).
pub fn all() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(messages::DecodeToServer),
        Box::new(messages::DecodeToClient),
        Box::new(messages::SnapshotBits),
        Box::new(messages::CommandBits),
        Box::new(queries::QueryRequests::default()),
        Box::new(queries::QueryReplies),
        Box::new(remote_console::RconMessages::default()),
        Box::new(commands::Sanitize),
        Box::new(commands::Intake),
        Box::new(commands::StepPlayer::default()),
        Box::new(commands::RenderTime),
        Box::new(client::ClockSyncTarget),
        Box::new(client::InterpolationHistory),
        Box::new(text::Names),
        Box::new(text::ConsoleLines),
        Box::new(text::ConfigFile),
        Box::new(text::PageLinks),
        Box::new(text::MapFiles),
        Box::new(map_transfer::MapTransfer),
        Box::new(hits::Rockets),
        Box::new(hits::Poses),
        Box::new(demo::DemoFiles::default()),
        Box::new(demo::DemoFrames),
        Box::new(kill_cam::KillCamMessage),
        Box::new(master::MasterReceives::default()),
        Box::new(master::ServerGetInfo::default()),
        Box::new(master::MasterReplies::default()),
        Box::new(nat::RouterAnswers),
        Box::new(nat::ReachMessages::default()),
        Box::new(network::Datagrams::new(network::Side::Server)),
        Box::new(network::Datagrams::new(network::Side::Client)),
        Box::new(network::Payloads::new(network::Side::Server)),
        Box::new(network::Payloads::new(network::Side::Client)),
        Box::new(turn::TurnMessages),
        Box::new(turn::TurnRelay),
        Box::new(web::WebFrames),
        Box::new(web::PageRequests),
        Box::new(voice::VoiceFrames::default()),
    ]
}
