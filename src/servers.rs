//! `arena servers`: the server browser's queries from the command line, for
//! scripts and admins: servers asked by address, found on the LAN, or
//! listed by internet masters. One line per server, or one JSON object per
//! line.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use arena_client::browser::{BrowsedServer, ServerBrowser, Status};
use arena_protocol::query::ServerKind;
use serde_json::{Value, json};

/// What to ask.
pub(crate) struct Ask {
    /// Servers by address (`host`, `host:port`).
    pub addrs: Vec<String>,
    /// Scan the LAN too (also when nothing else is asked).
    pub lan: bool,
    /// Internet masters (`host`, `host:port`, default port 27950).
    pub masters: Vec<String>,
}

/// Asks the servers at `ask.addrs`, the masters' servers, and the LAN with
/// `ask.lan` (or when nothing else is asked), and prints what answered
/// within `wait`.
pub(crate) fn run(ask: &Ask, json_lines: bool, wait: Duration) -> Result<ExitCode, String> {
    let mut browser = ServerBrowser::new().map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    browser.details = true;
    for text in &ask.addrs {
        let addr = arena_client::resolve_server_addr(text).map_err(|e| e.to_string())?;
        browser.query(addr);
    }
    for name in &ask.masters {
        if let Some(port) = arena_udp::port_out_of_range(name) {
            return Err(format!("--master {name}: port {port} is out of range (a UDP port is 1-65535)"));
        }
        let found = arena_udp::resolve(name, arena_master::wire::DEFAULT_PORT, browser.has_ipv6());
        if found.is_empty() {
            return Err(format!("--master {name}: no such host (or no address this machine can reach)"));
        }
        for addr in found {
            browser.ask_master(addr);
        }
    }
    let lan = ask.lan || (ask.addrs.is_empty() && ask.masters.is_empty());
    if lan {
        browser.scan_lan();
    }
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        browser.poll();
        if browser.settled() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    browser.poll();
    let servers: Vec<&BrowsedServer> = browser.servers().collect();
    let answered = servers.iter().filter(|s| s.info.is_some() && s.status == Status::Answering).count();
    for server in &servers {
        if json_lines {
            println!("{}", to_json(server));
        } else {
            print_line(server);
        }
    }
    for master in browser.masters() {
        if !master.answered {
            eprintln!("the master at {} did not answer", master.addr);
        } else if !master.complete {
            eprintln!("the master at {} listed {} servers but did not finish its list", master.addr, master.listed);
        }
    }
    if answered == 0 {
        eprintln!("no Arena server answered{}", if lan { " (LAN scanned)" } else { "" });
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(server: &BrowsedServer) -> Value {
    let answered = server.status == Status::Answering;
    let Some(info) = server.info.as_ref().filter(|_| answered) else {
        return json!({
            "address": server.addr.to_string(),
            "answered": false,
            "lan": server.on_lan,
            "from_master": server.from_master,
        });
    };
    let players: Option<Vec<Value>> = server.players.as_ref().map(|players| {
        players.iter().map(|p| json!({ "name": p.name, "score": p.score, "duration_s": p.duration_s })).collect()
    });
    let rules: Option<serde_json::Map<String, Value>> =
        server.rules.as_ref().map(|rules| rules.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect());
    json!({
        "address": server.addr.to_string(),
        "answered": true,
        "lan": server.on_lan,
        "from_master": server.from_master,
        "name": info.name,
        "map": info.map,
        "mode": server.mode().unwrap_or_default().short(),
        "game": info.game,
        "players": info.players,
        "max_players": info.max_players,
        "bots": info.bots,
        "password": info.password,
        "server_type": match info.kind { ServerKind::Dedicated => "dedicated", ServerKind::Listen => "listen" },
        "version": info.version,
        "protocol": info.protocol,
        "compatible": server.compatible(),
        "ping_ms": server.ping_ms,
        "player_list": players,
        "rules": rules,
    })
}

fn print_line(server: &BrowsedServer) {
    let Some(info) = server.info.as_ref().filter(|_| server.status == Status::Answering) else {
        println!("{:<22} (no answer)", server.addr);
        return;
    };
    let ping = server.ping_ms.map_or("?".to_string(), |p| format!("{p:.0} ms"));
    println!(
        "{:<22} {:<30} {:<10} {:<4} {:>3}/{:<3} {:>2} bots  {:>7}  {}{}{}",
        server.addr,
        info.name,
        info.map,
        server.mode().unwrap_or_default().short(),
        info.players,
        info.max_players,
        info.bots,
        ping,
        match info.kind {
            ServerKind::Dedicated => "dedicated",
            ServerKind::Listen => "hosted",
        },
        if info.password { ", password" } else { "" },
        if server.compatible() { "" } else { ", another version" },
    );
    if let Some(players) = &server.players
        && !players.is_empty()
    {
        let names: Vec<String> = players.iter().map(|p| format!("{} ({})", p.name, p.score)).collect();
        println!("    {}", names.join(", "));
    }
}
