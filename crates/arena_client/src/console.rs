//! The console's core, in the paper's words: its variables (`cl_predict`,
//! `cl_interp`, `pushlatency`, `net_fakelag`, ...), each a view onto the one
//! setting it names (nothing duplicated: the netcode panel and the flags
//! read the same [`NetcodeSettings`]), refused outside its range with the
//! range; `help NAME`, `find TEXT`, an unknown name answered with the
//! closest ones; `exec` of a script with a depth limit, so that a file that
//! execs itself stops with a message. Lines longer than [`MAX_LINE_BYTES`]
//! are refused. No Bevy here: the window's console and tests drive it.

use crate::settings::NetcodeSettings;

/// Longest console line, bytes.
pub const MAX_LINE_BYTES: usize = 1024;
/// Deepest `exec` inside `exec`: a script that execs itself stops here.
pub const MAX_EXEC_DEPTH: usize = 8;

/// A console variable: its name, the paper's (or its engine's) name for the
/// same idea where it has one, what it means, and its range.
#[derive(Debug, Clone, Copy)]
pub struct Cvar {
    pub name: &'static str,
    pub paper: Option<&'static str>,
    pub help: &'static str,
    pub min: f64,
    pub max: f64,
}

/// The client's netcode variables, each over one field of [`NetcodeSettings`].
pub const CVARS: [Cvar; 8] = [
    Cvar { name: "cl_predict", paper: Some("cl_predict"), help: "client-side prediction (0/1)", min: 0.0, max: 1.0 },
    Cvar {
        name: "cl_reconcile",
        paper: None,
        help: "replay unacknowledged commands on each snapshot (0/1)",
        min: 0.0,
        max: 1.0,
    },
    Cvar {
        name: "cl_interp",
        paper: Some("ex_interp"),
        help: "interpolation delay, ms (0: adaptive)",
        min: 0.0,
        max: arena_protocol::MAX_INTERP_MS as f64,
    },
    Cvar {
        name: "cl_lagcompensation",
        paper: Some("cl_lc"),
        help: "ask the server to rewind others to what you saw (0/1)",
        min: 0.0,
        max: 1.0,
    },
    Cvar {
        name: "pushlatency",
        paper: Some("pushlatency"),
        help: "predict at most -N ms ahead of the acknowledged state (-1000: all of it)",
        min: -1000.0,
        max: 0.0,
    },
    Cvar {
        name: "net_fakelag",
        paper: None,
        help: "added round trip, ms",
        min: 0.0,
        max: crate::conditioner::LinkConditions::MAX_MS as f64,
    },
    Cvar { name: "net_fakejitter", paper: None, help: "jitter each way, ± ms", min: 0.0, max: 500.0 },
    Cvar { name: "net_fakeloss", paper: None, help: "loss each way, percent", min: 0.0, max: 100.0 },
];

/// What a line did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Lines to print.
    Said(Vec<String>),
    /// A refusal, in words.
    Refused(String),
}

/// The value of variable `name` in `settings`.
pub fn get(settings: &NetcodeSettings, name: &str) -> Option<f64> {
    let b = |on: bool| f64::from(u8::from(on));
    Some(match name {
        "cl_predict" => b(settings.prediction),
        "cl_reconcile" => b(settings.reconciliation),
        "cl_interp" => f64::from(settings.interp_ms.unwrap_or(0)),
        "cl_lagcompensation" => b(settings.lag_compensation),
        "pushlatency" => settings.predict_ahead_ms.map_or(-1000.0, |ms| -f64::from(ms)),
        "net_fakelag" => f64::from(settings.conditions.latency_ms),
        "net_fakejitter" => f64::from(settings.conditions.jitter_ms),
        "net_fakeloss" => f64::from(settings.conditions.loss) * 100.0,
        _ => return None,
    })
}

