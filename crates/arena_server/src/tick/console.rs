//! The server's console: lines from its standard input (when that is a
//! terminal) and from the remote console (their MAC checked by the socket's
//! gate) run on the game, in `arena_protocol::console`'s language, over the
//! server's variables (`sv_maxunlag`, `sv_tickrate` read-only, `sv_password`,
//! `mp_fraglimit`, `mp_timelimit`, `bot_quota`, `bot_skill`, `sv_voice`) and
//! commands (`status`, `say`, `kick`, `ban` for the session, `map`,
//! `changelevel`, `mode`, `restart`, `voice_mute`, `voice_unmute`). A vote that passed runs here too, as its line.
//! Every line is logged with where it came from; the terminal's answers are
//! printed, the remote console's go back through the socket.

use std::io::{BufRead, Read};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, TryRecvError};

use arena_protocol::ToClient;
use arena_protocol::console::{self, Command, Host, Outcome, Value, Var};
use arena_protocol::key::Password;
use arena_sim::PlayerId;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::bots::{BotSettings, add_bot};
use super::match_flow::RestartMatch;
use super::roster::Admission;
use super::sides::ChangeMode;
use crate::config::{MAX_UNLAG_MS, MatchRules};
use crate::net::broadcast;
use crate::socket::transport::ServerTransport;
use crate::vocabulary::{
    ConsoleLines, ConsoleSource, GameMode, LagCompensation, PlayersChanged, Score, ServedMaps, SimWorld, TickRate,
    VoiceControl,
};
use arena_protocol::modes::Mode;

/// Lines run a frame at most (the rest wait for the next).
const LINES_PER_FRAME: usize = 8;

const VARS: [Var; 8] = [
    Var::number(
        "sv_maxunlag",
        Some("sv_maxunlag"),
        "how far back lag compensation rewinds at most, s",
        0.0,
        MAX_UNLAG_MS as f64 / 1000.0,
    ),
    Var::integer("sv_tickrate", None, "ticks a second (set at start: --tick)", 1.0, 1000.0).read_only(),
    Var::text(
        "sv_password",
        Some("sv_password"),
        "the password new players need (connected ones stay)",
        arena_protocol::key::MAX_PASSWORD_BYTES,
    ),
    Var::integer("mp_fraglimit", Some("mp_fraglimit"), "frags that end a match (from the next match)", 1.0, 999.0),
    Var::number("mp_timelimit", Some("mp_timelimit"), "minutes a match lasts (from the next match)", 0.5, 120.0),
    Var::integer("bot_quota", Some("bot_quota"), "bots in the game", 0.0, arena_protocol::MAX_PLAYERS as f64),
    Var::number("bot_skill", None, "how well new bots play, 0 (hopeless) to 1 (sharp)", 0.0, 1.0),
    Var::switch("sv_voice", Some("sv_voip"), "players' voice passed on (0: nobody's)"),
];

const COMMANDS: [Command; 10] = [
    Command {
        name: "status",
        usage: "status",
        help: "the server, the map, and each player: id, name, side, frags, round trip, address",
    },
    Command { name: "say", usage: "say TEXT", help: "the server's word to everyone" },
    Command { name: "kick", usage: "kick NAME|#ID", help: "takes a player (or a bot) out of the game" },
    Command {
        name: "ban",
        usage: "ban NAME|#ID",
        help: "kicks a player and refuses its address until the server stops",
    },
    Command { name: "map", usage: "map NAME", help: "starts a new match on a map" },
    Command {
        name: "changelevel",
        usage: "changelevel NAME",
        help: "starts a new match on a map, the players staying",
    },
    Command { name: "mode", usage: "mode ffa|tdm|duel", help: "starts a new match in a mode (sides dealt anew)" },
    Command { name: "restart", usage: "restart", help: "starts a new match on the same map" },
    Command { name: "voice_mute", usage: "voice_mute NAME|#ID", help: "passes on nothing a player says by voice" },
    Command { name: "voice_unmute", usage: "voice_unmute NAME|#ID", help: "passes on a muted player's voice again" },
];

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ConsoleLines>()
        .init_resource::<NewPassword>()
        .add_systems(Update, (take_remote_lines, run_lines, send_remote_answers, take_new_password).chain());
}

