//! The master's socket loop, thin: each datagram into [`Master::receive`],
//! each reply out, mapped to the socket's family; expiry and the summary
//! line every pass (at most every 100 ms: a flood makes a pass per datagram).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arena_udp::UdpSocket;

use crate::table::Master;

/// How long a read waits before the loop looks at the clock and the stop flag.
const READ_TIMEOUT: Duration = Duration::from_millis(100);
/// How often expired entries are swept (not per datagram: a flood would
/// pay for a sweep of every table each time).
const EXPIRE_EVERY: Duration = Duration::from_millis(100);
/// The receive buffer, bytes: larger than any datagram a master reads, so
/// that a longer one arrives long (cut here) and is refused as too long.
const RECV_BUFFER_BYTES: usize = 2048;

/// A socket for a master at `addr` (`[::]` takes both families; see
/// [`arena_udp::bind_udp`]).
pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    arena_udp::bind_udp(addr)
}

/// Datagrams read from the second socket per turn of the loop, at most.
const PROBE_READS_PER_TURN: usize = 16;

/// Reads in a row that fail with an error that is not transient
/// ([`arena_udp::is_transient`]) before the loop gives up on its socket.
const MAX_FAILED_READS: u32 = 10_000;

/// Serves `master` on `socket` until `stop` is set; summary lines go to
/// `log`. `probe`, a second socket on another port, sends the probes of
/// reachability checks (without one they go unanswered). Only a socket
/// that cannot be read at all ends it with an error.
pub fn serve(
    socket: &UdpSocket,
    probe: Option<&UdpSocket>,
    master: &mut Master,
    stop: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> io::Result<()> {
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    let v6 = arena_udp::is_v6(socket);
    let probe_v6 = probe.is_some_and(arena_udp::is_v6);
    if let Some(probe) = probe {
        probe.set_nonblocking(true)?;
        master.set_probe_addr(probe.local_addr()?);
    }
    let started = Instant::now();
    let mut buffer = vec![0u8; RECV_BUFFER_BYTES];
    let mut out: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    let mut send_errors: u64 = 0;
    let mut failed_reads: u32 = 0;
    let mut expired_at = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        match arena_udp::recv_from(socket, &mut buffer) {
            Ok((len, from)) => {
                out.clear();
                master.receive(from, &buffer[..len], started.elapsed(), &mut out);
                // A probe first, then the word that it went (so that it
                // is usually there when the server reads that word).
                if let Some(probe) = probe {
                    for (to, datagram) in master.take_probe_datagrams() {
                        if arena_udp::send_to(probe, &datagram, to, probe_v6).is_err() {
                            send_errors += 1;
                        }
                    }
                }
                for (to, datagram) in &out {
                    if arena_udp::send_to(socket, datagram, *to, v6).is_err() {
                        send_errors += 1;
                    }
                }
            }
            Err(e) if arena_udp::is_transient(&e) => {}
            // Another error (Windows reports some of the network's on later
            // reads): counted, and fatal only when nothing but errors comes
            // for a while, which a socket that cannot be read gives.
            Err(e) => {
                failed_reads += 1;
                if failed_reads >= MAX_FAILED_READS {
                    return Err(e);
                }
                continue;
            }
        }
        failed_reads = 0;
        if let Some(probe) = probe {
            // The second socket's few `whoami`s, read between the first's.
            for _ in 0..PROBE_READS_PER_TURN {
                let Ok((len, from)) = arena_udp::recv_from(probe, &mut buffer) else { break };
                out.clear();
                master.receive_on_probe_socket(from, &buffer[..len], started.elapsed(), &mut out);
                for (to, datagram) in &out {
                    if arena_udp::send_to(probe, datagram, *to, probe_v6).is_err() {
                        send_errors += 1;
                    }
                }
            }
        }
        let now = started.elapsed();
        if now.saturating_sub(expired_at) < EXPIRE_EVERY {
            continue;
        }
        expired_at = now;
        master.expire(now);
        if let Some(line) = master.summary(now) {
            if send_errors > 0 {
                log(&format!("{line}; {send_errors} sends failed so far"));
            } else {
                log(&line);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::MasterConfig;
    use crate::wire::{self, InfoString, ServerQuery};
    use std::sync::Arc;

    #[test]
    fn a_server_registers_and_a_client_gets_the_list_over_real_sockets() {
        let socket = bind("127.0.0.1:0".parse().expect("address")).expect("a socket");
        let master_addr = socket.local_addr().expect("bound");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (lines, summaries) = std::sync::mpsc::channel::<String>();
        let thread = std::thread::spawn(move || {
            let mut master = Master::new(MasterConfig::default());
            serve(&socket, None, &mut master, &flag, &mut |line| {
                let _ = lines.send(line.to_string());
            })
            .expect("serves");
            master
        });
        // Garbage and datagrams too long (one longer than the buffer) first:
        // counted and dropped, the loop goes on.
        let stranger = UdpSocket::bind("127.0.0.1:0").expect("a socket");
        for junk in [vec![0xFF; 1500], vec![0xFF; 3000], b"hello".to_vec()] {
            stranger.send_to(&junk, master_addr).expect("sent");
        }
        let server = UdpSocket::bind("127.0.0.1:0").expect("a server socket");
        server.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        server.send_to(&wire::heartbeat(), master_addr).expect("heartbeat");
        let mut buffer = [0u8; 2048];
        let (len, _) = server.recv_from(&mut buffer).expect("a getinfo");
        let challenge = wire::parse_getinfo(&buffer[..len]).expect("getinfo").challenge.expect("a challenge");
        let pairs = [
            ("challenge", challenge.as_str()),
            ("gamename", "Arena"),
            ("protocol", "12"),
            ("clients", "1"),
            ("sv_maxclients", "8"),
        ];
        let info = InfoString::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).expect("valid");
        server.send_to(&wire::info_response(&info).expect("fits"), master_addr).expect("answer");
        let client = UdpSocket::bind("127.0.0.1:0").expect("a client socket");
        client.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
        let query = ServerQuery {
            extended: true,
            game: "Arena".into(),
            protocol: 12,
            empty: true,
            full: true,
            ipv4: true,
            ipv6: true,
            gametype: None,
            refresh: None,
        };
        let mut listed = Vec::new();
        for _ in 0..20 {
            client.send_to(&wire::get_servers(&query, wire::MAX_DATAGRAM_BYTES), master_addr).expect("ask");
            let (len, _) = client.recv_from(&mut buffer).expect("a list");
            let part = wire::parse_servers_response(&buffer[..len]).expect("a list");
            assert!(part.end);
            listed = part.servers;
            if !listed.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let line = summaries.recv_timeout(Duration::from_secs(3)).expect("a summary line");
        assert!(line.starts_with("master: "), "{line}");
        stop.store(true, Ordering::Relaxed);
        let master = thread.join().expect("the loop ends");
        assert_eq!(listed, vec![server.local_addr().expect("bound")]);
        assert_eq!(master.counters().dropped.get("too long"), Some(&2), "{:?}", master.counters());
        assert_eq!(master.counters().dropped.get("not dpmaster"), Some(&1));
    }
}
