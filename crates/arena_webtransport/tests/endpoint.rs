//! The endpoint against real WebTransport clients on 127.0.0.1 (quinn,
//! pinned to the certificate's hash as Chromium pins it): datagrams over
//! the browser's limit cross both ways by the stream; strangers' sessions
//! are capped, broken streams and silent sessions closed, the page's
//! server keeps to its folder; everything counted.

// Tests: a failed expectation is the failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use arena_protocol::datagram::CONNECTION_REQUEST_BYTES;
use arena_protocol::web_link::{SESSION_PATH, parse_cert};
use arena_udp::WebLink;
use arena_webtransport::{MAX_SESSIONS_PER_IP, WebConfig, WebEndpoint};
use wtransport::tls::Sha256Digest;
use wtransport::{ClientConfig, Endpoint};

/// The endpoint alone (the test is its game): sessions may wait a minute to
/// be admitted unless a test says otherwise.
fn start(folder: Option<std::path::PathBuf>, silent: Duration) -> (WebEndpoint, SocketAddr) {
    start_with(folder, (silent, Duration::from_secs(60)), arena_webtransport::RENEW_AFTER, Box::new(|_| {}))
}

fn start_renewing(
    folder: Option<std::path::PathBuf>,
    silent: Duration,
    renew_after: Duration,
    on_renew: Box<dyn Fn(&str) + Send>,
) -> (WebEndpoint, SocketAddr) {
    start_with(folder, (silent, Duration::from_secs(60)), renew_after, on_renew)
}

fn start_with(
    folder: Option<std::path::PathBuf>,
    (silent, admit): (Duration, Duration),
    renew_after: Duration,
    on_renew: Box<dyn Fn(&str) + Send>,
) -> (WebEndpoint, SocketAddr) {
    let endpoint = WebEndpoint::start(
        WebConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            folder,
            max_sessions: 64,
            names: vec!["localhost".into()],
            silent_timeout: silent,
            admit_timeout: admit,
            renew_after,
        },
        on_renew,
    )
    .expect("the endpoint opens");
    let addr = SocketAddr::from(([127, 0, 0, 1], endpoint.port));
    (endpoint, addr)
}