/// A new `sv_password`'s key being derived (Argon2id, a tenth of a second
/// or more) on a thread of its own, so that no tick waits for it; the
/// password is in force once its key is.
#[derive(Resource, Default)]
pub(crate) struct NewPassword(Mutex<Option<Receiver<Result<arena_protocol::key::NetcodeKey, String>>>>);

/// The new password's key, once derived, in force.
fn take_new_password(pending: Res<NewPassword>, mut transport: ResMut<ServerTransport>) {
    let Ok(mut slot) = pending.0.lock() else { return };
    let Some(receiver) = slot.as_ref() else { return };
    match receiver.try_recv() {
        Ok(Ok(key)) => {
            transport.set_key(key);
            info!("sv_password: the new password is in force");
            *slot = None;
        }
        Ok(Err(e)) => {
            warn!("sv_password: the new password's key could not be made ({e}); the old one stays");
            *slot = None;
        }
        Err(std::sync::mpsc::TryRecvError::Empty) => {}
        Err(std::sync::mpsc::TryRecvError::Disconnected) => *slot = None,
    }
}

/// The remote console's checked commands into the console's lines.
fn take_remote_lines(mut transport: ResMut<ServerTransport>, mut lines: ResMut<ConsoleLines>) {
    for (addr, challenge, command) in std::mem::take(&mut transport.rcon_inbox) {
        if !lines.push(ConsoleSource::Remote { addr, challenge }, command) {
            transport.send_rcon_answer(addr, &challenge, "rcon: the server's console is busy; try again");
        }
    }
}

/// The remote console's answers back to their senders.
fn send_remote_answers(mut transport: ResMut<ServerTransport>, mut lines: ResMut<ConsoleLines>) {
    for (source, text) in std::mem::take(&mut lines.answers) {
        if let ConsoleSource::Remote { addr, challenge } = source {
            let text = if text.is_empty() { "(done)" } else { text.as_str() };
            transport.send_rcon_answer(addr, &challenge, text);
        }
    }
}

/// The terminal's lines, read on a thread of their own.
#[derive(Resource)]
pub(crate) struct TerminalLines(Mutex<Receiver<String>>);

/// Reads the server's standard input into console lines, when it is a
/// terminal (a server started by a service manager or with its input
/// closed reads nothing). Each line is at most [`console::MAX_LINE_BYTES`]:
/// the rest of a longer one is skipped.
pub(crate) fn read_terminal(app: &mut App) {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("console".into()).spawn(move || {
        let mut input = std::io::stdin().lock();
        loop {
            // A read from the background (`arena server &`) would stop the
            // whole server (SIGTTIN): read only in the foreground.
            if !in_foreground() {
                std::thread::sleep(std::time::Duration::from_secs(1));
                continue;
            }
            let mut line = Vec::new();
            match (&mut input).take(console::MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') && line.len() > console::MAX_LINE_BYTES {
                // Too long: skip to its end, and say so.
                let mut rest = Vec::new();
                let _ = (&mut input).take(1 << 20).read_until(b'\n', &mut rest);
                line = format!("echo a line over {} bytes was skipped", console::MAX_LINE_BYTES).into_bytes();
            }
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if tx.send(text).is_err() {
                return;
            }
        }
    });
    match spawned {
        Ok(_) => {
            app.insert_resource(TerminalLines(Mutex::new(rx)));
            app.add_systems(Update, take_terminal_lines.before(run_lines));
        }
        Err(e) => warn!("the server console cannot read its input: {e}"),
    }
}

/// Whether this process is the terminal's foreground job.
#[cfg(unix)]
fn in_foreground() -> bool {
    rustix::termios::tcgetpgrp(std::io::stdin()).is_ok_and(|group| group == rustix::process::getpgrp())
}

#[cfg(not(unix))]
fn in_foreground() -> bool {
    true
}

