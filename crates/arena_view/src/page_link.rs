//! A browser link's fragment (`arena_client::page_link`) into the game's
//! start: quick play or the range as the menu's buttons start them, or the
//! main menu, saying what was wrong with a fragment it could not read.

use arena_client::page_link::{PageLink, parse};

use crate::menu::{MAX_MENU_BOTS, quick_play_config, range_config};
use crate::vocabulary::StartAction;

/// What `fragment` starts, and the sentence for one not understood.
pub(crate) fn start(fragment: &str) -> (StartAction, Option<String>) {
    let (mut config, bots) = match parse(fragment, MAX_MENU_BOTS) {
        Ok(PageLink::Menu) => return (StartAction::Menu, None),
        Ok(PageLink::Play { bots }) => (quick_play_config(), bots),
        Ok(PageLink::Range { bots }) => (range_config(), bots),
        Err(e) => return (StartAction::Menu, Some(e.to_string())),
    };
    if let Some(bots) = bots {
        config.bots = bots;
    }
    (StartAction::QuickPlay(config), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_start_what_the_menu_buttons_start() {
        let config = |fragment: &str| match start(fragment) {
            (StartAction::QuickPlay(config), None) => config,
            other => panic!("{fragment:?} started {other:?}"),
        };
        assert_eq!(config("#play").bots, quick_play_config().bots);
        assert!(!config("#play").range);
        let range = config("#range&bots=2");
        assert!(range.range && range.bots == 2);
        assert_eq!(range.max_unlag_ms, range_config().max_unlag_ms);
        assert!(matches!(start(""), (StartAction::Menu, None)));
        match start("#plya") {
            (StartAction::Menu, Some(problem)) => assert!(problem.contains("#plya"), "{problem}"),
            other => panic!("#plya started {other:?}"),
        }
    }
}