/// What the endpoint received, within `wait`, until `enough` of it came.
fn received(endpoint: &WebEndpoint, wait: Duration, enough: usize) -> Vec<(SocketAddr, Vec<u8>)> {
    let mut got = Vec::new();
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline && got.len() < enough {
        endpoint.receive(&mut got);
        std::thread::sleep(Duration::from_millis(5));
    }
    got
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn client(endpoint: &WebEndpoint) -> Endpoint<wtransport::endpoint::endpoint_side::Client> {
    let hash = parse_cert(&endpoint.hash_hex()).unwrap();
    let config =
        ClientConfig::builder().with_bind_default().with_server_certificate_hashes([Sha256Digest::new(hash)]).build();
    Endpoint::client(config).unwrap()
}

#[test]
fn a_connection_request_and_bundles_over_the_limits_cross_both_ways() {
    let (endpoint, addr) = start(None, Duration::from_secs(15));
    let link = arena_webtransport::client::connect(addr, parse_cert(&endpoint.hash_hex()).unwrap()).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let request: Vec<u8> = (0..CONNECTION_REQUEST_BYTES).map(|i| i as u8).collect();
    let bundle: Vec<u8> = (0..1325).map(|i| (i * 7) as u8).collect();
    let small = vec![9u8; 60];
    for datagram in [&request, &small, &bundle] {
        udp.send_to(datagram, link.local).unwrap();
    }
    let got = received(&endpoint, Duration::from_secs(5), 3);
    let bodies: Vec<&Vec<u8>> = got.iter().map(|(_, d)| d).collect();
    assert!(bodies.contains(&&request) && bodies.contains(&&bundle) && bodies.contains(&&small), "{} came", got.len());
    let peer = got[0].0;
    assert!(arena_udp::is_web_peer(peer.ip()) && got.iter().all(|(p, _)| *p == peer));
    assert_eq!(endpoint.origin(peer).map(|a| a.ip()), Some("127.0.0.1".parse().unwrap()));

    // Down: a bundle over what a datagram carries comes by the stream, whole.
    assert!(endpoint.send(peer, &bundle));
    assert!(endpoint.send(peer, &small));
    let mut buffer = [0u8; 2048];
    let mut down = Vec::new();
    for _ in 0..2 {
        let (len, _) = udp.recv_from(&mut buffer).expect("an answer");
        down.push(buffer[..len].to_vec());
    }
    assert!(down.contains(&bundle) && down.contains(&small));
    let counts = endpoint.counts();
    assert!(counts.frames_in >= 2 && counts.frames_out >= 1 && counts.dropped_for_size == 0, "{counts:?}");
    assert_eq!(counts.sessions_open, 1);
    // Only the session speaks for its address: an unknown one reaches nobody.
    assert!(!endpoint.send(arena_udp::web_peer_addr(9, 999), &small));
}

#[test]
fn a_thousand_sessions_from_one_address_get_its_share_and_garbage_changes_nothing() {
    let (endpoint, addr) = start(None, Duration::from_secs(15));
    // Garbage at the QUIC port first: dropped by QUIC, nothing opens.
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..2000u32 {
        let len = 1 + (i as usize * 37) % 1400;
        let datagram: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j * 17) as u8).collect();
        junk.send_to(&datagram, addr).unwrap();
    }
    let rt = runtime();
    let (opened, refused) = rt.block_on(async {
        let client = client(&endpoint);
        let url = format!("https://{addr}{SESSION_PATH}");
        let attempts = (0..1000).map(|_| {
            let url = url.clone();
            let client = &client;
            async move { tokio::time::timeout(Duration::from_secs(20), client.connect(url)).await }
        });
        let results = futures_join_all(attempts).await;
        let opened: Vec<_> = results.into_iter().filter_map(|r| r.ok().and_then(|r| r.ok())).collect();
        let refused = 1000 - opened.len();
        // Held open while counted, then closed (and the close sent).
        tokio::time::sleep(Duration::from_millis(200)).await;
        for session in &opened {
            session.close(wtransport::VarInt::from_u32(0), b"done");
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), client.wait_idle()).await;
        (opened.len(), refused)
    });
    assert_eq!(opened, MAX_SESSIONS_PER_IP, "sessions opened from one address");
    assert_eq!(refused, 1000 - MAX_SESSIONS_PER_IP);
    let tally = endpoint.tally();
    assert!(tally.refused_per_ip >= (1000 - MAX_SESSIONS_PER_IP) as u64 - 8, "{tally:?}");
    // The garbage at the QUIC port opened nothing: only the flood's eight.
    assert_eq!(tally.sessions_opened, MAX_SESSIONS_PER_IP as u64, "{tally:?}");
    let mut nothing = Vec::new();
    endpoint.receive(&mut nothing);
    assert!(nothing.is_empty(), "garbage reached the game: {} datagrams", nothing.len());
    // Once they are gone, the address may open sessions again.
    let deadline = Instant::now() + Duration::from_secs(5);
    while endpoint.counts().sessions_open > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(endpoint.counts().sessions_open, 0);
    let link = arena_webtransport::client::connect(addr, parse_cert(&endpoint.hash_hex()).unwrap());
    assert!(link.is_ok(), "a new session after the flood");
}

/// Runs the futures together (one task, no extra crate).
async fn futures_join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut out = Vec::with_capacity(set.len());
    let mut pending: Vec<Option<std::pin::Pin<Box<F>>>> = set.into_iter().map(Some).collect();
    let mut results: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => {
                        results[i] = Some(value);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    out.extend(results.into_iter().flatten());
    out
}

