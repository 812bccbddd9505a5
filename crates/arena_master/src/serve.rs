//! The master's socket loop, thin: each datagram into [`Master::receive`],
//! each reply out, mapped to the socket's family; expiry and the summary
//! line every pass.

use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::net;
use crate::table::Master;

/// How long a read waits before the loop looks at the clock and the stop flag.
const READ_TIMEOUT: Duration = Duration::from_millis(100);
/// How often expired entries are swept (not per datagram: a flood would
/// pay for a sweep of every table each time).
const EXPIRE_EVERY: Duration = Duration::from_millis(100);

/// Serves `master` on `socket` until `stop` is set; summary lines go to
/// `log`. Only a socket that cannot be read at all ends it with an error.
pub fn serve(socket: &UdpSocket, master: &mut Master, stop: &AtomicBool, log: &mut dyn FnMut(&str)) -> io::Result<()> {
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    let v6 = net::is_v6(socket);
    let started = Instant::now();
    let mut buffer = vec![0u8; 2048];
    let mut out: Vec<(std::net::SocketAddr, Vec<u8>)> = Vec::new();
    let mut send_errors: u64 = 0;
    let mut expired_at = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        match net::recv_from(socket, &mut buffer) {
            Ok((len, from)) => {
                out.clear();
                master.receive(from, &buffer[..len], started.elapsed(), &mut out);
                for (to, datagram) in &out {
                    if net::send_to(socket, datagram, *to, v6).is_err() {
                        send_errors += 1;
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => return Err(e),
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
        let socket = net::bind_udp("127.0.0.1:0".parse().expect("address")).expect("a socket");
        let master_addr = socket.local_addr().expect("bound");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut master = Master::new(MasterConfig::default());
            serve(&socket, &mut master, &flag, &mut |_| {}).expect("serves");
        });
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
        stop.store(true, Ordering::Relaxed);
        thread.join().expect("the loop ends");
        assert_eq!(listed, vec![server.local_addr().expect("bound")]);
    }
}
