//! The client's netcode variables in the paper's words (`cl_predict`,
//! `cl_interp`, `pushlatency`, `net_fakelag`, ...), each a view onto the one
//! field of [`NetcodeSettings`] it names: the netcode panel, the flags and
//! the console read and write the same values. The console's language
//! (ranges, `exec`, completion) is `arena_protocol::console`; the game's
//! console window adds the view's own variables and commands on top.

use arena_protocol::console::{self, Command, Host, Outcome, Value, Var};

use crate::conditioner::LinkConditions;
use crate::settings::NetcodeSettings;

/// The netcode variables, each over one field of [`NetcodeSettings`].
pub const VARS: [Var; 13] = [
    Var::switch("cl_predict", Some("cl_predict"), "client-side prediction of your own movement and shots"),
    Var::switch("cl_reconcile", None, "replay the commands the server has not seen on each snapshot"),
    Var::switch("cl_interpolate", None, "draw the other players between snapshots, a little in the past"),
    Var::integer(
        "cl_interp",
        Some("ex_interp"),
        "interpolation delay, ms (0: adaptive)",
        0.0,
        arena_protocol::MAX_INTERP_MS as f64,
    ),
    Var::switch("cl_lagcompensation", Some("cl_lc"), "ask the server to rewind the others to what you saw"),
    Var::integer(
        "pushlatency",
        Some("pushlatency"),
        "predict at most -N ms ahead of what the server acknowledged (-1000: all of it)",
        -1000.0,
        0.0,
    ),
    Var::switch(
        "cl_showhitboxes",
        None,
        "draw each shot's target where you saw it (red) and the server tested it (blue)",
    ),
    Var::integer(
        "cl_updaterate",
        Some("cl_updaterate"),
        "snapshots a second to ask the server for (0: all it sends)",
        0.0,
        255.0,
    ),
    Var::integer(
        "cl_cmdrate",
        Some("cl_cmdrate"),
        "command packets a second at most (0: one a tick, else 10..=1000)",
        0.0,
        1000.0,
    ),
    Var::integer(
        "rate",
        Some("rate"),
        "snapshot bytes a second you can take (0: no limit, else 2000..=1000000)",
        0.0,
        *arena_protocol::RATE_RANGE.end() as f64,
    ),
    Var::integer("net_fakelag", None, "added round trip, ms", 0.0, LinkConditions::MAX_MS as f64),
    Var::integer("net_fakejitter", None, "jitter each way, ± ms", 0.0, LinkConditions::MAX_MS as f64),
    Var::number("net_fakeloss", None, "loss each way, percent", 0.0, 100.0),
];

/// The fewest command packets a second `cl_cmdrate` takes (as Half-Life's):
/// below it the commands held between packets would outgrow the window.
pub const MIN_CMD_RATE: u16 = 10;

/// The value of netcode variable `name` in `settings`, as the console shows it.
pub fn get(settings: &NetcodeSettings, name: &str) -> Option<String> {
    let b = |on: bool| u8::from(on).to_string();
    Some(match name {
        "cl_predict" => b(settings.prediction),
        "cl_reconcile" => b(settings.reconciliation),
        "cl_interpolate" => b(settings.interpolation),
        "cl_interp" => settings.interp_ms.unwrap_or(0).to_string(),
        "cl_lagcompensation" => b(settings.lag_compensation),
        "pushlatency" => settings.predict_ahead_ms.map_or(-1000, |ms| -i64::from(ms)).to_string(),
        "cl_showhitboxes" => b(settings.show_hitboxes),
        "cl_updaterate" => settings.update_rate.to_string(),
        "cl_cmdrate" => settings.cmd_rate.to_string(),
        "rate" => settings.rate.to_string(),
        "net_fakelag" => format!("{}", settings.conditions.latency_ms.round()),
        "net_fakejitter" => format!("{}", settings.conditions.jitter_ms.round()),
        "net_fakeloss" => format!("{}", (f64::from(settings.conditions.loss) * 1000.0).round() / 10.0),
        _ => return None,
    })
}