#[test]
fn a_broken_stream_and_a_silent_session_are_closed_and_others_go_on() {
    let (endpoint, addr) = start(None, Duration::from_millis(800));
    let rt = runtime();
    rt.block_on(async {
        let client = client(&endpoint);
        let url = format!("https://{addr}{SESSION_PATH}");
        let good = client.connect(&url).await.unwrap();
        let broken = client.connect(&url).await.unwrap();
        let silent = client.connect(&url).await.unwrap();
        // A frame that says it is 65535 bytes long: the stream is broken.
        let mut stream = broken.open_uni().await.unwrap().await.unwrap();
        stream.write_all(&[0xFF, 0xFF, 1, 2, 3]).await.unwrap();
        // A second stream from the good one is refused, not read.
        let mut first = good.open_uni().await.unwrap().await.unwrap();
        first.write_all(&[0, 3, 1, 2, 3]).await.unwrap();
        let mut extra = good.open_uni().await.unwrap().await.unwrap();
        let _ = extra.write_all(&[0, 1, 9]).await;
        // The good one keeps talking; the silent one says nothing.
        for _ in 0..30 {
            good.send_datagram([7u8; 40]).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let broken_closed = tokio::time::timeout(Duration::from_secs(2), broken.closed()).await.is_ok();
        let silent_closed = tokio::time::timeout(Duration::from_secs(2), silent.closed()).await.is_ok();
        assert!(broken_closed, "the broken stream's session was closed");
        assert!(silent_closed, "the silent session was closed");
        good.send_datagram([8u8; 40]).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    });
    let got = received(&endpoint, Duration::from_secs(1), 32);
    assert!(got.iter().any(|(_, d)| d == &[1, 2, 3]), "the good stream's frame came");
    assert!(got.iter().any(|(_, d)| d == &[8u8; 40]), "the good session still carries");
    assert!(!got.iter().any(|(_, d)| d == &[9]), "an extra stream was read");
    let tally = endpoint.tally();
    assert!(tally.broken_streams >= 1 && tally.timed_out >= 1 && tally.extra_streams >= 1, "{tally:?}");
}

fn http(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn the_page_is_served_from_its_folder_and_nothing_outside_it() {
    let root = std::env::temp_dir().join(format!("arena-web-page-{}", std::process::id()));
    let folder = root.join("web");
    std::fs::create_dir_all(folder.join("sub")).unwrap();
    std::fs::write(folder.join("index.html"), "<!doctype html>arena page").unwrap();
    std::fs::write(folder.join("arena.js"), "// js").unwrap();
    std::fs::write(folder.join("arena_bg.wasm"), "\0asm").unwrap();
    std::fs::write(root.join("secret.txt"), "the key").unwrap();
    std::fs::write(folder.join(".hidden"), "hidden").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("secret.txt"), folder.join("link.txt")).unwrap();
    let (endpoint, addr) = start(Some(folder.clone()), Duration::from_secs(15));

    let index = http(addr, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(index.starts_with("HTTP/1.1 200") && index.contains("arena page"), "{index}");
    let wasm = http(addr, b"GET /arena_bg.wasm HTTP/1.1\r\n\r\n");
    assert!(wasm.contains("Content-Type: application/wasm"), "{wasm}");
    let info = http(addr, b"GET /web-endpoint HTTP/1.1\r\n\r\n");
    assert!(info.contains(&endpoint.hash_hex()) && info.contains(&format!("\"port\":{}", endpoint.port)), "{info}");
    for path in [
        "/../secret.txt",
        "/sub/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/.hidden",
        "/link.txt",
        "/sub",
        "/sub/",
        "/nothing",
    ] {
        let answer = http(addr, format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes());
        assert!(answer.starts_with("HTTP/1.1 404") && !answer.contains("the key"), "{path}: {answer}");
    }
    assert!(http(addr, b"POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    assert!(http(addr, long.as_bytes()).starts_with("HTTP/1.1 413"));
    let many = format!("GET / HTTP/1.1\r\n{}\r\n", "X: y\r\n".repeat(100));
    assert!(http(addr, many.as_bytes()).starts_with("HTTP/1.1 431"));
    // Connections beyond the cap are closed at once, and the page still answers after.
    let held: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert!(http(addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
    let tally = endpoint.tally();
    assert!(tally.http_refused >= 11 && tally.http_connections_refused >= 30 && tally.http_served >= 4, "{tally:?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_renewed_certificate_takes_new_sessions_and_leaves_open_ones_alone() {
    let (renewed_tx, renewed_rx) = std::sync::mpsc::channel::<String>();
    let renewed_tx = std::sync::Mutex::new(renewed_tx);
    let (endpoint, addr) = start_renewing(
        None,
        Duration::from_secs(15),
        Duration::from_secs(2),
        Box::new(move |hash| {
            let _ = renewed_tx.lock().unwrap().send(hash.to_string());
        }),
    );
    let first = endpoint.hash_hex();
    let old = arena_webtransport::client::connect(addr, parse_cert(&first).unwrap()).unwrap();
    let new_hash = renewed_rx.recv_timeout(Duration::from_secs(5)).expect("renewed within 5 s");
    assert_ne!(new_hash, first);
    assert_eq!(endpoint.hash_hex(), new_hash, "the page's /web-endpoint says the new hash");
    // The session opened under the old certificate still carries.
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.send_to(b"still here", old.local).unwrap();
    let got = received(&endpoint, Duration::from_secs(3), 1);
    assert!(got.iter().any(|(_, d)| d == b"still here"), "the old session carries after the renewal");
    // A new session needs the new hash: the old one is refused.
    assert!(arena_webtransport::client::connect(addr, parse_cert(&first).unwrap()).is_err());
    assert!(arena_webtransport::client::connect(addr, parse_cert(&new_hash).unwrap()).is_ok());
}

#[test]
fn the_endpoint_closes_its_ports_when_the_server_goes() {
    let folder = std::env::temp_dir().join(format!("arena-web-stop-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    for file in ["index.html", "arena.js", "arena_bg.wasm"] {
        std::fs::write(folder.join(file), "x").unwrap();
    }
    let (endpoint, addr) = start(Some(folder.clone()), Duration::from_secs(15));
    assert!(http(addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
    // Dropped, it waits for its thread: both ports are free at once, and a
    // new endpoint (a server hosting again) takes them.
    drop(endpoint);
    let again = WebEndpoint::start(
        WebConfig {
            bind: addr,
            folder: Some(folder.clone()),
            max_sessions: 8,
            names: vec!["localhost".into()],
            silent_timeout: Duration::from_secs(15),
            admit_timeout: Duration::from_secs(15),
            renew_after: arena_webtransport::RENEW_AFTER,
        },
        Box::new(|_| {}),
    );
    assert!(again.is_ok(), "the port is still held: {:?}", again.err());
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn a_session_whose_peer_never_joins_gives_its_place_back() {
    let (endpoint, addr) = start_with(
        None,
        (Duration::from_secs(15), Duration::from_millis(700)),
        arena_webtransport::RENEW_AFTER,
        Box::new(|_| {}),
    );
    let cert = parse_cert(&endpoint.hash_hex()).unwrap();
    let joined = arena_webtransport::client::connect(addr, cert).unwrap();
    let stranger = arena_webtransport::client::connect(addr, cert).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.send_to(b"joined", joined.local).unwrap();
    let got = received(&endpoint, Duration::from_secs(3), 1);
    let peer = got.iter().find(|(_, d)| d == b"joined").map(|(p, _)| *p).expect("the joined one spoke");
    // The game says this one's peer became a client; the other never does.
    endpoint.admitted(peer);
    // Both keep talking (neither is silent).
    for _ in 0..15 {
        udp.send_to(b"joined", joined.local).unwrap();
        udp.send_to(b"stranger", stranger.local).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let tally = endpoint.tally();
    assert_eq!(tally.not_admitted, 1, "{tally:?}");
    assert_eq!(endpoint.counts().sessions_open, 1);
    assert!(endpoint.send(peer, b"still yours"), "the admitted session is still open");
}
