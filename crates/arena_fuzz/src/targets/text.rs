//! Fuzz targets of text people type: player names (cleaned, made unique,
//! look-alikes refused), an admin's server config file, and a browser
//! link's ending (anyone's link).

use arena_protocol::names::{
    MAX_NAME_CHARS, USER_DATA_BYTES, clean_name, is_invisible, name_from_user_data, refuse_name, unique_name,
};

use crate::target::Target;

pub struct ConfigFile;

impl Target for ConfigFile {
    fn name(&self) -> &'static str {
        "config_file"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "(name: \"Friday\", bind: \"0.0.0.0:27015\", public_addr: [\"203.0.113.7:27015\"], bots: 4, tick: 64)",
            "(no_subtick: true, max_unlag_ms: 300, password_file: \"/run/secrets/arena\", time_limit_min: 12.5)",
            "(tickrate: 128)",
            "((((((((((((((((((((",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        // The reader refuses more than this before parsing.
        let input = &input[..input.len().min(arena_server::MAX_CONFIG_FILE_BYTES as usize)];
        let _ = arena_server::check_config_file(&String::from_utf8_lossy(input));
    }
}

/// A browser link's fragment (`arena_client::page_link`): a start or a
/// sentence, the sentence printable ASCII and short, never a panic.
pub struct PageLinks;

impl Target for PageLinks {
    fn name(&self) -> &'static str {
        "page_links"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "#play",
            "#range&bots=4",
            "",
            "#play&bots=13",
            "#pl\u{202e}ay\n<b>",
            "#range&bots=1&bots=2",
            "#join=192.168.1.20:27961&cert=abababababababababababababababababababababababababababababababab",
            "#join=[::1]:27961&cert=00",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_client::page_link::{PageLink, parse};
        const MAX_BOTS: usize = 12;
        match parse(&String::from_utf8_lossy(input), MAX_BOTS) {
            Ok(PageLink::Menu) => {}
            Ok(PageLink::Play { bots } | PageLink::Range { bots }) => assert!(bots.is_none_or(|n| n <= MAX_BOTS)),
            // A join link's address is an IP address with a port (no name to look up).
            Ok(PageLink::Join(link)) => assert!(link.addr.port() != 0),
            Err(e) => {
                let said = e.to_string();
                assert!(said.is_ascii() && !said.chars().any(|c| c.is_control()), "{said:?}");
                assert!(said.len() < 400, "{} characters", said.len());
            }
        }
    }
}

pub struct Names;

impl Target for Names {
    fn name(&self) -> &'static str {
        "names"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        ["Ada", "Аda", "Bob (bot)", "\u{202E}evil", "Z\u{0300}\u{0301}\u{0302}", "Ian"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        let name = clean_name(&text);
        assert!(!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS);
        assert!(!name.chars().any(is_invisible), "{name:?}");
        assert_eq!(clean_name(&name), name, "cleaning is idempotent");
        let taken = ["Ada", "Bob", "Player", "Ian 2"];
        let _ = refuse_name(&name, taken.iter().copied());
        let unique = unique_name(&name, taken.iter().copied());
        assert!(unique.chars().count() <= MAX_NAME_CHARS);
        assert!(!taken.iter().any(|t| t.to_lowercase() == unique.to_lowercase()), "{unique}");
        let mut data = [0u8; USER_DATA_BYTES];
        let n = input.len().min(USER_DATA_BYTES);
        data[..n].copy_from_slice(&input[..n]);
        let from_data = name_from_user_data(&data);
        assert_eq!(clean_name(&from_data), from_data);
        // The join flags: whatever the bytes, a name and a choice come back whole.
        let spectate = arena_protocol::names::spectate_from_user_data(&data);
        let again = arena_protocol::names::join_user_data(&from_data, spectate);
        assert_eq!(arena_protocol::names::spectate_from_user_data(&again), spectate);
        assert_eq!(name_from_user_data(&again), from_data);
    }
}

/// Console lines and scripts (`arena_protocol::console` over `arena_client::console`'s variables): whatever the text,
/// a line is said or refused, never a panic; every variable stays within
/// its range; a script that execs itself stops.
pub struct ConsoleLines;

/// Scripts for `exec`: one runs the input again (a loop), the other is the input.
struct LoopingScripts(String);

