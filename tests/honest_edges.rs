//! The edges a new user or an admin meets first, run as they would run them
//! (the real binary, headless): an empty password from any source never
//! opens a game, log output into a file or a pipe is plain text, and a
//! recording that cannot be written stops the server before it listens.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::UdpSocket;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn arena() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_arena"));
    // The test's own environment must not give the server a password.
    for variable in ["ARENA_PASSWORD", "ARENA_PASSWORD_FILE", "ARENA_CONFIG", "NO_COLOR", "RUST_LOG"] {
        command.env_remove(variable);
    }
    command
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("arena-edges-{}-{name}", std::process::id()))
}

fn free_addr() -> String {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

/// Runs `command` to its end (at most `limit`; it is killed after that and
/// the test fails).
fn run(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("arena starts");
    let id = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(limit) {
        Ok(output) => output.expect("arena's output"),
        Err(_) => {
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!("arena ran longer than {limit:?}");
        }
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// A dedicated server with `args` (and `env`) must refuse to start: exit
/// non-zero, before it listens, saying which source gave the empty password.
fn refused(args: &[&str], env: &[(&str, &str)], names: &str) {
    let mut command = arena();
    command.args(["server", "--bind", &free_addr(), "--map-port", "off", "--seconds", "5"]).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let started = Instant::now();
    let output = run(command, Duration::from_secs(30));
    let said = text(&output);
    assert!(!output.status.success(), "{args:?} {env:?} started a server: {said}");
    assert!(started.elapsed() < Duration::from_secs(4), "{args:?} {env:?} ran until --seconds: {said}");
    assert!(!said.contains("listening"), "{args:?} {env:?} listened: {said}");
    assert!(said.contains(names), "{args:?} {env:?}: the message should name {names:?}: {said}");
    assert!(said.contains("open the game to anyone"), "{args:?} {env:?}: the message should say why: {said}");
}

#[test]
fn an_empty_password_from_the_flag_the_file_the_environment_or_the_config_file_is_refused() {
    for blank in ["", "   ", "\t"] {
        refused(&["--password", blank], &[], "--password");
        refused(&[], &[("ARENA_PASSWORD", blank)], "ARENA_PASSWORD");
    }
    for (i, contents) in ["", "\n", "   \nsecond line\n"].iter().enumerate() {
        let file = temp_path(&format!("password-{i}"));
        std::fs::write(&file, contents).unwrap();
        let path = file.display().to_string();
        refused(&["--password-file", &path], &[], &format!("{path} (named by --password-file)"));
        refused(
            &[],
            &[("ARENA_PASSWORD_FILE", path.as_str())],
            &format!("{path} (named by ARENA_PASSWORD_FILE (the environment))"),
        );
        let config = temp_path(&format!("password-file-{i}.ron"));
        std::fs::write(&config, format!("(password_file: {path:?})\n")).unwrap();
        let named_by = format!("{path} (named by `password_file` in the config file {})", config.display());
        refused(&["--config", &config.display().to_string()], &[], &named_by);
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(&config);
    }
    refused(&[], &[("ARENA_PASSWORD_FILE", "")], "ARENA_PASSWORD_FILE");
    for (i, blank) in ["", "  "].iter().enumerate() {
        let config = temp_path(&format!("blank-{i}.ron"));
        std::fs::write(&config, format!("(password: {blank:?})\n")).unwrap();
        let path = config.display().to_string();
        refused(&["--config", &path], &[], &path);
        let _ = std::fs::remove_file(&config);
    }
}

#[test]
fn a_player_may_give_an_empty_password_to_join_an_open_game() {
    // Nobody answers there: the bots fail to connect, not to start.
    let mut command = arena();
    command.args(["bots", "--connect", &free_addr(), "--password", "", "--seconds", "1"]);
    let said = text(&run(command, Duration::from_secs(30)));
    assert!(!said.contains("open the game to anyone"), "{said}");
}

#[test]
fn a_real_password_still_starts_a_private_server() {
    let mut command = arena();
    command.args(["server", "--bind", &free_addr(), "--map-port", "off", "--seconds", "1", "--password", " sesame "]);
    let output = run(command, Duration::from_secs(60));
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("private: joining needs the password"), "{said}");
}

#[test]
fn a_recording_that_cannot_be_written_stops_the_server_before_it_listens() {
    // A folder under a plain file can be made by nobody, root included.
    let file = temp_path("not-a-folder");
    std::fs::write(&file, "a file").unwrap();
    let dir = file.join("demos");
    let mut command = arena();
    command.args(["server", "--bind", &free_addr(), "--map-port", "off", "--seconds", "5", "--record"]).arg(&dir);
    let started = Instant::now();
    let output = run(command, Duration::from_secs(30));
    let said = text(&output);
    let _ = std::fs::remove_file(&file);
    assert!(!output.status.success(), "{said}");
    assert!(started.elapsed() < Duration::from_secs(4), "ran on: {said}");
    assert!(!said.contains("listening"), "listened first: {said}");
    assert!(said.contains(&format!("cannot record demos into {}", dir.display())), "{said}");
}

#[test]
fn logs_into_a_pipe_or_a_file_carry_no_colour_codes() {
    let master = {
        let mut command = arena();
        command.args(["master", "--bind", &free_addr(), "--probe-port", "0", "--seconds", "1"]);
        command
    };
    let bots = {
        // Nobody answers there: the bots log their attempts and give up.
        let mut command = arena();
        command.args(["bots", "--connect", &free_addr(), "--count", "1", "--seconds", "2"]);
        command
    };
    let lab = {
        let mut command = arena();
        command.args(["lab", "prediction", "--seconds", "1"]);
        command
    };
    let server = {
        let mut command = arena();
        command.args(["server", "--bind", &free_addr(), "--map-port", "off", "--seconds", "1"]);
        command
    };
    for (what, command) in [("master", master), ("bots", bots), ("lab", lab), ("server", server)] {
        // Into a pipe (what `run` gives it).
        let output = run(command, Duration::from_secs(90));
        let said = text(&output);
        // Something was logged, or there would be nothing to check.
        assert!(said.contains("INFO") || said.contains("WARN"), "arena {what} logged nothing: {said}");
        assert!(!said.contains('\u{1b}'), "arena {what} wrote an escape code into a pipe: {said:?}");
    }
    // Into a file, as a unit file or `arena master > master.log 2>&1` has it.
    let log = temp_path("master.log");
    let file = std::fs::File::create(&log).unwrap();
    let status = arena()
        .args(["master", "--bind", &free_addr(), "--probe-port", "0", "--seconds", "1"])
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .expect("arena master runs");
    let written = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(status.success() && written.contains("INFO"), "{written}");
    assert!(!written.contains('\u{1b}'), "arena master wrote an escape code into a file: {written:?}");
}

/// Runs `args` and returns what it said, checking it failed.
fn fails_saying(args: &[&str]) -> String {
    let mut command = arena();
    command.args(args);
    let output = run(command, Duration::from_secs(30));
    let said = text(&output);
    assert!(!output.status.success(), "{args:?} succeeded: {said}");
    said
}

#[test]
fn mistakes_are_named_in_the_programs_own_words() {
    // A port past 65535 is a port out of range, not an unknown name.
    for args in [&["servers", "127.0.0.1:70000"][..], &["bots", "--connect", "example.invalid:70000", "--seconds", "1"]]
    {
        let said = fails_saying(args);
        assert!(said.contains("port 70000 is out of range"), "{args:?}: {said}");
    }
    let said = fails_saying(&["server", "--bind", "127.0.0.1:70000", "--seconds", "1"]);
    assert!(said.contains("port 70000 is out of range"), "{said}");
    // A negative number is a value out of range, not an unknown flag.
    let said = fails_saying(&["lab", "prediction", "--fake-loss", "-0.5", "--seconds", "1"]);
    assert!(said.contains("--fake-loss within 0..=1"), "{said}");
    // Seconds: what is allowed, in words that include the value refused.
    let said = fails_saying(&["lab", "prediction", "--seconds", "0"]);
    assert!(said.contains("more than 0"), "{said}");
    // Two names for one server: refused, not one of them dropped.
    let said = fails_saying(&["server", "--name", "A", "--server-name", "B", "--seconds", "1"]);
    assert!(said.contains("two names") && said.contains("--server-name"), "{said}");
    // A master's port past 65535 too.
    let said = fails_saying(&["servers", "--master", "127.0.0.1:70000"]);
    assert!(said.contains("port 70000 is out of range"), "{said}");
    let said = fails_saying(&["server", "--master", "example.invalid:70000", "--map-port", "off", "--seconds", "1"]);
    assert!(said.contains("port 70000 is out of range"), "{said}");
    // An output that cannot be written fails at once.
    let not_a_folder = temp_path("report-parent");
    std::fs::write(&not_a_folder, "a file").unwrap();
    let report = not_a_folder.join("report.json").display().to_string();
    let said = fails_saying(&["bots", "--connect", "127.0.0.1:9", "--report", &report, "--seconds", "30"]);
    assert!(said.contains("cannot write the report"), "{said}");
    let out = not_a_folder.join("charts").display().to_string();
    let said = fails_saying(&["lab", "sweep", "--out", &out, "--run-seconds", "1"]);
    let _ = std::fs::remove_file(&not_a_folder);
    assert!(said.contains(&out), "{said}");
    // A busy port: the flags this command really has.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let said = fails_saying(&["server", "--bind", &addr, "--map-port", "off", "--seconds", "1"]);
    assert!(said.contains("--bind ADDRESS:PORT on `arena server`"), "{said}");
}

#[test]
fn a_player_who_leaves_is_logged_as_leaving() {
    let addr = free_addr();
    let mut server = arena();
    server.args(["server", "--bind", &addr, "--map-port", "off", "--seconds", "6"]);
    let server = std::thread::spawn(move || run(server, Duration::from_secs(60)));
    // Joined once it answers (a loaded machine starts it slowly).
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let mut ask = arena();
        ask.args(["servers", &addr, "--wait-ms", "300"]);
        if run(ask, Duration::from_secs(10)).status.success() {
            break;
        }
    }
    let mut bots = arena();
    bots.args(["bots", "--connect", &addr, "--count", "1", "--seconds", "2"]);
    let bots = run(bots, Duration::from_secs(30));
    assert!(bots.status.success(), "{}", text(&bots));
    let said = text(&server.join().unwrap());
    assert!(said.contains("Bot 1 (player 0) left"), "{said}");
    assert!(!said.contains("terminated by the transport layer"), "{said}");
}

#[test]
fn on_a_terminal_logs_are_coloured_unless_no_color_is_set() {
    // util-linux's `script` gives the program a terminal (bsdutils is
    // Essential on Debian; elsewhere this test has nothing to run).
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` here: skipped");
        return;
    }
    let on_a_terminal = |no_color: &str| {
        let line = format!(
            "NO_COLOR={no_color} {} master --bind 127.0.0.1:0 --probe-port 0 --seconds 1",
            env!("CARGO_BIN_EXE_arena")
        );
        let mut command = Command::new("script");
        command.args(["-qec", &line, "/dev/null"]).env_remove("RUST_LOG");
        text(&run(command, Duration::from_secs(30)))
    };
    let coloured = on_a_terminal("");
    assert!(coloured.contains('\u{1b}'), "no colours on a terminal: {coloured:?}");
    let plain = on_a_terminal("1");
    assert!(plain.contains("INFO") && !plain.contains('\u{1b}'), "NO_COLOR=1 still coloured: {plain:?}");
}
