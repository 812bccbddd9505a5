//! The console's language, shared by the game's console, the server's
//! console on its standard input and the remote console: a line is commands
//! split by `;` (outside quotes), each a name and words (`"..."` groups
//! words); a variable's name alone says its value, with a value sets it,
//! refused outside its range with the range; `help NAME`, `find TEXT`,
//! `echo`, `exec FILE` with a depth limit (a script that execs itself stops
//! with a message); an unknown name is answered with the closest ones; Tab
//! completion of names and values. What the variables and commands are, and
//! what they do, is the host's ([`Host`]): the client's over its settings,
//! the server's over its game. Everything here is bounded (line length,
//! commands a line, script depth, lines said), because the remote console
//! and scripts feed it text from elsewhere.

/// Longest console line, bytes.
pub const MAX_LINE_BYTES: usize = 1024;
/// Deepest `exec` inside `exec`: a script that execs itself stops here.
pub const MAX_EXEC_DEPTH: usize = 8;
/// Most commands one line holds (`a; b; c`).
pub const MAX_COMMANDS_PER_LINE: usize = 32;
/// Most lines a script runs (all nested scripts together), so that no file
/// keeps the console busy.
pub const MAX_SCRIPT_LINES: usize = 4096;
/// Most lines one run says: what goes past is cut with a note.
pub const MAX_SAID_LINES: usize = 512;
/// Most candidates a completion offers.
pub const MAX_CANDIDATES: usize = 64;

/// What values a variable takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// 0 or 1.
    Switch,
    /// A number within `min..=max`; `integer`: whole numbers only.
    Number { min: f64, max: f64, integer: bool },
    /// Text of at most this many bytes.
    Text { max_bytes: usize },
}

/// A console variable: its name, the paper's (or its engines') name for the
/// same idea where it has one, what it means, its values, and whether it can
/// be changed while running.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub paper: Option<&'static str>,
    pub help: &'static str,
    pub kind: Kind,
    pub read_only: bool,
}

impl Var {
    /// A 0/1 switch.
    pub const fn switch(name: &'static str, paper: Option<&'static str>, help: &'static str) -> Self {
        Self { name, paper, help, kind: Kind::Switch, read_only: false }
    }

    /// A whole number within `min..=max`.
    pub const fn integer(
        name: &'static str,
        paper: Option<&'static str>,
        help: &'static str,
        min: f64,
        max: f64,
    ) -> Self {
        Self { name, paper, help, kind: Kind::Number { min, max, integer: true }, read_only: false }
    }

    /// A number within `min..=max`.
    pub const fn number(
        name: &'static str,
        paper: Option<&'static str>,
        help: &'static str,
        min: f64,
        max: f64,
    ) -> Self {
        Self { name, paper, help, kind: Kind::Number { min, max, integer: false }, read_only: false }
    }

    /// Text of at most `max_bytes`.
    pub const fn text(name: &'static str, paper: Option<&'static str>, help: &'static str, max_bytes: usize) -> Self {
        Self { name, paper, help, kind: Kind::Text { max_bytes }, read_only: false }
    }

    /// This variable, read-only.
    pub const fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// The range in words: "0/1", "0..=250", "text of at most 32 bytes".
    pub fn range(&self) -> String {
        match self.kind {
            Kind::Switch => "0/1".into(),
            Kind::Number { min, max, .. } => format!("{min}..={max}"),
            Kind::Text { max_bytes } => format!("text of at most {max_bytes} bytes"),
        }
    }

    /// `text` as a value of this variable, or why not.
    pub fn parse(&self, text: &str) -> Result<Value, String> {
        let refuse = || format!("{} must be {}, not {}", self.name, self.range(), shorten(text, 40));
        match self.kind {
            Kind::Switch => match text {
                "0" | "off" | "false" => Ok(Value::Number(0.0)),
                "1" | "on" | "true" => Ok(Value::Number(1.0)),
                _ => Err(refuse()),
            },
            Kind::Number { min, max, integer } => match text.parse::<f64>() {
                Ok(v) if v.is_finite() && (min..=max).contains(&v) && (!integer || v.fract() == 0.0) => {
                    Ok(Value::Number(v))
                }
                _ => Err(refuse()),
            },
            Kind::Text { max_bytes } => {
                if text.len() > max_bytes || text.chars().any(char::is_control) {
                    Err(refuse())
                } else {
                    Ok(Value::Text(text.to_string()))
                }
            }
        }
    }
}