impl arena_client::console::Scripts for LoopingScripts {
    fn read(&self, name: &str) -> Result<String, String> {
        match name {
            "self.cfg" => Ok(format!("{}\nexec self.cfg", self.0)),
            "input.cfg" => Ok(self.0.clone()),
            _ => Err("no such file".into()),
        }
    }
}

impl Target for ConsoleLines {
    fn name(&self) -> &'static str {
        "console_lines"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        ["cl_interp 50", "pushlatency -60", "net_fakeloss 5\nexec self.cfg", "find interp", "cl_intrep 1e309"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_client::console::{VARS, get, run};
        use arena_protocol::console::Kind;
        let text = String::from_utf8_lossy(input).into_owned();
        let scripts = LoopingScripts(text.clone());
        let mut settings = arena_client::NetcodeSettings::default();
        for line in text.lines().take(8) {
            let _ = run(line, &mut settings, &scripts);
        }
        let _ = run("exec self.cfg", &mut settings, &scripts);
        let _ = run("exec input.cfg", &mut settings, &scripts);
        for var in VARS {
            let value = get(&settings, var.name).expect("every variable reads");
            let value: f64 = value.parse().expect("a number");
            let (min, max) = match var.kind {
                Kind::Number { min, max, .. } => (min, max),
                _ => (0.0, 1.0),
            };
            assert!((min..=max).contains(&value), "{} = {value}", var.name);
        }
    }
}

/// Map files (RON) as `arena map check` reads them: parsed within the size cap, then every number and count checked
/// before anything is built (absurd sizes, NaN, 10^6 blocks: refused in
/// words, never a panic, nothing allocated past the cap).
pub struct MapFiles;

impl Target for MapFiles {
    fn name(&self) -> &'static str {
        "map_files"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            arena_sim::map::FOUNDRY_RON,
            arena_sim::map::YARD_RON,
            "(name: \"I\", blocks: [(kind: Floor, center: (0.0, -0.5, 0.0), size: (9.0, 1.0, 9.0))], spawns: [(pos: (0.0, 0.0, 0.0), yaw_deg: 0.0)], items: [(kind: Rocketlauncher, pos: (1.0, 0.0, 1.0)), (kind: QuadDamage, pos: (NaN, 0.0, 1.0))], jump_pads: [(center: (0.0, 0.1, 0.0), size: (2.0, 0.2, 2.0), launch: (NaN, inf, -1e30))], teleporters: [(center: (3.0, 1.0, 0.0), size: (1.0, 2.0, 1.0), dest: (-3.0, 0.0, 0.0), yaw_deg: 0.0, exit_speed_mps: Some(-5.0)), (center: (-3.0, 1.0, 0.0), size: (1.0, 2.0, 1.0), dest: (3.0, 0.0, 0.0), yaw_deg: 90.0)])",
            "(name: \"A\", blocks: [(kind: Floor, center: (0.0, -0.5, 0.0), size: (NaN, 1.0, 1e30))], spawns: [])",
            "(name: \"B\", blocks: [], stairs: [(bottom: (0.0, 0.0, 0.0), top: (0.0, 3.0, -5.0), width: 3.0, steps: 4294967295)], spawns: [(pos: (0.0, 0.0, 0.0), yaw_deg: inf)])",
            "(name: \"\", blocks: [], spawns: [], areas: [(name: \"\u{202E}x\", min: (1.0, 1.0), max: (0.0, 0.0), color: (2.0, -1.0, 0.5))])",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use arena_sim::map_check::{MAX_MAP_BYTES, check_numbers};
        let text = String::from_utf8_lossy(&input[..input.len().min(MAX_MAP_BYTES)]);
        if let Ok(map) = ron::from_str::<arena_sim::MapDef>(&text) {
            let errors = check_numbers(&map);
            // What passes is what a world may be built from: finite, in bounds.
            if errors.is_empty() {
                assert!(map.blocks.iter().all(|b| b.center.is_finite() && b.size.min_element() > 0.0));
                assert!(!map.spawns.is_empty());
                assert!(map.items.iter().all(|i| i.pos.is_finite()));
                assert!(map.jump_pads.iter().all(|p| p.launch.is_finite() && p.launch.y > 0.0));
                // No teleporter sends anyone into an entry: no chain, no loop.
                assert!(
                    map.teleporters
                        .iter()
                        .all(|t| map.teleporter_at(t.dest, arena_sim::player::STAND_HEIGHT_M).is_none())
                );
            }
        }
    }
}