fn take_terminal_lines(terminal: Res<TerminalLines>, mut lines: ResMut<ConsoleLines>) {
    let Ok(rx) = terminal.0.lock() else { return };
    loop {
        match rx.try_recv() {
            Ok(line) if line.is_empty() => {}
            Ok(line) => {
                if !lines.push(ConsoleSource::Terminal, line) {
                    println!("console: busy, a line was dropped");
                }
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
        }
    }
}

/// What console lines reach in the game.
#[derive(SystemParam)]
pub(crate) struct Game<'w, 's> {
    admission: Admission<'w, 's>,
    rules: ResMut<'w, MatchRules>,
    lag: ResMut<'w, LagCompensation>,
    rate: Res<'w, TickRate>,
    bots: Option<ResMut<'w, BotSettings>>,
    transport: ResMut<'w, ServerTransport>,
    new_password: Res<'w, NewPassword>,
    server: ResMut<'w, RenetServer>,
    round_trips: Res<'w, crate::vocabulary::RoundTrips>,
    world: Res<'w, SimWorld>,
    rotation: ResMut<'w, super::rotation::MapRotation>,
    scores: Query<'w, 's, &'static Score>,
    served: Res<'w, ServedMaps>,
    mode: Res<'w, GameMode>,
    voice: ResMut<'w, VoiceControl>,
}

struct ServerHost<'a, 'w, 's> {
    game: &'a mut Game<'w, 's>,
    /// Whom a kick is said to come from.
    by: &'static str,
}

