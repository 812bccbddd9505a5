//! `arena`: the game's one binary. With no arguments it opens the main menu;
//! subcommands host, join, or run a dedicated server. This file is the
//! dispatch table: `cli` reads the command line into each mode's config,
//! and each mode runs here (the windowed ones in `windowed`, which a build
//! without the `window` feature refuses).

use std::process::ExitCode;

use cli::{CliError, DemoAction, Experiment, MapAction, Mode};
use windowed::Windowed;

mod cli;
mod master;
mod relay_peers;
mod servers;
mod windowed;

fn main() -> ExitCode {
    let cli = match cli::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(CliError::Clap(e)) => e.exit(),
        Err(e) => return fail(&e.to_string()),
    };
    if matches!(cli.mode, None | Some(Mode::Play(_) | Mode::Host(_) | Mode::Join(_) | Mode::Lab { .. })) {
        warn_if_test_build();
    }
    match cli.mode {
        None => report_done(windowed::run(Windowed::Menu(cli.window))),
        Some(Mode::Play(args)) => report_done(windowed::run(Windowed::Play(args))),
        Some(Mode::Host(args)) => report_done(windowed::run(Windowed::Host(args))),
        Some(Mode::Join(args)) => report_done(windowed::run(Windowed::Join(args))),
        Some(Mode::Server(args)) => match args.config() {
            Ok(config) => report_done(arena_server::run_dedicated(&config).map_err(|e| e.to_string())),
            Err(e) => fail(&e),
        },
        Some(Mode::Servers(args)) => {
            let (wait, json) = (args.wait(), args.json);
            servers::run(&args.ask(), json, wait).unwrap_or_else(|e| fail(&e))
        }
        Some(Mode::Master(args)) => {
            init_logging();
            report_done(master::run(&args))
        }
        Some(Mode::Map { action: MapAction::Check { files } }) => check_maps(&files),
        Some(Mode::Demo { action }) => run_demo(action),
        Some(Mode::Lab { experiment }) => run_lab(experiment),
        Some(Mode::Bots(args)) => match args.config() {
            Ok(config) => run_bots(&config, args.report),
            Err(e) => fail(&e),
        },
        Some(Mode::Rcon(args)) => run_rcon(&args),
    }
}

/// `arena map check`: each file's verdict, its problems one a line; exit 1
/// if any is not playable.
fn check_maps(files: &[std::path::PathBuf]) -> ExitCode {
    use std::io::Read;
    let mut all_ok = true;
    for file in files {
        // One byte past the cap, so that a larger file is told as such.
        let limit = arena_sim::map_check::MAX_MAP_BYTES as u64 + 1;
        let mut text = String::new();
        let read = std::fs::File::open(file).and_then(|f| f.take(limit).read_to_string(&mut text));
        if let Err(e) = read {
            eprintln!("{}: {e}", file.display());
            all_ok = false;
            continue;
        }
        let (map, checked) = arena_sim::map_check::check_text(&text);
        for warning in &checked.warnings {
            println!("{}: warning: {warning}", file.display());
        }
        if checked.ok() {
            let map = map.as_ref();
            println!(
                "{}: ok: \"{}\", {} blocks, {} spawns, {} areas, {} navigation spots",
                file.display(),
                map.map_or(String::from("?"), |m| m.name.escape_debug().to_string()),
                map.map_or(0, |m| m.blocks.len()),
                map.map_or(0, |m| m.spawns.len()),
                map.map_or(0, |m| m.areas.len()),
                checked.nav_spots
            );
        } else {
            all_ok = false;
            for error in &checked.errors {
                println!("{}: {error}", file.display());
            }
        }
    }
    if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// `arena rcon`: the answer on stdout; no answer, a refusal or a wrong
/// password on stderr with a failure status.
fn run_rcon(args: &cli::RconArgs) -> ExitCode {
    let password = match args.password() {
        Ok(password) => password,
        Err(e) => return fail(&e),
    };
    let addr = match arena_client::resolve_server_addr(&args.addr) {
        Ok(addr) => addr,
        Err(e) => return fail(&e.to_string()),
    };
    let wait = std::time::Duration::from_millis(args.wait_ms);
    // One argument is a console line as typed (`arena rcon ADDR "map dm1;
    // restart"`); several are words, each quoted as it needs, so that
    // `kick '#0;sv_password 1'` kicks that name and runs nothing else.
    let line = match args.command.as_slice() {
        [line] => line.clone(),
        words => match arena_protocol::console::join_words(words) {
            Ok(line) => line,
            Err(e) => return fail(&format!("rcon: {e}")),
        },
    };
    match arena_client::remote_console::run(addr, &password, &line, wait) {
        Ok(answer) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("rcon {addr}: {e}")),
    }
}

fn run_demo(action: DemoAction) -> ExitCode {
    match action {
        DemoAction::Info { file } => {
            print_report(arena_protocol::demo::summarize_file(&file).map_err(|e| format!("{}: {e}", file.display())))
        }
        DemoAction::Verify { file, maps } => match load_map_files(&maps)
            .and_then(|maps| arena_replay::verify_file_with_maps(&file, &maps).map_err(|e| e.to_string()))
        {
            Ok(report) => {
                let ok = report.ok;
                let code = print_report(Ok::<_, String>(report));
                if ok { code } else { ExitCode::FAILURE }
            }
            Err(e) => fail(&format!("{}: {e}", file.display())),
        },
        DemoAction::Play(args) => report_done(windowed::run(Windowed::DemoPlay(args))),
    }
}