/// A variable's value, checked against its [`Kind`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Text(String),
}

impl Value {
    /// The number (0 for text).
    pub fn number(&self) -> f64 {
        match self {
            Value::Number(v) => *v,
            Value::Text(_) => 0.0,
        }
    }

    /// A switch's value.
    pub fn on(&self) -> bool {
        self.number() >= 0.5
    }

    /// The text (empty for a number).
    pub fn text(&self) -> &str {
        match self {
            Value::Number(_) => "",
            Value::Text(t) => t,
        }
    }
}

/// A host's command: its name, how it is used, and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub help: &'static str,
}

/// The commands every console has.
pub const BUILTINS: [Command; 4] = [
    Command { name: "help", usage: "help [NAME]", help: "what a command or variable does; alone, every name" },
    Command { name: "find", usage: "find TEXT", help: "the variables and commands whose name or help has TEXT" },
    Command { name: "echo", usage: "echo TEXT", help: "says TEXT" },
    Command { name: "exec", usage: "exec FILE", help: "runs each line of a script" },
];

/// What a line did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Lines to print.
    Said(Vec<String>),
    /// A refusal, in words.
    Refused(String),
}

impl Outcome {
    /// Everything to print, the refusal included.
    pub fn lines(self) -> Vec<String> {
        match self {
            Outcome::Said(lines) => lines,
            Outcome::Refused(why) => vec![why],
        }
    }
}

/// What the console runs over: its variables and commands, and its scripts.
pub trait Host {
    /// The variables.
    fn vars(&self) -> &[Var];
    /// The commands besides [`BUILTINS`].
    fn commands(&self) -> &[Command];
    /// A variable's value, as the console shows it.
    fn get(&self, name: &str) -> Option<String>;
    /// Sets a variable to a value already checked against its kind; the
    /// host may still refuse (a value that cannot be taken now).
    fn set(&mut self, var: &Var, value: Value) -> Result<(), String>;
    /// Runs one of [`Host::commands`] with its words.
    fn command(&mut self, name: &str, args: &[String]) -> Outcome;
    /// A script's text, for `exec`.
    fn script(&self, name: &str) -> Result<String, String>;
    /// Values worth offering after a command's name (players to kick, maps,
    /// keys to bind), for completion.
    fn values(&self, _command: &str) -> Vec<String> {
        Vec::new()
    }
}

/// Runs one console line on `host`.
pub fn run(line: &str, host: &mut dyn Host) -> Outcome {
    let mut budget = Budget { script_lines: 0, execs: Vec::new() };
    let mut outcome = run_line(line, host, &mut budget);
    if let Outcome::Said(lines) = &mut outcome
        && lines.len() > MAX_SAID_LINES
    {
        let cut = lines.len() - MAX_SAID_LINES;
        lines.truncate(MAX_SAID_LINES);
        lines.push(format!("({cut} more lines cut)"));
    }
    outcome
}

/// What a run has spent: script lines, and the scripts it is inside.
struct Budget {
    script_lines: usize,
    execs: Vec<String>,
}

fn run_line(line: &str, host: &mut dyn Host, budget: &mut Budget) -> Outcome {
    if line.len() > MAX_LINE_BYTES {
        return Outcome::Refused(format!("a line of {} bytes (at most {MAX_LINE_BYTES})", line.len()));
    }
    let commands = split_commands(line);
    if commands.len() > MAX_COMMANDS_PER_LINE {
        return Outcome::Refused(format!("{} commands on a line (at most {MAX_COMMANDS_PER_LINE})", commands.len()));
    }
    let mut said = Vec::new();
    for command in commands {
        let words = split_words(command);
        match run_words(&words, host, budget) {
            Outcome::Said(lines) => said.extend(lines),
            Outcome::Refused(why) => {
                // What ran before stands; what the refusal stops is said.
                if said.is_empty() {
                    return Outcome::Refused(why);
                }
                said.push(why);
                return Outcome::Refused(said.join("\n"));
            }
        }
    }
    Outcome::Said(said)
}

