//! Echo datagrams through a real TURN relay (coturn): allocate with REST
//! credentials, permit the peer, bind a channel, send `COUNT` datagrams of
//! 100 bytes and count the echoes.
//!
//! `cargo run -p arena_turn --example relay_echo -- RELAY SECRET PEER [COUNT] [BIND]`
//! e.g. `11.0.0.5:3478 s3cret 11.0.0.6:9000 20 11.0.0.7:0`; PEER runs a UDP echo.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arena_turn::{Event, Relay, rest_credentials};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [relay_addr, secret, peer, ..] = &args[..] else {
        return Err("usage: relay_echo RELAY SECRET PEER [COUNT] [BIND]".into());
    };
    let relay_addr: SocketAddr = relay_addr.parse()?;
    let peer: SocketAddr = peer.parse()?;
    let count: usize = args.get(3).map_or(Ok(20), |c| c.parse())?;
    let bind = args.get(4).map_or("0.0.0.0:0", String::as_str);
    let socket = UdpSocket::bind(bind)?;
    socket.set_read_timeout(Some(Duration::from_millis(20)))?;
    let start = Instant::now();
    let expiry = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() + 600;
    let mut relay = Relay::new(relay_addr, rest_credentials(secret.as_bytes(), expiry, "player"), start.elapsed());
    let mut buf = [0u8; 2048];
    let mut received: Vec<Vec<u8>> = Vec::new();

    // One turn of the loop: send what is due, read what came, keep data.
    let mut step = |relay: &mut Relay, received: &mut Vec<Vec<u8>>| -> Result<(), Box<dyn std::error::Error>> {
        for datagram in relay.poll(start.elapsed()) {
            socket.send_to(&datagram, relay_addr)?;
        }
        if let Ok((n, from)) = socket.recv_from(&mut buf)
            && from == relay_addr
        {
            for event in relay.receive(&buf[..n], start.elapsed()) {
                match event {
                    Event::Allocated { relayed, mapped } => println!("allocated: relayed {relayed}, mapped {mapped:?}"),
                    Event::Data { peer: from, payload } => {
                        if from.ip() == peer.ip() {
                            received.push(payload);
                        }
                    }
                    Event::PermissionRefused { peer_ip, code } => println!("permission refused: {peer_ip} ({code})"),
                    Event::Failed(error) => return Err(error.to_string().into()),
                }
            }
        }
        match relay.failure() {
            Some(error) => Err(error.to_string().into()),
            None => Ok(()),
        }
    };
    let wait = |relay: &mut Relay,
                received: &mut Vec<Vec<u8>>,
                step: &mut dyn FnMut(&mut Relay, &mut Vec<Vec<u8>>) -> Result<(), Box<dyn std::error::Error>>,
                done: &dyn Fn(&Relay, &Vec<Vec<u8>>) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done(relay, received) && Instant::now() < deadline {
            step(relay, received)?;
        }
        Ok::<bool, Box<dyn std::error::Error>>(done(relay, received))
    };

    if !wait(&mut relay, &mut received, &mut step, &|r, _| r.relayed().is_some())? {
        return Err("no allocation within 5 s".into());
    }
    relay.permit(peer.ip());
    if !wait(&mut relay, &mut received, &mut step, &|r, _| r.is_permitted(peer.ip()))? {
        return Err("no permission within 5 s".into());
    }
    // The first datagram goes as a Send indication and starts the ChannelBind.
    let payload = [b'x'; 100];
    let indication = relay.wrap(peer, &payload, start.elapsed()).ok_or("wrap refused")?;
    socket.send_to(&indication, relay_addr)?;
    let send_indication_len = indication.len();
    let first_echo =
        wait(&mut relay, &mut received, &mut step, &|r, got| !got.is_empty() && r.bound_channel(peer).is_some())?;
    println!("send indication: {send_indication_len} B for 100 B; echoed: {first_echo}");
    received.clear();

    let mut echoed = 0;
    let mut framed_len = 0;
    for i in 0..count {
        let mut payload = [0u8; 100];
        payload[..8].copy_from_slice(&(i as u64).to_be_bytes());
        let framed = relay.wrap(peer, &payload, start.elapsed()).ok_or("wrap refused")?;
        framed_len = framed.len();
        socket.send_to(&framed, relay_addr)?;
        if wait(&mut relay, &mut received, &mut step, &|_, got| got.iter().any(|p| p[..] == payload[..]))? {
            echoed += 1;
        }
        received.clear();
    }
    println!(
        "{echoed} of {count} echoed through ChannelData: {framed_len} B a datagram through the relay, 100 B direct; round trip {:?}",
        relay.round_trip()
    );
    for datagram in relay.close(start.elapsed()) {
        socket.send_to(&datagram, relay_addr)?;
    }
    if echoed == count { Ok(()) } else { Err(format!("{echoed} of {count} echoed").into()) }
}