/// Sets netcode variable `var` to `value` (checked against its range by the
/// console); `Ok(false)` if `var` is no netcode variable, a refusal for a
/// value its range's gaps leave out (`rate 500`).
pub fn set(settings: &mut NetcodeSettings, var: &Var, value: &Value) -> Result<bool, String> {
    let on = value.on();
    let v = value.number();
    match var.name {
        "cl_updaterate" => settings.update_rate = v as u8,
        "cl_cmdrate" => {
            let rate = v as u16;
            if rate != 0 && rate < MIN_CMD_RATE {
                return Err(format!("cl_cmdrate must be 0 (a packet a tick) or {MIN_CMD_RATE}..=1000, not {rate}"));
            }
            settings.cmd_rate = rate;
        }
        "rate" => {
            let rate = v as u32;
            if rate != 0 && !arena_protocol::RATE_RANGE.contains(&rate) {
                let (low, high) = (arena_protocol::RATE_RANGE.start(), arena_protocol::RATE_RANGE.end());
                return Err(format!("rate must be 0 (no limit) or {low}..={high}, not {rate}"));
            }
            settings.rate = rate;
        }
        "cl_predict" => settings.prediction = on,
        "cl_reconcile" => settings.reconciliation = on,
        "cl_interpolate" => settings.interpolation = on,
        "cl_interp" => settings.interp_ms = (v >= 1.0).then_some(v as u16),
        "cl_lagcompensation" => settings.lag_compensation = on,
        // Ahead of the round trip is all of it: -1000 is full prediction.
        "pushlatency" => settings.predict_ahead_ms = (v > -1000.0).then_some((-v) as u32),
        "cl_showhitboxes" => settings.show_hitboxes = on,
        "net_fakelag" => settings.conditions.latency_ms = v as f32,
        "net_fakejitter" => settings.conditions.jitter_ms = v as f32,
        "net_fakeloss" => settings.conditions.loss = (v / 100.0) as f32,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Reads a script for `exec` (bounded): the game's console reads files in
/// the configuration directory, tests and the fuzzer hand in text.
pub trait Scripts {
    fn read(&self, name: &str) -> Result<String, String>;
}

/// The netcode variables alone, as a console host (tests, the fuzzer).
struct Netcode<'a> {
    settings: &'a mut NetcodeSettings,
    scripts: &'a dyn Scripts,
}

impl Host for Netcode<'_> {
    fn vars(&self) -> &[Var] {
        &VARS
    }
    fn commands(&self) -> &[Command] {
        &[]
    }
    fn get(&self, name: &str) -> Option<String> {
        get(self.settings, name)
    }
    fn set(&mut self, var: &Var, value: Value) -> Result<(), String> {
        set(self.settings, var, &value).map(|_| ())
    }
    fn command(&mut self, name: &str, _args: &[String]) -> Outcome {
        Outcome::Refused(format!("unknown: {name}"))
    }
    fn script(&self, name: &str) -> Result<String, String> {
        self.scripts.read(name)
    }
}

/// Runs one console line over the netcode variables alone.
pub fn run(line: &str, settings: &mut NetcodeSettings, scripts: &dyn Scripts) -> Outcome {
    console::run(line, &mut Netcode { settings, scripts })
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
        assert_eq!(get(&s, "cl_interp").as_deref(), Some("50"));
        run("cl_interp 0", &mut s, &none);
        assert_eq!(s.interp_ms, None, "0: adaptive");
        run("pushlatency -60", &mut s, &none);
        assert_eq!(s.predict_ahead_ms, Some(60));
        assert_eq!(get(&s, "pushlatency").as_deref(), Some("-60"));
        run("pushlatency -1000", &mut s, &none);
        assert_eq!(s.predict_ahead_ms, None, "all of it");
        run("net_fakeloss 5", &mut s, &none);
        assert!((s.conditions.loss - 0.05).abs() < 1e-6);
        assert_eq!(get(&s, "net_fakeloss").as_deref(), Some("5"));
        let refused = run("cl_interp 900", &mut s, &none);
        assert_eq!(refused, Outcome::Refused("cl_interp must be 0..=250, not 900".into()));
        assert!(matches!(run("cl_interp NaN", &mut s, &none), Outcome::Refused(_)));
        assert!(matches!(run(&"x".repeat(console::MAX_LINE_BYTES + 1), &mut s, &none), Outcome::Refused(_)));
        run("cl_predict 0; cl_showhitboxes 1", &mut s, &none);
        assert!(!s.prediction && s.show_hitboxes);
        run("cl_updaterate 20; cl_cmdrate 30; rate 25000", &mut s, &none);
        assert_eq!((s.update_rate, s.cmd_rate, s.rate), (20, 30, 25_000));
        let refused = run("rate 500", &mut s, &none);
        assert_eq!(refused, Outcome::Refused("rate must be 0 (no limit) or 2000..=1000000, not 500".into()));
        assert_eq!(s.rate, 25_000);
    }

    #[test]
    fn a_script_that_execs_itself_stops() {
        let mut s = NetcodeSettings::default();
        let loop_files = Files(vec![("a.cfg", "cl_interp 40\nexec b.cfg"), ("b.cfg", "exec a.cfg")]);
        let Outcome::Refused(why) = run("exec a.cfg", &mut s, &loop_files) else { panic!("it must stop") };
        assert!(why.contains("runs itself") && why.contains("a.cfg → b.cfg"), "{why}");
        assert_eq!(s.interp_ms, Some(40), "what ran before the loop stands");
    }
}