fn run_words(words: &[String], host: &mut dyn Host, budget: &mut Budget) -> Outcome {
    let Some((command, args)) = words.split_first() else { return Outcome::Said(Vec::new()) };
    match command.as_str() {
        "help" => Outcome::Said(match args.first() {
            Some(name) => match describe(host, name) {
                Some(line) => vec![line],
                None => return unknown(host, name),
            },
            None => vec![format!("commands and variables: {}", names(host).join(", "))],
        }),
        "find" => {
            let text = args.join(" ").to_lowercase();
            let found: Vec<String> = names(host)
                .into_iter()
                .filter(|name| {
                    name.contains(&text) || describe(host, name).is_some_and(|d| d.to_lowercase().contains(&text))
                })
                .filter_map(|name| describe(host, &name))
                .collect();
            Outcome::Said(if found.is_empty() {
                vec![format!("nothing about \"{}\"", shorten(&text, 40))]
            } else {
                found
            })
        }
        "echo" => Outcome::Said(vec![args.join(" ")]),
        "exec" => exec(args, host, budget),
        name => {
            if let Some(var) = host.vars().iter().find(|v| v.name == name).copied() {
                let Some(text) = args.first() else {
                    return Outcome::Said(vec![describe(host, name).unwrap_or_default()]);
                };
                if var.read_only {
                    return Outcome::Refused(format!("{name} is read-only while running"));
                }
                // Text takes every word; a number the first.
                let text = if matches!(var.kind, Kind::Text { .. }) { args.join(" ") } else { text.clone() };
                return match var.parse(&text).and_then(|value| host.set(&var, value)) {
                    Ok(()) => Outcome::Said(Vec::new()),
                    Err(why) => Outcome::Refused(why),
                };
            }
            if host.commands().iter().any(|c| c.name == name) {
                return host.command(name, args);
            }
            unknown(host, name)
        }
    }
}

fn exec(args: &[String], host: &mut dyn Host, budget: &mut Budget) -> Outcome {
    let Some(name) = args.first() else { return Outcome::Refused("exec FILE".into()) };
    if budget.execs.iter().any(|e| e == name) {
        return Outcome::Refused(format!(
            "exec {name}: stopped, it runs itself (through {} → {name})",
            budget.execs.join(" → ")
        ));
    }
    if budget.execs.len() >= MAX_EXEC_DEPTH {
        return Outcome::Refused(format!("exec {name}: stopped, scripts nest deeper than {MAX_EXEC_DEPTH}"));
    }
    let text = match host.script(name) {
        Ok(text) => text,
        Err(e) => return Outcome::Refused(format!("exec {name}: {e}")),
    };
    budget.execs.push(name.clone());
    let mut said = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("//")) {
        budget.script_lines += 1;
        if budget.script_lines > MAX_SCRIPT_LINES {
            budget.execs.pop();
            return Outcome::Refused(format!("exec {name}: stopped after {MAX_SCRIPT_LINES} lines"));
        }
        match run_line(line, host, budget) {
            Outcome::Said(lines) => said.extend(lines),
            Outcome::Refused(why) => {
                budget.execs.pop();
                return Outcome::Refused(why);
            }
        }
    }
    budget.execs.pop();
    Outcome::Said(said)
}

fn unknown(host: &dyn Host, name: &str) -> Outcome {
    let all = names(host);
    let near = closest(name, &all);
    let hint = if near.is_empty() { String::new() } else { format!(" (closest: {})", near.join(", ")) };
    Outcome::Refused(format!("unknown: {}{hint}", shorten(name, 40)))
}

/// Every name the host answers to: variables, its commands, the builtins.
pub fn names(host: &dyn Host) -> Vec<String> {
    host.vars()
        .iter()
        .map(|v| v.name)
        .chain(host.commands().iter().map(|c| c.name))
        .chain(BUILTINS.iter().map(|c| c.name))
        .map(str::to_string)
        .collect()
}

/// "name = value (range): what it means [Half-Life: name]" for a variable,
/// "usage: what it does" for a command.
pub fn describe(host: &dyn Host, name: &str) -> Option<String> {
    if let Some(v) = host.vars().iter().find(|v| v.name == name) {
        let value = host.get(name).unwrap_or_else(|| "?".into());
        let paper = v.paper.map_or(String::new(), |p| format!(" [Half-Life: {p}]"));
        let ro = if v.read_only { ", read-only" } else { "" };
        return Some(format!("{} = {value} ({}{ro}): {}{paper}", v.name, v.range(), v.help));
    }
    host.commands().iter().chain(BUILTINS.iter()).find(|c| c.name == name).map(|c| format!("{}: {}", c.usage, c.help))
}