/// Sets variable `cvar` to `value` (within its range) in `settings`.
fn set(settings: &mut NetcodeSettings, cvar: &Cvar, value: f64) {
    let on = value >= 0.5;
    match cvar.name {
        "cl_predict" => settings.prediction = on,
        "cl_reconcile" => settings.reconciliation = on,
        "cl_interp" => settings.interp_ms = (value >= 0.5).then(|| value.round() as u16),
        "cl_lagcompensation" => settings.lag_compensation = on,
        // Ahead of the round trip is all of it: -1000 is full prediction.
        "pushlatency" => settings.predict_ahead_ms = (value > -1000.0).then(|| (-value).round() as u32),
        "net_fakelag" => settings.conditions.latency_ms = value as f32,
        "net_fakejitter" => settings.conditions.jitter_ms = value as f32,
        "net_fakeloss" => settings.conditions.loss = (value / 100.0) as f32,
        _ => {}
    }
}

/// The names closest to `wanted` (at most three, within a few edits).
pub fn closest(wanted: &str, names: &[&'static str]) -> Vec<&'static str> {
    let mut scored: Vec<(usize, &'static str)> = names
        .iter()
        .map(|n| (edit_distance(wanted, n).min(if n.contains(wanted) { 1 } else { usize::MAX }), *n))
        .filter(|(d, _)| *d <= 3)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Reads a script for `exec` (bounded); the window's console reads files,
/// tests hand in text.
pub trait Scripts {
    fn read(&self, name: &str) -> Result<String, String>;
}

/// Runs one console line on `settings`; `exec` reads from `scripts`.
pub fn run(line: &str, settings: &mut NetcodeSettings, scripts: &dyn Scripts) -> Outcome {
    run_at(line, settings, scripts, &mut Vec::new())
}

fn run_at(line: &str, settings: &mut NetcodeSettings, scripts: &dyn Scripts, execs: &mut Vec<String>) -> Outcome {
    if line.len() > MAX_LINE_BYTES {
        return Outcome::Refused(format!("a line of {} bytes (at most {MAX_LINE_BYTES})", line.len()));
    }
    let mut words = line.split_whitespace();
    let Some(command) = words.next() else { return Outcome::Said(Vec::new()) };
    let args: Vec<&str> = words.collect();
    let names: Vec<&'static str> = CVARS.iter().map(|c| c.name).chain(["help", "find", "exec", "echo"]).collect();
    match command {
        "help" => match args.first().and_then(|n| CVARS.iter().find(|c| c.name == *n)) {
            Some(c) => Outcome::Said(vec![describe(c, settings)]),
            None => Outcome::Said(vec![format!("commands and variables: {}", names.join(", "))]),
        },
        "find" => {
            let text = args.join(" ").to_lowercase();
            let found: Vec<String> = CVARS
                .iter()
                .filter(|c| c.name.contains(&text) || c.help.to_lowercase().contains(&text))
                .map(|c| describe(c, settings))
                .collect();
            if found.is_empty() {
                Outcome::Said(vec![format!("nothing about \"{text}\"")])
            } else {
                Outcome::Said(found)
            }
        }
        "echo" => Outcome::Said(vec![args.join(" ")]),
        "exec" => {
            let Some(name) = args.first() else { return Outcome::Refused("exec FILE".into()) };
            if execs.iter().any(|e| e == name) {
                return Outcome::Refused(format!(
                    "exec {name}: stopped, it runs itself (through {})",
                    execs.join(" → ")
                ));
            }
            if execs.len() >= MAX_EXEC_DEPTH {
                return Outcome::Refused(format!("exec {name}: stopped, scripts nest deeper than {MAX_EXEC_DEPTH}"));
            }
            let text = match scripts.read(name) {
                Ok(text) => text,
                Err(e) => return Outcome::Refused(format!("exec {name}: {e}")),
            };
            execs.push((*name).to_string());
            let mut said = Vec::new();
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("//")) {
                match run_at(line, settings, scripts, execs) {
                    Outcome::Said(lines) => said.extend(lines),
                    Outcome::Refused(why) => {
                        execs.pop();
                        return Outcome::Refused(why);
                    }
                }
            }
            execs.pop();
            Outcome::Said(said)
        }
        name => {
            let Some(cvar) = CVARS.iter().find(|c| c.name == name) else {
                let near = closest(name, &names);
                let hint = if near.is_empty() { String::new() } else { format!(" (closest: {})", near.join(", ")) };
                return Outcome::Refused(format!("unknown: {name}{hint}"));
            };
            let Some(text) = args.first() else { return Outcome::Said(vec![describe(cvar, settings)]) };
            match text.parse::<f64>() {
                Ok(value) if value.is_finite() && (cvar.min..=cvar.max).contains(&value) => {
                    set(settings, cvar, value);
                    Outcome::Said(Vec::new())
                }
                _ => Outcome::Refused(format!("{} must be {}..={}, not {text}", cvar.name, cvar.min, cvar.max)),
            }
        }
    }
}

/// "name = value (range): what it means [the paper: name]".
fn describe(c: &Cvar, settings: &NetcodeSettings) -> String {
    let value = get(settings, c.name).map_or("?".into(), |v| format!("{v}"));
    let paper = c.paper.map_or(String::new(), |p| format!(" [Half-Life: {p}]"));
    format!("{} = {value} ({}..={}): {}{paper}", c.name, c.min, c.max, c.help)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Files(Vec<(&'static str, &'static str)>);

    impl Scripts for Files {
        fn read(&self, name: &str) -> Result<String, String> {
            self.0.iter().find(|(n, _)| *n == name).map(|(_, t)| t.to_string()).ok_or_else(|| "no such file".into())
        }
    }

    #[test]
    fn variables_set_the_one_setting_they_name_within_their_range() {
        let mut s = NetcodeSettings::default();
        let none = Files(Vec::new());
        assert_eq!(run("cl_interp 50", &mut s, &none), Outcome::Said(Vec::new()));
        assert_eq!(s.interp_ms, Some(50));
        assert_eq!(get(&s, "cl_interp"), Some(50.0));
        run("cl_interp 0", &mut s, &none);
        assert_eq!(s.interp_ms, None, "0: adaptive");
        run("pushlatency -60", &mut s, &none);
        assert_eq!(s.predict_ahead_ms, Some(60));
        run("pushlatency -1000", &mut s, &none);
        assert_eq!(s.predict_ahead_ms, None, "all of it");
        run("net_fakeloss 5", &mut s, &none);
        assert!((s.conditions.loss - 0.05).abs() < 1e-6);
        let refused = run("cl_interp 900", &mut s, &none);
        assert_eq!(refused, Outcome::Refused("cl_interp must be 0..=250, not 900".into()));
        assert!(matches!(run("cl_interp NaN", &mut s, &none), Outcome::Refused(_)));
        assert!(matches!(run(&"x".repeat(MAX_LINE_BYTES + 1), &mut s, &none), Outcome::Refused(_)));
    }

    #[test]
    fn unknown_names_get_the_closest_and_a_script_that_execs_itself_stops() {
        let mut s = NetcodeSettings::default();
        let Outcome::Refused(why) = run("cl_intrep 20", &mut s, &Files(Vec::new())) else { panic!() };
        assert!(why.starts_with("unknown: cl_intrep") && why.contains("cl_interp"), "{why}");
        let loop_files = Files(vec![("a.cfg", "cl_interp 40\nexec b.cfg"), ("b.cfg", "exec a.cfg")]);
        let Outcome::Refused(why) = run("exec a.cfg", &mut s, &loop_files) else { panic!("it must stop") };
        assert!(why.contains("runs itself") && why.contains("a.cfg → b.cfg"), "{why}");
        assert_eq!(s.interp_ms, Some(40), "what ran before the loop stands");
        let fine = Files(vec![("autoexec.cfg", "// mine\ncl_predict 0\necho ready")]);
        assert_eq!(run("exec autoexec.cfg", &mut s, &fine), Outcome::Said(vec!["ready".into()]));
        assert!(!s.prediction);
    }
}