/// Map files for `arena demo verify --map`, each read and checked as a
/// server reads its own, or why not.
fn load_map_files(paths: &[std::path::PathBuf]) -> Result<Vec<arena_sim::MapDef>, String> {
    paths.iter().map(|path| arena_server::read_map_file(path).map_err(|e| format!("--map: {e}"))).collect()
}

/// `cargo test` builds our crates unoptimised into the same `debug/arena`
/// that `cargo build` writes: say so before a game or the lab runs on it, so
/// nobody plays or measures the test build by mistake.
fn warn_if_test_build() {
    if arena_lab::experiments::build_name() == "test" {
        eprintln!(
            "arena: this is an unoptimised build (opt-level 0, as cargo test makes): the game and the lab's \
             timings run slower than ./play.sh's; `cargo build` makes the game's build"
        );
    }
}

/// Runs an experiment and prints its report; every one but `master` plays
/// a game with the lab's settings.
fn run_lab(experiment: Experiment) -> ExitCode {
    use arena_lab::experiments as lab;
    init_logging();
    let ran = match experiment {
        Experiment::Master(args) => Ok(print_report(lab::master(&args.config()))),
        Experiment::Prediction(args) => {
            args.lab.settings().map(|s| print_report(lab::prediction_pushed(s, args.pushlatency)))
        }
        Experiment::Hitreg(args) => args.settings().map(|s| print_report(lab::hitreg(s))),
        Experiment::Interpolation(args) => args.settings().map(|s| print_report(lab::interpolation(s))),
        Experiment::Flick { lab: args, fps, turn_deg_s, sweep_deg } => {
            args.settings().map(|s| print_report(lab::flick(s, lab::Flick { fps, turn_deg_s, sweep_deg })))
        }
        Experiment::Rockets { lab: args } => args.settings().map(|s| print_report(lab::rockets(s))),
        Experiment::Peek { lab: args, fps } => args.settings().map(|s| print_report(lab::peek(s, lab::Peek { fps }))),
        Experiment::Unlag { lab: args, caps } => args.settings().map(|s| print_report(lab::unlag(s, &caps))),
        Experiment::Servercost { lab: args, players, clients, executor } => {
            let load = lab::ServerLoad { players, clients, executor: executor.into() };
            args.settings().map(|s| print_report(lab::servercost(s, load)))
        }
        Experiment::Timing { lab: args, fps } => args.settings().map(|s| print_report(lab::timing(s, fps))),
        Experiment::Killcam { lab: args, kills } => args.settings().map(|s| print_report(lab::kill_cam(s, kills))),
        Experiment::Demo { lab: args, players, map, bots, out } => {
            args.settings().map(|s| print_report(lab::demo(s, lab::DemoGame { players, bots, map }, out.as_deref())))
        }
        Experiment::Voice(args) => args.settings().map(|s| print_report(lab::voice(s))),
        Experiment::Pickups { lab: args, map } => args.settings().map(|s| print_report(lab::pickups(s, &map))),
        Experiment::Teleport { lab: args, map } => {
            args.settings().map(|s| print_report(lab::teleport(s, map.as_deref())))
        }
        Experiment::Bandwidth { lab: args, players } => {
            args.settings().map(|s| print_report(lab::bandwidth(s, players)))
        }
        Experiment::Sweep { lab: args, out, parts, run_seconds } => args.settings().map(|settings| {
            // Each of the sweep's runs lasts --run-seconds, not --seconds.
            let settings = lab::LabSettings { seconds: run_seconds, ..settings };
            let progress = |step: &str| eprintln!("sweep: {step}");
            match lab::sweep(settings, &parts, &out, progress) {
                Ok(report) => {
                    for file in &report.files {
                        eprintln!("wrote {}", file.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e.to_string()),
            }
        }),
    };
    ran.unwrap_or_else(|e| fail(&e))
}

/// Prints an experiment's report as one JSON object on stdout.
fn print_report<T: serde::Serialize, E: std::fmt::Display>(report: Result<T, E>) -> ExitCode {
    match report.map_err(|e| e.to_string()).and_then(|r| serde_json::to_string(&r).map_err(|e| e.to_string())) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// Runs the bots, then writes their report (to `report`, else stdout);
/// fails if any bot was not connected the whole time.
fn run_bots(config: &arena_lab::bot_clients::BotsConfig, report: Option<std::path::PathBuf>) -> ExitCode {
    init_logging();
    // The report is written at the end; whether it can be is known now.
    if let Some(path) = &report
        && let Err(e) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        return fail(&format!(
            "cannot write the report to {}: {e} (give --report a file this user can write)",
            path.display()
        ));
    }
    let result = arena_lab::bot_clients::run(config);
    let json = match serde_json::to_string_pretty(&result) {
        Ok(json) => json,
        Err(e) => return fail(&format!("cannot write the report: {e}")),
    };
    match report {
        Some(path) => {
            if let Err(e) = std::fs::write(&path, json + "\n") {
                return fail(&format!("cannot write {}: {e}", path.display()));
            }
        }
        None => println!("{json}"),
    }
    let failed: Vec<&str> = result.clients.iter().filter(|c| c.error.is_some()).map(|c| c.name.as_str()).collect();
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        fail(&format!("not connected the whole time: {}", failed.join(", ")))
    }
}

/// Logging to stderr for the headless modes that have no Bevy LogPlugin of their own.
fn init_logging() {
    use bevy::log::tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(arena_server::LOG_FILTER));
    let _ =
        fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(arena_server::log_colours()).try_init();
}

/// The exit code of a mode that ran to its end, or failed saying why.
fn report_done(done: Result<(), String>) -> ExitCode {
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("arena: {message}");
    ExitCode::FAILURE
}