/// The names closest to `wanted` (at most three, within a few edits).
pub fn closest(wanted: &str, names: &[String]) -> Vec<String> {
    if wanted.len() > 64 {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .map(|n| (edit_distance(wanted, n).min(if n.contains(wanted) { 1 } else { usize::MAX }), n))
        .filter(|(d, _)| *d <= 3)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n.clone()).collect()
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

/// `line`'s commands: split at `;` outside quotes.
pub fn split_commands(line: &str) -> Vec<&str> {
    let mut commands = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => {
                commands.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    commands.push(&line[start..]);
    commands.into_iter().filter(|c| !c.trim().is_empty()).collect()
}

/// `word` as one word of a console line, [`split_words`] giving it back
/// whole: as it is when nothing in it means anything to the language, in
/// quotes when it is empty or holds white space or `;`. `None` when it holds
/// a `"`: the language has no escape, and no such word can be written (no
/// player's name holds one: `names::clean_name`).
pub fn quote_word(word: &str) -> Option<String> {
    if word.contains('"') {
        return None;
    }
    let plain = !word.is_empty() && !word.contains(|c: char| c.is_whitespace() || c == ';');
    Some(if plain { word.to_string() } else { format!("\"{word}\"") })
}

/// Words given one by one (`arena rcon ADDR kick "Bob Smith"`, the game's
/// `rcon` after its own line was split) as one console line whose words
/// are those: each one quoted as it needs ([`quote_word`]), so a name with
/// a `;` in it stays a name; a word that is `;` alone still separates
/// commands. Refused (naming the word) when a word holds a `"`.
pub fn join_words<S: AsRef<str>>(words: &[S]) -> Result<String, String> {
    let mut line = String::new();
    for word in words {
        let word = word.as_ref();
        let written = if word == ";" {
            ";".to_string()
        } else {
            quote_word(word)
                .ok_or_else(|| format!("the word {word:?} holds a \" (the console has no way to write one)"))?
        };
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&written);
    }
    Ok(line)
}

/// A command's words: split at white space, `"..."` one word (quotes out).
pub fn split_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// What Tab offers: the candidates, and the byte in the line from which the
/// one chosen replaces the text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub from: usize,
    pub candidates: Vec<String>,
}

impl Completion {
    /// The line with the candidates' common start in place (with a space
    /// after it if it is the only one).
    pub fn apply(&self, line: &str) -> String {
        let Some(first) = self.candidates.first() else { return line.to_string() };
        let mut common = first.clone();
        for c in &self.candidates[1..] {
            let len = common.chars().zip(c.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a.len_utf8()).sum();
            common.truncate(len);
        }
        let head = line.get(..self.from).unwrap_or(line);
        let tail = if self.candidates.len() == 1 { " " } else { "" };
        let typed = line.get(self.from..).unwrap_or("");
        if common.len() < typed.len() {
            return line.to_string();
        }
        let quoted = if common.contains([' ', ';']) { format!("\"{common}\"") } else { common };
        format!("{head}{quoted}{tail}")
    }
}

/// Completions of the word being typed at the end of `line`: a name for
/// the first word of a command; after a variable, its values (0 and 1, its
/// range's ends and its value); after a command, what the host offers.
pub fn complete(line: &str, host: &dyn Host) -> Completion {
    if line.len() > MAX_LINE_BYTES {
        return Completion::default();
    }
    let command_start = line.rfind(';').map_or(0, |i| i + 1);
    let command = &line[command_start..];
    let words = split_words(command);
    let ends_in_space = command.ends_with(char::is_whitespace);
    let (typed, index) = match (words.last(), ends_in_space) {
        (Some(last), false) => (last.clone(), words.len() - 1),
        _ => (String::new(), words.len()),
    };
    let from = command_start + if ends_in_space { command.len() } else { last_word_start(command) };
    let offered: Vec<String> = if index == 0 {
        names(host)
    } else if index == 1 {
        let name = words[0].as_str();
        match host.vars().iter().find(|v| v.name == name) {
            Some(v) => match v.kind {
                Kind::Switch => vec!["0".into(), "1".into()],
                Kind::Number { min, max, .. } => {
                    let mut values = vec![format!("{min}"), format!("{max}")];
                    values.extend(host.get(name));
                    values.dedup();
                    values
                }
                Kind::Text { .. } => host.get(name).into_iter().collect(),
            },
            None if name == "help" => names(host),
            None => host.values(name),
        }
    } else {
        Vec::new()
    };
    let mut candidates: Vec<String> = offered.into_iter().filter(|c| c.starts_with(&typed)).collect();
    candidates.sort();
    candidates.dedup();
    candidates.truncate(MAX_CANDIDATES);
    Completion { from: from.min(line.len()), candidates }
}