impl Host for ServerHost<'_, '_, '_> {
    fn vars(&self) -> &[Var] {
        &VARS
    }

    fn commands(&self) -> &[Command] {
        &COMMANDS
    }

    fn get(&self, name: &str) -> Option<String> {
        let g = &self.game;
        Some(match name {
            "sv_maxunlag" => format!("{}", g.lag.max_unlag_s),
            "sv_tickrate" => g.rate.hz().to_string(),
            // Never the password itself (in any answer, or the log).
            "sv_password" => if g.transport.has_password() { "(set)" } else { "(none)" }.into(),
            "mp_fraglimit" => g.rules.frag_limit.to_string(),
            "mp_timelimit" => format!("{}", f64::from(g.rules.time_limit_s) / 60.0),
            "bot_quota" => self.bot_count().to_string(),
            "bot_skill" => g.bots.as_ref().map_or(0.0, |b| b.skill).to_string(),
            "sv_voice" => if g.voice.on { "1" } else { "0" }.into(),
            _ => return None,
        })
    }

    fn set(&mut self, var: &Var, value: Value) -> Result<(), String> {
        let v = value.number();
        let g = &mut self.game;
        match var.name {
            "sv_maxunlag" => g.lag.max_unlag_s = v,
            "sv_password" => {
                // An empty password would open a private game: that takes a restart, on purpose.
                let password = Password::new(value.text()).map_err(|e| e.to_string())?;
                if !password.is_set() {
                    return Err(
                        "sv_password: an empty password would open the game; restart without --password to do that"
                            .into(),
                    );
                }
                // Argon2id off the game thread (a browser's page has one
                // thread: there it runs here).
                #[cfg(not(target_arch = "wasm32"))]
                {
                    let (send, receive) = std::sync::mpsc::channel();
                    std::thread::Builder::new()
                        .name("arena-sv-password".into())
                        .spawn(move || {
                            let _ = send.send(password.key().map_err(|e| e.to_string()));
                        })
                        .map_err(|e| format!("sv_password: cannot start its thread: {e}"))?;
                    if let Ok(mut slot) = g.new_password.0.lock() {
                        // A newer password replaces one still being derived.
                        *slot = Some(receive);
                    }
                }
                #[cfg(target_arch = "wasm32")]
                {
                    // Made here at once: nothing is pending any more.
                    if let Ok(mut slot) = g.new_password.0.lock() {
                        *slot = None;
                    }
                    g.transport.set_key(password.key().map_err(|e| e.to_string())?);
                }
            }
            "mp_fraglimit" => g.rules.frag_limit = v as u16,
            "mp_timelimit" => g.rules.time_limit_s = (v * 60.0).round() as u32,
            "bot_quota" => return self.set_bots(v as usize),
            "bot_skill" => match g.bots.as_mut().filter(|_| g.admission.range.is_none()) {
                Some(bots) => bots.skill = v as f32,
                None => return Err("bot_skill: a shooting range has targets, not bots".into()),
            },
            "sv_voice" => g.voice.on = value.on(),
            _ => return Err(format!("{} cannot be set", var.name)),
        }
        Ok(())
    }

    fn command(&mut self, name: &str, args: &[String]) -> Outcome {
        match name {
            "status" => Outcome::Said(self.status()),
            "say" => {
                if arena_protocol::chat::clean_chat(&args.join(" ")).is_empty() {
                    return Outcome::Refused("say TEXT".into());
                }
                // Cleaned (and cut) with its prefix: what the clients get is what they keep.
                let text = arena_protocol::chat::clean_chat(&format!("Console: {}", args.join(" ")));
                broadcast(&mut self.game.server, &ToClient::Notice { text: text.clone() }, None);
                Outcome::Said(vec![text])
            }
            "kick" | "ban" => {
                let Some(who) = args.first() else { return Outcome::Refused(format!("{name} NAME|#ID")) };
                let Some(id) = self.find(&args.join(" ")).or_else(|| self.find(who)) else {
                    return Outcome::Refused(format!("{name}: no player \"{}\" (status lists them)", args.join(" ")));
                };
                self.kick(id, name == "ban")
            }
            "voice_mute" | "voice_unmute" => {
                let Some(who) = args.first() else { return Outcome::Refused(format!("{name} NAME|#ID")) };
                let Some(id) = self.find(&args.join(" ")).or_else(|| self.find(who)) else {
                    return Outcome::Refused(format!("{name}: no player \"{}\" (status lists them)", args.join(" ")));
                };
                let player =
                    self.game.admission.roster_ref().players.get(&id).map_or_else(String::new, |e| e.name.clone());
                let muted = name == "voice_mute";
                let changed = if muted { self.game.voice.muted.insert(id) } else { self.game.voice.muted.remove(&id) };
                let state = match (muted, changed) {
                    (true, true) => "muted: nothing it says by voice is passed on",
                    (true, false) => "was muted already",
                    (false, true) => "unmuted: its voice is passed on again",
                    (false, false) => "was not muted",
                };
                Outcome::Said(vec![format!("{player} (#{}) {state}", id.0)])
            }
            "map" | "changelevel" if self.game.admission.range.is_some() => {
                Outcome::Refused(format!("{name}: a shooting range plays no matches"))
            }
            "map" | "changelevel" => {
                let current = self.game.world.map().name.clone();
                match args.first() {
                    Some(wanted) => match self.game.served.find(wanted).map(|m| m.id.name.clone()) {
                        Some(map) => {
                            // A new match now, on that map: the next match tick starts it
                            // (scores cleared, everyone respawned on it).
                            self.game.rotation.asked = Some(map.clone());
                            self.game.admission.commands().trigger(RestartMatch);
                            Outcome::Said(vec![format!("a new match on {map}")])
                        }
                        None => Outcome::Refused(format!(
                            "{name}: no map \"{wanted}\" (maps: {})",
                            self.game.served.names().join(", ")
                        )),
                    },
                    None => Outcome::Said(vec![format!("map: {current}")]),
                }
            }
            "mode" | "restart" if self.game.admission.range.is_some() => {
                Outcome::Refused(format!("{name}: a shooting range plays no matches"))
            }
            "mode" => match args.first().map(|m| Mode::parse(m)) {
                None => Outcome::Said(vec![format!("mode: {}", self.game.mode.mode.short())]),
                Some(None) => Outcome::Refused("mode ffa|tdm|duel".into()),
                Some(Some(mode)) => {
                    // Sides are dealt for the mode, then a new match starts in
                    // it, on the same map (the rotation does not move on).
                    self.game.rotation.asked = Some(self.game.world.map().name.clone());
                    self.game.admission.commands().trigger(ChangeMode(mode));
                    self.game.admission.commands().trigger(RestartMatch);
                    Outcome::Said(vec![format!("a new match of {}", mode.label())])
                }
            },
            "restart" => {
                // On the same map: the rotation does not move on.
                self.game.rotation.asked = Some(self.game.world.map().name.clone());
                self.game.admission.commands().trigger(RestartMatch);
                Outcome::Said(vec!["a new match".into()])
            }
            _ => Outcome::Refused(format!("unknown: {name}")),
        }
    }

    fn script(&self, _name: &str) -> Result<String, String> {
        Err("the server's console runs no scripts (use a --config file)".into())
    }

    fn values(&self, command: &str) -> Vec<String> {
        match command {
            "kick" | "ban" | "voice_mute" | "voice_unmute" => {
                self.game.admission.roster_ref().players.values().map(|e| e.name.clone()).collect()
            }
            "map" | "changelevel" => self.game.served.names(),
            "mode" => Mode::ALL.iter().map(|m| m.short().to_string()).collect(),
            _ => Vec::new(),
        }
    }
}

