//! A browser link's fragment (`arena_client::page_link`) into the game's
//! start: quick play or the range as the menu's buttons start them, a join
//! of a server's WebTransport endpoint (with the certificate to pin), or the
//! main menu, saying what was wrong with a fragment it could not read.

use arena_client::page_link::{PageLink, parse};
use arena_protocol::key::Password;
use arena_protocol::web_link::JoinLink;

use crate::menu::{MAX_MENU_BOTS, quick_play_config, range_config};
use crate::vocabulary::StartAction;

/// What `fragment` starts, the sentence for one not understood, and the
/// join link it carried (whose certificate the page's session pins).
pub(crate) fn start(fragment: &str) -> (StartAction, Option<String>, Option<JoinLink>) {
    let (mut config, bots) = match parse(fragment, MAX_MENU_BOTS) {
        Ok(PageLink::Menu) => return (StartAction::Menu, None, None),
        Ok(PageLink::Play { bots }) => (quick_play_config(), bots),
        Ok(PageLink::Range { bots }) => (range_config(), bots),
        Ok(PageLink::Join(link)) => return (StartAction::Join(link.addr, Password::OPEN, false), None, Some(link)),
        Err(e) => return (StartAction::Menu, Some(e.to_string()), None),
    };
    if let Some(bots) = bots {
        config.bots = bots;
    }
    (StartAction::QuickPlay(config), None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_start_what_the_menu_buttons_start() {
        let config = |fragment: &str| match start(fragment) {
            (StartAction::QuickPlay(config), None, None) => config,
            other => panic!("{fragment:?} started {other:?}"),
        };
        assert_eq!(config("#play").bots, quick_play_config().bots);
        assert!(!config("#play").range);
        let range = config("#range&bots=2");
        assert!(range.range && range.bots == 2);
        assert_eq!(range.max_unlag_ms, range_config().max_unlag_ms);
        assert!(matches!(start(""), (StartAction::Menu, None, None)));
        match start("#plya") {
            (StartAction::Menu, Some(problem), None) => assert!(problem.contains("#plya"), "{problem}"),
            other => panic!("#plya started {other:?}"),
        }
        let hash = "01".repeat(32);
        match start(&format!("#join=10.0.0.1:27961&cert={hash}")) {
            (StartAction::Join(addr, _, false), None, Some(link)) => {
                assert_eq!(addr, "10.0.0.1:27961".parse().unwrap());
                assert_eq!(link.addr, addr);
            }
            other => panic!("a join link started {other:?}"),
        }
    }
}
