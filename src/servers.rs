//! `arena servers`: the server browser's queries from the command line, for
//! scripts and admins. One line per server, or one JSON object per line.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use arena_client::browser::{BrowsedServer, ServerBrowser, Status};
use arena_protocol::query::ServerKind;
use serde_json::{Value, json};

/// Asks `addrs` (and the LAN with `lan`, or with no address) and prints
/// what answered within `wait`.
pub fn run(addrs: &[String], lan: bool, json_lines: bool, wait: Duration) -> Result<ExitCode, String> {
    let mut browser = ServerBrowser::new().map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    browser.details = true;
    for text in addrs {
        let addr = arena_client::resolve_server_addr(text).map_err(|e| e.to_string())?;
        browser.query(addr);
    }
    if lan || addrs.is_empty() {
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
    if answered == 0 {
        eprintln!("no Arena server answered{}", if lan || addrs.is_empty() { " (LAN scanned)" } else { "" });
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(server: &BrowsedServer) -> Value {
    let answered = server.status == Status::Answering;
    let Some(info) = server.info.as_ref().filter(|_| answered) else {
        return json!({ "address": server.addr.to_string(), "answered": false });
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
        "name": info.name,
        "map": info.map,
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
        "{:<22} {:<30} {:<10} {:>3}/{:<3} {:>2} bots  {:>7}  {}{}{}",
        server.addr,
        info.name,
        info.map,
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