impl ServerHost<'_, '_, '_> {
    fn bot_count(&self) -> usize {
        self.game.admission.roster_ref().players.values().filter(|e| e.client_id.is_none()).count()
    }

    /// A player by `#id` or by name (any case).
    fn find(&self, who: &str) -> Option<PlayerId> {
        let roster = self.game.admission.roster_ref();
        if let Some(id) = who.strip_prefix('#').and_then(|n| n.parse::<u8>().ok()) {
            return roster.players.contains_key(&PlayerId(id)).then_some(PlayerId(id));
        }
        roster.players.iter().find(|(_, e)| e.name.eq_ignore_ascii_case(who)).map(|(id, _)| *id)
    }

    fn kick(&mut self, id: PlayerId, ban: bool) -> Outcome {
        let g = &mut self.game;
        let Some(entry) = g.admission.roster_ref().players.get(&id).cloned() else {
            return Outcome::Refused("no such player".into());
        };
        let verb = if ban { "banned" } else { "kicked" };
        let Some(client_id) = entry.client_id else {
            if g.admission.range.is_some() {
                let command = if ban { "ban" } else { "kick" };
                return Outcome::Refused(format!("{command}: {} is a range target", entry.name));
            }
            if ban {
                return Outcome::Refused(format!("ban: {} is a bot (kick it, or lower bot_quota)", entry.name));
            }
            g.admission.remove_bot(&mut g.server, id);
            if let Some(bots) = g.bots.as_mut() {
                bots.count = bots.count.saturating_sub(1);
            }
            return Outcome::Said(vec![format!("{} (bot) kicked", entry.name)]);
        };
        let addr = g.transport.client_addr(client_id);
        if ban {
            match addr {
                Some(addr) if g.transport.ban(addr.ip()) => {}
                Some(_) => {
                    return Outcome::Refused(
                        "ban: the list of banned addresses is full (or a browser player's real address is gone)".into(),
                    );
                }
                None => return Outcome::Refused("ban: the player's address is unknown".into()),
            }
        }
        let text = format!("{} was {verb} by {}", entry.name, self.by);
        broadcast(&mut g.server, &ToClient::Notice { text: text.clone() }, None);
        g.server.disconnect(client_id);
        let from = addr.map_or_else(|| "?".to_string(), |a| g.transport.peer_label(a));
        Outcome::Said(vec![format!("{text} ({from})")])
    }

    fn set_bots(&mut self, wanted: usize) -> Result<(), String> {
        let g = &mut self.game;
        let Some(mut settings) = g.bots.as_deref().copied().filter(|_| g.admission.range.is_none()) else {
            return Err("bot_quota: a shooting range has targets, not bots".into());
        };
        let bots: Vec<PlayerId> =
            g.admission.roster_ref().players.iter().filter(|(_, e)| e.client_id.is_none()).map(|(id, _)| *id).collect();
        if wanted < bots.len() {
            // The newest bots go first.
            for id in bots.iter().rev().take(bots.len() - wanted) {
                g.admission.remove_bot(&mut g.server, *id);
            }
        } else {
            let free = arena_protocol::MAX_PLAYERS.saturating_sub(g.admission.roster_ref().players.len());
            let room = free
                .saturating_sub(g.admission.max_clients().saturating_sub(g.admission.roster_ref().clients_playing()));
            if wanted - bots.len() > room {
                return Err(format!("bot_quota: room for {} bots beside the players' places", bots.len() + room));
            }
            for i in bots.len()..wanted {
                let Some(id) = add_bot(&mut g.admission, &settings, i) else { break };
                // The players already in hear of it, as of a client joining.
                let roster = g.admission.roster_ref();
                if let Some(entry) = roster.players.get(&id) {
                    broadcast(&mut g.server, &ToClient::PlayerJoined(roster.info(id, entry)), None);
                }
                g.admission.commands().trigger(PlayersChanged);
            }
        }
        settings.count = wanted;
        if let Some(bots) = g.bots.as_mut() {
            **bots = settings;
        }
        Ok(())
    }

    fn status(&self) -> Vec<String> {
        let g = &self.game;
        let roster = g.admission.roster_ref();
        let mut lines = vec![format!(
            "map {}, {} Hz, {} players ({} bots), password {}",
            g.world.map().name,
            g.rate.hz(),
            roster.players.len(),
            self.bot_count(),
            if g.transport.has_password() { "set" } else { "none" }
        )];
        lines.push("  id  name              side        frags  rtt ms  address".into());
        for (id, entry) in &roster.players {
            let frags = g.scores.get(entry.entity).map_or("-".to_string(), |s| s.frags.to_string());
            let (rtt, addr) = match entry.client_id {
                Some(client) => (
                    format!("{:.0}", g.round_trips.of(client, &g.server) * 1000.0),
                    g.transport.client_label(client).unwrap_or_else(|| "?".into()),
                ),
                None => ("-".into(), "bot".into()),
            };
            lines.push(format!(
                "  #{:<3}{:<18}{:<12}{:>5}  {:>6}  {addr}",
                id.0,
                entry.name,
                roster.side(*id).label(),
                frags,
                rtt
            ));
        }
        lines
    }
}

