//! Joining a server from the page (wasm32 only): the WebTransport session
//! the page's script opens (`web/index.html`'s `arena_web_link`) is a
//! gateway of the in-page network (`arena_udp::memory`). What the client
//! sends to the server's address leaves as a datagram when it fits the
//! browser's limit, else as a frame on the session's stream
//! (`arena_protocol::web_frame`); what the session receives (datagrams,
//! and the frames of the server's stream, read by the same
//! [`FrameReader`] as the server's) is handed to the client's socket. The
//! client above it (netcode, the link conditioner, renet, prediction) is the
//! native one's, unchanged.

use std::net::SocketAddr;

use arena_client::{ConnectTo, Disconnect, LastDisconnect, Session};
use arena_protocol::web_frame::{BROWSER_DATAGRAM_LIMIT, FrameReader, fits_datagram, frame};
use arena_protocol::web_link::cert_hex;
use arena_udp::memory;
use bevy::prelude::*;
use web_sys::wasm_bindgen::{JsCast, JsValue};

use crate::vocabulary::KnownJoinLink;

/// Pieces taken from the page's incoming queue a frame at most (the page
/// keeps at most 4096; a second's worth of snapshots is far fewer).
const MAX_TAKEN_PER_FRAME: u32 = 4096;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<WebSession>()
        .init_resource::<KnownJoinLink>()
        .add_observer(open_on_connect)
        .add_systems(First, take_incoming)
        .add_systems(Last, send_outgoing)
        .add_systems(OnEnter(Session::Offline), close_session);
}

/// The session to a server, while the client is with one over it.
#[derive(Resource, Default)]
struct WebSession {
    addr: Option<SocketAddr>,
    frames: FrameReader,
    /// The page's script saw the server close the session, a frame ago.
    closed_seen: bool,
}

/// The page's `arena_web_link` object (none: an old page without it).
fn link() -> Option<JsValue> {
    let window = web_sys::window()?;
    js_sys::Reflect::get(&window, &JsValue::from_str("arena_web_link")).ok().filter(|l| l.is_object())
}

fn call(link: &JsValue, method: &str, args: &[JsValue]) -> Option<JsValue> {
    let function = js_sys::Reflect::get(link, &JsValue::from_str(method)).ok()?.dyn_into::<js_sys::Function>().ok()?;
    let args: js_sys::Array = args.iter().collect();
    function.apply(link, &args).ok()
}

/// A join to an address outside the page opens a session to it (the
/// page's own listen server is on its loopback and needs none).
fn open_on_connect(event: On<ConnectTo>, mut session: ResMut<WebSession>, known: Res<KnownJoinLink>) {
    let addr = event.event().addr;
    // Any session before ends first, whatever comes next.
    close(&mut session);
    if addr.ip().is_loopback() && memory::is_bound(addr.port()) {
        return;
    }
    let Some(link) = link() else {
        warn!("this page has no WebTransport link (arena_web_link): rebuild it with scripts/web-build.sh");
        return;
    };
    memory::open_gateway(addr);
    // The hash the link carried; without one the page asks the server it
    // came from (`/web-endpoint`).
    let cert = known.0.filter(|l| l.addr == addr).map(|l| cert_hex(&l.cert)).unwrap_or_default();
    let url = format!("https://{addr}{}", arena_protocol::web_link::SESSION_PATH);
    info!("opening a WebTransport session to {url}");
    call(&link, "open", &[JsValue::from_str(&url), JsValue::from_str(&cert)]);
    session.addr = Some(addr);
    session.frames = FrameReader::default();
    session.closed_seen = false;
}

fn close(session: &mut WebSession) {
    if let Some(addr) = session.addr.take() {
        memory::close_gateway(addr);
        if let Some(link) = link() {
            call(&link, "close", &[]);
        }
    }
}

fn close_session(mut session: ResMut<WebSession>) {
    close(&mut session);
}

/// The page's sentence for a session that could not open (no WebTransport,
/// not a secure context, a wrong hash), as the menu says it: printable
/// ASCII, cut short (its text may quote a browser's message).
fn failure(link: &JsValue) -> Option<String> {
    let state = js_sys::Reflect::get(link, &JsValue::from_str("state")).ok()?.as_string()?;
    if state != "failed" {
        return None;
    }
    Some(link_error(link))
}

