//! A browser link's fragment (the part after `#`): what the page starts
//! with. `play` (quick play) or `range` (the shooting range), either with
//! `&bots=N`; `join=ADDRESS&cert=HASH` (a server's WebTransport endpoint,
//! `arena_protocol::web_link`); nothing opens the main menu. A fragment is anyone's text (a
//! link can come from a stranger): it chooses among these starts and nothing
//! else, and one that is not understood is an error whose sentence quotes
//! it only as printable ASCII, cut short. No Bevy; fuzzed (`page_links`).

use std::fmt;

/// Longest fragment read, characters: beyond it a link is refused whole.
pub const MAX_FRAGMENT_CHARS: usize = 200;
/// Longest piece of a refused fragment quoted back, characters.
const QUOTED_CHARS: usize = 40;

/// What a link asks the page to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageLink {
    /// The main menu.
    Menu,
    /// A game against bots (`None`: as many as quick play has).
    Play { bots: Option<usize> },
    /// The shooting range.
    Range { bots: Option<usize> },
    /// Join a server's WebTransport endpoint, pinning its certificate.
    Join(arena_protocol::web_link::JoinLink),
}

/// Why a fragment was not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    TooLong,
    /// The start it names, or a part after it, is not one there is.
    Unknown(String),
    /// `bots=` with something other than 0 to the most.
    Bots {
        asked: String,
        max: usize,
    },
    /// `join=` with something other than an IP address and port.
    JoinAddress(String),
    /// `join=` without `&cert=` and 64 hex digits after it.
    JoinCert,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known = "#play (quick play against bots), #range (the shooting range), #play&bots=N, \
                     #join=ADDRESS:PORT&cert=HASH (a server's link)";
        match self {
            Self::TooLong => {
                write!(f, "This link's ending is too long to be one of Arena's. Links that start a game: {known}.")
            }
            Self::Unknown(what) => {
                write!(f, "This link ends in \"#{what}\", which Arena does not know. Links that start a game: {known}.")
            }
            Self::Bots { asked, max } => {
                write!(f, "This link asks for \"{asked}\" bots: a number from 0 to {max} works.")
            }
            Self::JoinAddress(asked) => write!(
                f,
                "This link joins \"{asked}\", which is not an IP address and port (such as 192.168.1.20:27961). \
                 Ask the host for the link the server printed."
            ),
            Self::JoinCert => write!(
                f,
                "This join link has no certificate hash (&cert= and 64 hex digits), which the browser needs to \
                 trust the server. Ask the host for the whole link the server printed."
            ),
        }
    }
}

impl std::error::Error for LinkError {}

/// A stranger's text as it may be shown: printable ASCII, cut short.
fn quoted(text: &str) -> String {
    let mut shown: String =
        text.chars().take(QUOTED_CHARS).map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect();
    if text.chars().count() > QUOTED_CHARS {
        shown.push_str("...");
    }
    shown
}

/// Reads `fragment` (with or without its `#`); at most `max_bots` bots.
pub fn parse(fragment: &str, max_bots: usize) -> Result<PageLink, LinkError> {
    if fragment.chars().count() > MAX_FRAGMENT_CHARS {
        return Err(LinkError::TooLong);
    }
    let fragment = fragment.strip_prefix('#').unwrap_or(fragment);
    if fragment.is_empty() {
        return Ok(PageLink::Menu);
    }
    let unknown = || LinkError::Unknown(quoted(fragment));
    if let Some(rest) = fragment.strip_prefix("join=") {
        let mut parts = rest.split('&');
        let addr = parts.next().unwrap_or_default();
        let cert = match (parts.next(), parts.next()) {
            (Some(cert), None) => Some(cert.strip_prefix("cert=").ok_or_else(unknown)?),
            (None, _) => None,
            (Some(_), Some(_)) => return Err(unknown()),
        };
        return match arena_protocol::web_link::parse_join(addr, cert) {
            Ok(link) => Ok(PageLink::Join(link)),
            Err(arena_protocol::web_link::JoinLinkError::Address) => Err(LinkError::JoinAddress(quoted(addr))),
            Err(arena_protocol::web_link::JoinLinkError::Cert) => Err(LinkError::JoinCert),
        };
    }
    let mut parts = fragment.split('&');
    let range = match parts.next() {
        Some("play") => false,
        Some("range") => true,
        _ => return Err(unknown()),
    };
    let mut bots = None;
    for part in parts {
        match part.split_once('=') {
            Some(("bots", n)) if bots.is_none() => match n.parse::<usize>() {
                Ok(n) if n <= max_bots => bots = Some(n),
                _ => return Err(LinkError::Bots { asked: quoted(n), max: max_bots }),
            },
            _ => return Err(unknown()),
        }
    }
    Ok(if range { PageLink::Range { bots } } else { PageLink::Play { bots } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn play_and_range_start_games_and_nothing_opens_the_menu() {
        assert_eq!(parse("#play", 12), Ok(PageLink::Play { bots: None }));
        assert_eq!(parse("range", 12), Ok(PageLink::Range { bots: None }));
        assert_eq!(parse("#play&bots=4", 12), Ok(PageLink::Play { bots: Some(4) }));
        assert_eq!(parse("#range&bots=0", 12), Ok(PageLink::Range { bots: Some(0) }));
        assert_eq!(parse("", 12), Ok(PageLink::Menu));
        assert_eq!(parse("#", 12), Ok(PageLink::Menu));
    }

    #[test]
    fn a_join_link_names_the_endpoint_and_its_certificate() {
        let hash = "ab".repeat(32);
        let link = parse(&format!("#join=192.168.1.20:27961&cert={hash}"), 12);
        match link {
            Ok(PageLink::Join(join)) => {
                assert_eq!(join.addr, "192.168.1.20:27961".parse().unwrap());
                assert_eq!(join.cert, [0xAB; 32]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse(&format!("#join=[::1]:5&cert={hash}"), 12), Ok(PageLink::Join(_))));
        assert_eq!(parse("#join=1.2.3.4:5", 12), Err(LinkError::JoinCert));
        assert_eq!(parse("#join=1.2.3.4:5&cert=xyz", 12), Err(LinkError::JoinCert));
        assert!(matches!(parse(&format!("#join=evil.example:5&cert={hash}"), 12), Err(LinkError::JoinAddress(_))));
        assert!(matches!(parse(&format!("#join=1.2.3.4:5&cert={hash}&bots=3"), 12), Err(LinkError::Unknown(_))));
        assert!(matches!(parse(&format!("#join=1.2.3.4:5&pass={hash}"), 12), Err(LinkError::Unknown(_))));
    }

    #[test]
    fn a_link_not_understood_says_why_in_printable_ascii() {
        let said = |f: &str| parse(f, 12).expect_err("refused").to_string();
        assert!(said("#plya").contains("\"#plya\""));
        assert!(said("#play&bots=13").contains("from 0 to 12"));
        assert!(said("#play&bots=-1").contains("\"-1\""));
        assert!(said("#play&bots=1&bots=2").contains("does not know"), "one count of bots");
        assert!(said("#play&map=../../etc").contains("does not know"));
        assert!(said("#play&").contains("does not know"));
        let odd = said("#pl\u{202e}ay\n<b>");
        assert!(odd.is_ascii() && !odd.chars().any(|c| c.is_control()), "{odd}");
        assert_eq!(parse(&"a".repeat(MAX_FRAGMENT_CHARS + 1), 12), Err(LinkError::TooLong));
        assert!(said(&format!("#{}", "x".repeat(150))).len() < 300, "a quote is cut short");
    }
}