/// `line` as it may be logged: each command that sets `sv_password` with
/// its value replaced by "(hidden)".
fn hide_passwords(line: &str) -> String {
    console::split_commands(line)
        .into_iter()
        .map(|command| {
            let words = console::split_words(command);
            match words.first() {
                Some(name) if name.eq_ignore_ascii_case("sv_password") && words.len() > 1 => {
                    "sv_password (hidden)".to_string()
                }
                _ => command.trim().to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the lines waiting: each logged with where it came from, its answer
/// printed (the terminal's) or queued for the socket (the remote console's).
pub(crate) fn run_lines(mut lines: ResMut<ConsoleLines>, mut game: Game) {
    for _ in 0..LINES_PER_FRAME {
        let Some((source, line)) = lines.waiting.pop_front() else { return };
        // Logged as text only: no controls, no direction overrides; and
        // never a new password (sealed on the way, it must not sit in the log).
        let shown: String = hide_passwords(&line).chars().filter(|c| arena_protocol::chat::allowed(*c)).collect();
        match source {
            ConsoleSource::Terminal => info!("console: {shown}"),
            ConsoleSource::Remote { addr, .. } => info!("rcon from {addr}: {shown}"),
            ConsoleSource::Vote => info!("vote: {shown}"),
        }
        let by = if source == ConsoleSource::Vote { "vote" } else { "the server's operator" };
        let said = console::run(&line, &mut ServerHost { game: &mut game, by }).lines().join("\n");
        match source {
            ConsoleSource::Terminal => {
                if !said.is_empty() {
                    println!("{said}");
                }
            }
            ConsoleSource::Remote { .. } => lines.answers.push((source, said)),
            ConsoleSource::Vote => {
                if !said.is_empty() {
                    info!("vote: {said}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 60's review: a new password reached the log as typed.
    #[test]
    fn a_new_password_never_reaches_the_log() {
        assert_eq!(hide_passwords("sv_password hunter2"), "sv_password (hidden)");
        assert_eq!(hide_passwords("status; SV_PASSWORD \"a b\" ; kick Bob"), "status; sv_password (hidden); kick Bob");
        assert_eq!(hide_passwords("sv_password"), "sv_password", "asking for it shows nothing");
    }
}