/// The page's sentence for what ended its session (empty: none), as the
/// menu may say it: printable ASCII, cut short (it may quote a browser's
/// message).
fn link_error(link: &JsValue) -> String {
    let error = js_sys::Reflect::get(link, &JsValue::from_str("error")).ok().and_then(|e| e.as_string());
    error
        .unwrap_or_default()
        .chars()
        .take(300)
        .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' })
        .collect()
}

/// Whether the server closed the session: closed while the page's script
/// still holds it as its current one (closing it ourselves forgets it).
fn closed_by_server(link: &JsValue) -> bool {
    let get = |key: &str| js_sys::Reflect::get(link, &JsValue::from_str(key)).ok();
    get("state").and_then(|s| s.as_string()).as_deref() == Some("closed")
        && get("current").is_some_and(|c| c.is_object())
}

/// What the session received, to the client's socket (before it reads).
fn take_incoming(mut session: ResMut<WebSession>, told: Res<LastDisconnect>, mut commands: Commands) {
    let Some(addr) = session.addr else { return };
    let Some(link) = link() else { return };
    if let Some(error) = failure(&link) {
        // Said at once, rather than after netcode's timeout.
        warn!("the WebTransport session to {addr} failed: {error}");
        close(&mut session);
        // After the disconnection's own (empty) reason.
        commands.trigger(Disconnect);
        commands.insert_resource(LastDisconnect(Some(format!("Cannot reach {addr} from this page: {error}"))));
        return;
    }
    let Some(taken) = call(&link, "take", &[JsValue::from(MAX_TAKEN_PER_FRAME)]) else { return };
    let Ok(taken) = taken.dyn_into::<js_sys::Array>() else { return };
    for item in taken.iter() {
        let Ok(item) = item.dyn_into::<js_sys::Array>() else { continue };
        let Ok(bytes) = item.get(1).dyn_into::<js_sys::Uint8Array>() else { continue };
        let bytes = bytes.to_vec();
        if item.get(0).as_f64() == Some(0.0) {
            memory::deliver(addr, &bytes);
        } else if let Err(e) = session.frames.push(&bytes, |frame| {
            memory::deliver(addr, frame);
        }) {
            // The server never sends this: the session is not the server's.
            warn!("the server's stream to this page is broken ({e}); closing the session");
            call(&link, "close", &[]);
            break;
        }
    }
    if closed_by_server(&link) {
        // A frame for what came before the close (a kick's reason, the
        // server's goodbye) to be read first.
        if !session.closed_seen {
            session.closed_seen = true;
            return;
        }
        close(&mut session);
        if told.0.is_some() {
            // The client was told why, and is on its way out.
            return;
        }
        // Closed without a word the client read: the server stopped, or
        // let go of us, as it does a page it has not heard from for a while
        // (a hidden tab, a page stalled). Said now, rather than after
        // netcode's own timeout on a page whose clock skipped the pause.
        let error = Some(link_error(&link))
            .filter(|e| !e.is_empty())
            .map_or(String::new(), |e| format!(" The browser said: {e}"));
        warn!("the session to {addr} was closed{error}");
        commands.trigger(Disconnect);
        commands.insert_resource(LastDisconnect(Some(format!(
            "The server at {addr} closed the connection: it shut down, or let this page go (as it does a page it \
             has heard nothing from for a while, when the tab was hidden or the page stalled). Join again.{error}"
        ))));
    }
}

/// What the client sent to the server this frame, onto the session.
fn send_outgoing(session: Res<WebSession>) {
    let Some(addr) = session.addr else { return };
    let outgoing = memory::take_outgoing(addr);
    if outgoing.is_empty() {
        return;
    }
    let Some(link) = link() else { return };
    let limit = js_sys::Reflect::get(&link, &JsValue::from_str("maxDatagram"))
        .ok()
        .and_then(|v| v.as_f64())
        .map_or(BROWSER_DATAGRAM_LIMIT, |v| (v as usize).min(BROWSER_DATAGRAM_LIMIT));
    for datagram in outgoing {
        if fits_datagram(datagram.len(), Some(limit)) {
            call(&link, "sendDatagram", &[js_sys::Uint8Array::from(&datagram[..]).into()]);
        } else if let Some(framed) = frame(&datagram) {
            call(&link, "sendStream", &[js_sys::Uint8Array::from(&framed[..]).into()]);
        }
    }
}