/// Where the last word of `command` starts (its opening quote if quoted).
fn last_word_start(command: &str) -> usize {
    let mut start = 0;
    let mut quoted = false;
    let mut in_word = false;
    for (i, c) in command.char_indices() {
        if c == '"' {
            if !in_word {
                start = i;
                in_word = true;
            }
            quoted = !quoted;
        } else if c.is_whitespace() && !quoted {
            in_word = false;
        } else if !in_word {
            start = i;
            in_word = true;
        }
    }
    start
}

/// At most `max` characters of `text`, with "…" if cut (for echoing what
/// someone typed back into a message).
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host with a few variables of each kind, a command, and scripts.
    #[derive(Default)]
    struct Test {
        interp: f64,
        predict: bool,
        name: String,
        kicked: Vec<String>,
        scripts: Vec<(&'static str, &'static str)>,
    }

    const VARS: [Var; 4] = [
        Var::integer("cl_interp", Some("ex_interp"), "interpolation delay, ms (0: adaptive)", 0.0, 250.0),
        Var::switch("cl_predict", Some("cl_predict"), "client-side prediction"),
        Var::text("name", Some("name"), "your name", 16),
        Var::integer("sv_tickrate", None, "ticks a second", 10.0, 128.0).read_only(),
    ];
    const COMMANDS: [Command; 1] = [Command { name: "kick", usage: "kick NAME", help: "removes a player" }];

    impl Host for Test {
        fn vars(&self) -> &[Var] {
            &VARS
        }
        fn commands(&self) -> &[Command] {
            &COMMANDS
        }
        fn get(&self, name: &str) -> Option<String> {
            Some(match name {
                "cl_interp" => format!("{}", self.interp),
                "cl_predict" => format!("{}", u8::from(self.predict)),
                "name" => self.name.clone(),
                "sv_tickrate" => "64".into(),
                _ => return None,
            })
        }
        fn set(&mut self, var: &Var, value: Value) -> Result<(), String> {
            match var.name {
                "cl_interp" => self.interp = value.number(),
                "cl_predict" => self.predict = value.on(),
                "name" => self.name = value.text().to_string(),
                _ => return Err("no".into()),
            }
            Ok(())
        }
        fn command(&mut self, _name: &str, args: &[String]) -> Outcome {
            self.kicked.push(args.join(" "));
            Outcome::Said(vec![format!("kicked {}", args.join(" "))])
        }
        fn script(&self, name: &str) -> Result<String, String> {
            self.scripts
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string())
                .ok_or_else(|| "no such file".into())
        }
        fn values(&self, command: &str) -> Vec<String> {
            if command == "kick" { vec!["Ada".into(), "Bob Smith".into()] } else { Vec::new() }
        }
    }

    /// Issue 60's finding 2: words forwarded one by one (`arena rcon`, the
    /// game's `rcon`) are quoted, so a name with `;` in it kicks that name
    /// and runs nothing else; a lone `;` still separates commands.
    #[test]
    fn joined_words_come_back_as_the_same_words() {
        let mut h = Test::default();
        let line = join_words(&["kick", "#0;cl_predict 1"]).unwrap();
        run(&line, &mut h);
        assert_eq!(h.kicked, ["#0;cl_predict 1"]);
        assert!(!h.predict, "the name ran a command");
        let mut h = Test::default();
        run(&join_words(&["kick", "Ada", ";", "cl_predict", "1"]).unwrap(), &mut h);
        assert_eq!((h.kicked.as_slice(), h.predict), (&["Ada".to_string()][..], true));
        assert!(join_words(&["kick", "a\"b"]).is_err());
        for words in [vec!["", "x"], vec!["a b", ";;", "c\td"], vec!["日本 語", "#1"]] {
            let line = join_words(&words).unwrap();
            assert_eq!(split_commands(&line), [line.as_str()], "{words:?}");
            assert_eq!(split_words(&line), words, "{line}");
        }
    }

    #[test]
    fn variables_are_set_within_their_range_and_refused_outside_it() {
        let mut h = Test::default();
        assert_eq!(run("cl_interp 50", &mut h), Outcome::Said(Vec::new()));
        assert_eq!(h.interp, 50.0);
        assert_eq!(
            run("cl_interp", &mut h),
            Outcome::Said(vec![
                "cl_interp = 50 (0..=250): interpolation delay, ms (0: adaptive) [Half-Life: ex_interp]".into()
            ])
        );
        assert_eq!(run("cl_interp 900", &mut h), Outcome::Refused("cl_interp must be 0..=250, not 900".into()));
        assert!(matches!(run("cl_interp NaN", &mut h), Outcome::Refused(_)));
        assert!(matches!(run("cl_interp 2.5", &mut h), Outcome::Refused(_)), "whole numbers");
        assert!(matches!(run("cl_predict 2", &mut h), Outcome::Refused(_)));
        assert_eq!(run("cl_predict on; name \"Ada Lovelace\"", &mut h), Outcome::Said(Vec::new()));
        assert!(h.predict);
        assert_eq!(h.name, "Ada Lovelace");
        assert!(matches!(run("name a_name_far_too_long_for_it", &mut h), Outcome::Refused(_)));
        assert_eq!(run("sv_tickrate 20", &mut h), Outcome::Refused("sv_tickrate is read-only while running".into()));
        assert!(matches!(run(&"x".repeat(MAX_LINE_BYTES + 1), &mut h), Outcome::Refused(_)));
        assert!(matches!(run(&"echo;".repeat(MAX_COMMANDS_PER_LINE + 1), &mut h), Outcome::Refused(_)));
        assert_eq!(run("kick \"Bob Smith\"", &mut h), Outcome::Said(vec!["kicked Bob Smith".into()]));
    }

    #[test]
    fn unknown_names_get_the_closest_and_a_script_that_execs_itself_stops() {
        let mut h = Test {
            scripts: vec![
                ("a.cfg", "cl_interp 40\nexec b.cfg"),
                ("b.cfg", "exec a.cfg"),
                ("ok.cfg", "// mine\ncl_predict 1\necho ready"),
            ],
            ..Test::default()
        };
        let Outcome::Refused(why) = run("cl_intrep 20", &mut h) else { panic!() };
        assert!(why.starts_with("unknown: cl_intrep") && why.contains("cl_interp"), "{why}");
        let Outcome::Refused(why) = run("exec a.cfg", &mut h) else { panic!("it must stop") };
        assert_eq!(why, "exec a.cfg: stopped, it runs itself (through a.cfg → b.cfg → a.cfg)");
        assert_eq!(h.interp, 40.0, "what ran before the loop stands");
        assert_eq!(run("exec ok.cfg", &mut h), Outcome::Said(vec!["ready".into()]));
        assert!(h.predict);
        let Outcome::Said(found) = run("find interpolation", &mut h) else { panic!() };
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("cl_interp = 40"));
    }

    #[test]
    fn tab_completes_names_values_and_what_the_host_offers() {
        let h = Test { interp: 50.0, ..Test::default() };
        let c = complete("cl_", &h);
        assert_eq!(c.candidates, vec!["cl_interp", "cl_predict"]);
        assert_eq!(c.apply("cl_"), "cl_");
        let c = complete("cl_i", &h);
        assert_eq!(c.apply("cl_i"), "cl_interp ");
        assert_eq!(complete("cl_interp ", &h).candidates, vec!["0", "250", "50"]);
        assert_eq!(complete("cl_predict ", &h).candidates, vec!["0", "1"]);
        let c = complete("echo x; kick B", &h);
        assert_eq!(c.candidates, vec!["Bob Smith"]);
        assert_eq!(c.apply("echo x; kick B"), "echo x; kick \"Bob Smith\" ");
        assert_eq!(complete("help sv", &h).candidates, vec!["sv_tickrate"]);
        assert!(complete(&"x".repeat(MAX_LINE_BYTES + 1), &h).candidates.is_empty());
    }
}
