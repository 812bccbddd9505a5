//! `arena-agones`: the sidecar's command line. See the library's docs.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use arena_agones::report::Reporter;
use arena_agones::sidecar::{self, Options};
use clap::Parser;

/// Reports an Arena server to Agones: Ready once it answers A2S queries,
/// health while it answers, the people playing, Shutdown when it stops.
#[derive(Parser, Debug)]
#[command(name = "arena-agones", version)]
struct Args {
    /// The Arena server's game port (A2S is answered there), host:port.
    #[arg(long, env = "ARENA_AGONES_SERVER", default_value = "127.0.0.1:27015")]
    server: String,
    /// Time between looks at the server, milliseconds (a look is two server
    /// queries; a server answers 8 a second from one address).
    #[arg(long, env = "ARENA_AGONES_POLL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(250..=60_000))]
    poll_ms: u64,
    /// Silence after which the server counts as stopped (then Shutdown), milliseconds.
    #[arg(long, env = "ARENA_AGONES_DOWN_AFTER_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    down_after_ms: u64,
    /// The Agones SDK server's gRPC port (else AGONES_SDK_GRPC_PORT, else 9357).
    #[arg(long)]
    agones_port: Option<u16>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let server = match resolve(&args.server).await {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("arena-agones: --server {}: {e}", args.server);
            return ExitCode::from(2);
        }
    };
    // The SDK waits up to 30 s for its server (the Agones sidecar may start
    // after us); past that, exiting lets Kubernetes restart the container.
    let sdk = match agones::Sdk::new(args.agones_port, None).await {
        Ok(sdk) => sdk,
        Err(e) => {
            eprintln!("arena-agones: cannot reach the Agones SDK server: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("arena-agones: connected to the Agones SDK; looking at {server} every {} ms", args.poll_ms);
    let options = Options {
        server,
        poll: Duration::from_millis(args.poll_ms),
        down_after: Duration::from_millis(args.down_after_ms),
    };
    let ending = sidecar::run(options, Reporter::new(sdk), stop_signal()).await;
    eprintln!("arena-agones: done ({ending:?})");
    ExitCode::SUCCESS
}

async fn resolve(server: &str) -> Result<SocketAddr, String> {
    let mut addrs = tokio::net::lookup_host(server).await.map_err(|e| e.to_string())?;
    addrs.next().ok_or_else(|| "no address".to_string())
}

/// SIGTERM (Kubernetes stopping the pod) or SIGINT. If the handlers cannot
/// be set up, the sidecar runs until the server stops.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            eprintln!("arena-agones: cannot listen for signals; running until the server stops");
            std::future::pending::<()>().await
        }
    }
}
