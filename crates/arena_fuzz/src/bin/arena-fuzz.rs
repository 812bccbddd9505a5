//! `arena-fuzz`: runs the fuzz targets for as many inputs or as long as asked,
//! and prints, per target, the inputs tried, the panics and the time; then
//! each panicking input in hex. Exits non-zero if anything panicked.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser, Debug)]
#[command(name = "arena-fuzz", about = "Fuzz Arena's parsers and rules on stable Rust")]
struct Cli {
    #[command(subcommand)]
    flood: Option<Flood>,
    /// Inputs in all, shared evenly among the targets.
    #[arg(long, default_value_t = 1_000_000)]
    inputs: u64,
    /// Stop after this many seconds in all, whatever the count.
    #[arg(long)]
    seconds: Option<f64>,
    /// Only the targets whose names contain this.
    #[arg(long)]
    target: Option<String>,
    /// Seed of the inputs (the same seed tries the same inputs).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// List the targets and stop.
    #[arg(long)]
    list: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Flood {
    /// Flood a running server with hostile datagrams (for soak tests).
    Flood {
        /// The server's address.
        server: std::net::SocketAddr,
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Datagrams per second.
        #[arg(long, default_value_t = 2000)]
        rate: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Flood a running server's remote console as issue 60 found it locked
    /// out: 9-byte garbage rcon datagrams from this machine's address, and
    /// well-formed challenge requests from other loopback addresses
    /// (127.0.0.2 up; a server on loopback only), for soak tests.
    RconFlood {
        /// The server's address (on 127.0.0.1).
        server: std::net::SocketAddr,
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Garbage datagrams per second from 127.0.0.1.
        #[arg(long, default_value_t = 8)]
        garbage_rate: u32,
        /// Challenge requests per second, spread over `--strangers` addresses.
        #[arg(long, default_value_t = 400)]
        rate: u32,
        #[arg(long, default_value_t = 200)]
        strangers: u8,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Flood::RconFlood { server, seconds, garbage_rate, rate, strangers }) = cli.flood {
        return match arena_fuzz::flood::rcon_flood(server, seconds, (garbage_rate, rate), strangers) {
            Ok((garbage, requests)) => {
                println!("rcon flood: {garbage} garbage datagrams, {requests} challenge requests");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("arena-fuzz: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Flood::Flood { server, seconds, rate, seed }) = cli.flood {
        return match arena_fuzz::flood::flood(server, seconds, rate, seed) {
            Ok(report) => {
                println!(
                    "flood: {} datagrams, {} connection requests, {} authenticated garbage packets, {} connections",
                    report.datagrams, report.connection_requests, report.authenticated_garbage, report.connections
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("arena-fuzz: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut targets = arena_fuzz::all();
    if let Some(filter) = &cli.target {
        targets.retain(|t| t.name().contains(filter.as_str()));
    }
    if cli.list || targets.is_empty() {
        for t in &targets {
            println!("{}", t.name());
        }
        return if targets.is_empty() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    let per_target = cli.inputs.div_ceil(targets.len() as u64);
    let started = Instant::now();
    let budget = cli.seconds.filter(|s| s.is_finite() && *s > 0.0).map(Duration::from_secs_f64);
    let (mut inputs, mut panics) = (0u64, 0u64);
    let count = targets.len() as u32;
    for (i, target) in targets.iter_mut().enumerate() {
        // Each target gets an equal share of what time is left.
        let deadline = budget.map(|b| {
            let left = b.saturating_sub(started.elapsed());
            Instant::now() + left / (count - i as u32)
        });
        let report = arena_fuzz::run(target.as_mut(), per_target, cli.seed, deadline);
        println!("{report}");
        inputs += report.inputs;
        panics += report.panics;
    }
    println!("total: {inputs} inputs, {panics} panics, {:.1} s, seed {}", started.elapsed().as_secs_f64(), cli.seed);
    if panics == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
