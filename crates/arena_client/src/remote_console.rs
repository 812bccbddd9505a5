//! The remote console's client (issue 40): one command to a server's rcon
//! over its game port, blocking, for `arena rcon ADDR COMMAND` and the
//! console's `rcon`. It asks for a challenge (padded, so the server owes an
//! unproved address nothing larger), which carries the server's salt;
//! derives the key from the password and that salt (Argon2id); sends the
//! command sealed under it (XChaCha20-Poly1305: neither the password nor
//! the command's words travel readable), and gathers the answer's parts,
//! each opened, so the text is the server's that has the password. No
//! Bevy, no state between calls.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use arena_protocol::rcon::{
    self, AnswerError, Challenge, CommandError, MAX_DATAGRAM_BYTES, Packet, RconKey, RconKeyError, RefusalReason,
};
use arena_udp::UdpSocket;
// std's clock panics in a browser; web-time's is std's natively.
use web_time::Instant;

/// Challenge requests sent again after the first one went unanswered
/// (datagrams get lost). A command is never sent twice: its challenge is
/// spent at the server, which would only refuse it as a replay.
pub const CHALLENGE_RETRIES: u32 = 3;

/// Why a command got no answer.
#[derive(Debug)]
pub enum RconError {
    /// The password cannot be used (empty, too long).
    Password(RconKeyError),
    /// The command cannot be sent (empty, too long, a control character).
    Command(CommandError),
    /// The local UDP socket failed.
    Socket(std::io::Error),
    /// The server's port is closed (an ICMP "port unreachable" came back).
    Unreachable { server: SocketAddr },
    /// No challenge, or no answer to the command, within the time.
    NoAnswer { server: SocketAddr, waited: Duration },
    /// Some parts of the answer came, not all.
    IncompleteAnswer { server: SocketAddr, got: usize, parts: u8, waited: Duration },
    /// The server has no rcon password.
    NoRcon,
    /// The command did not open at the server: the password is not the server's.
    WrongPassword,
    /// Too many rcon datagrams from this address just now.
    Limited,
    /// The server no longer held the challenge (it expired, or was used).
    ChallengeLost,
    /// The answer's parts came but do not make one.
    BadAnswer(AnswerError),
    /// After the command went, a refusal came and no answer. A refusal
    /// carries no MAC (the server sends it to whoever asked, proved or
    /// not), so anyone on the path could have forged it: the command may
    /// have run.
    RefusedAfterSend(RefusalReason),
}

impl std::fmt::Display for RconError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RconError::Password(e) => write!(f, "{e}"),
            RconError::Command(e) => write!(f, "{e}"),
            RconError::Socket(e) => write!(f, "cannot use a UDP socket: {e}"),
            RconError::Unreachable { server } => {
                write!(f, "nothing listens on {server} (is the server running, and is that its game port?)")
            }
            RconError::NoAnswer { server, waited } => {
                write!(f, "no answer from {server} within {} s", seconds(*waited))
            }
            RconError::IncompleteAnswer { server, got, parts, waited } => write!(
                f,
                "only {got} of the {parts} parts of the answer came from {server} within {} s \
                 (the command ran)",
                seconds(*waited)
            ),
            RconError::NoRcon => f.write_str("the server has no remote console (--rcon-password-file)"),
            RconError::WrongPassword => f.write_str("wrong rcon password"),
            RconError::Limited => {
                f.write_str("the server takes only a few rcon tries a second from one address; wait and try again")
            }
            RconError::ChallengeLost => {
                f.write_str("the server no longer knew this command's challenge (too slow, or sent twice); try again")
            }
            RconError::BadAnswer(e) => write!(f, "the server's answer does not check: {e}"),
            RconError::RefusedAfterSend(reason) => write!(
                f,
                "{} (so says a refusal, which carries no proof that the server sent it: if it was forged on the \
                 way, the command may have run)",
                refusal(*reason)
            ),
        }
    }
}

impl std::error::Error for RconError {}

impl From<std::io::Error> for RconError {
    fn from(e: std::io::Error) -> Self {
        RconError::Socket(e)
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0}") } else { format!("{s:.1}") }
}

/// Runs `command` on the server at `server` with the rcon `password`, and
/// returns its output. `timeout` is each wait: for a challenge (asked
/// again up to [`CHALLENGE_RETRIES`] times) and for the whole answer.
pub fn run(server: SocketAddr, password: &str, command: &str, timeout: Duration) -> Result<String, RconError> {
    // Everything that can be refused here is, before a datagram goes.
    rcon::check_command(command).map_err(RconError::Command)?;
    rcon::check_password(password).map_err(RconError::Password)?;
    let local: SocketAddr =
        if server.is_ipv6() { (Ipv6Addr::UNSPECIFIED, 0).into() } else { (Ipv4Addr::UNSPECIFIED, 0).into() };
    let socket = UdpSocket::bind(local)?;
    // Connected: the system drops datagrams from any other address.
    socket.connect(server)?;
    let (challenge, salt) = ask_challenge(&socket, server, timeout)?;
    // Each server's own salt: one guess list does not cover every server.
    let key = RconKey::derive(password, &salt).map_err(RconError::Password)?;
    let packet = Packet::command(&key, challenge, command).map_err(RconError::Command)?;
    socket.send(&packet.encode())?;
    gather_answer(&socket, server, &key, &challenge, timeout)
}

/// What one wait for a datagram brought.
enum Received {
    Packet(Packet),
    /// Something that is no rcon packet (ignored).
    Garbage,
    TimedOut,
}

/// Waits until `deadline` at most for one datagram from the connected server.
fn receive(socket: &UdpSocket, server: SocketAddr, deadline: Instant) -> Result<Received, RconError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Ok(Received::TimedOut);
    }
    socket.set_read_timeout(Some(left))?;
    // One byte over the largest datagram, so that a longer one is seen as
    // too long rather than read cut.
    let mut buf = [0u8; MAX_DATAGRAM_BYTES + 1];
    match socket.recv(&mut buf) {
        Ok(n) => Ok(Packet::parse(&buf[..n]).map_or(Received::Garbage, Received::Packet)),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(Received::TimedOut),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Err(RconError::Unreachable { server }),
        Err(e) => Err(RconError::Socket(e)),
    }
}

/// How long an answer may still come after a refusal to the command
/// (which carries no MAC, and may be forged).
const REFUSAL_GRACE: Duration = Duration::from_millis(500);

fn refusal(reason: RefusalReason) -> RconError {
    match reason {
        RefusalReason::BadMac => RconError::WrongPassword,
        RefusalReason::UnknownChallenge => RconError::ChallengeLost,
        RefusalReason::NoRcon => RconError::NoRcon,
        RefusalReason::Limited => RconError::Limited,
    }
}

fn ask_challenge(
    socket: &UdpSocket,
    server: SocketAddr,
    timeout: Duration,
) -> Result<(Challenge, rcon::Salt), RconError> {
    // Exactly the size of the challenge it asks for (the server refuses
    // any other size).
    let request = Packet::ChallengeRequest.encode();
    for _ in 0..=CHALLENGE_RETRIES {
        socket.send(&request)?;
        let deadline = Instant::now() + timeout;
        loop {
            match receive(socket, server, deadline)? {
                Received::Packet(Packet::Challenge { challenge, salt }) => return Ok((challenge, salt)),
                // Only these two answer a request; the others would be
                // strays of an earlier exchange.
                Received::Packet(Packet::Refused {
                    reason: reason @ (RefusalReason::NoRcon | RefusalReason::Limited),
                }) => {
                    return Err(refusal(reason));
                }
                Received::Packet(_) | Received::Garbage => continue,
                Received::TimedOut => break,
            }
        }
    }
    Err(RconError::NoAnswer { server, waited: timeout * (CHALLENGE_RETRIES + 1) })
}

fn gather_answer(
    socket: &UdpSocket,
    server: SocketAddr,
    key: &RconKey,
    challenge: &Challenge,
    timeout: Duration,
) -> Result<String, RconError> {
    let mut deadline = Instant::now() + timeout;
    let mut parts: Vec<Packet> = Vec::new();
    let mut count: Option<u8> = None;
    let mut refused: Option<RefusalReason> = None;
    loop {
        match receive(socket, server, deadline)? {
            Received::Packet(Packet::Refused { reason }) => {
                // Proof of nothing: a forged refusal must not hide the
                // answer of a command that ran. The genuine answer would
                // come about as soon: wait a little for it.
                if refused.is_none() {
                    refused = Some(reason);
                    deadline = deadline.min(Instant::now() + REFUSAL_GRACE);
                }
                continue;
            }
            Received::Packet(Packet::Answer { challenge: c, part, parts: n, sealed }) => {
                // A part that does not open is not the server's: dropped
                // here, so a forgery cannot take the real part's place.
                let genuine = c == *challenge && rcon::open_answer(key, challenge, part, n, &sealed).is_ok();
                let known = parts.iter().any(|p| matches!(p, Packet::Answer { part: q, .. } if *q == part));
                if !genuine || known || count.is_some_and(|k| k != n) {
                    continue;
                }
                count = Some(n);
                parts.push(Packet::Answer { challenge: c, part, parts: n, sealed });
                if parts.len() == usize::from(n) {
                    return rcon::join_answer(key, challenge, &parts).map_err(RconError::BadAnswer);
                }
            }
            Received::Packet(_) | Received::Garbage => continue,
            Received::TimedOut => {
                if let Some(reason) = refused.filter(|_| count.is_none()) {
                    return Err(RconError::RefusedAfterSend(reason));
                }
                return Err(match count {
                    Some(n) => RconError::IncompleteAnswer { server, got: parts.len(), parts: n, waited: timeout },
                    None => RconError::NoAnswer { server, waited: timeout },
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;
    use std::thread;

    use super::*;

    const PASSWORD: &str = "open sesame";
    /// The fake server's salt.
    const SALT: rcon::Salt = [5; rcon::SALT_BYTES];

    fn key() -> &'static RconKey {
        static KEY: OnceLock<RconKey> = OnceLock::new();
        KEY.get_or_init(|| RconKey::derive(PASSWORD, &SALT).unwrap())
    }

    /// How a fake server behaves.
    #[derive(Clone, Copy)]
    enum Server {
        /// Answers as a server with the password does, echoing the command
        /// `repeat` times.
        Honest {
            repeat: usize,
        },
        /// Ignores the first challenge request (it was "lost").
        LosesFirstRequest,
        /// Sends a forged part before each real one.
        ForgesParts,
        /// A refusal (as one on the path could forge) before the answer.
        RefusalBeforeAnswer,
        NoRcon,
        Silent,
    }

    /// A server speaking rcon from `arena_protocol` alone, on 127.0.0.1, for
    /// `datagrams` datagrams. The real gate's round trip is in arena_fuzz's
    /// tests (this crate does not depend on the server).
    fn serve(behaviour: Server, datagrams: usize) -> SocketAddr {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        thread::spawn(move || {
            let challenge = [42; rcon::CHALLENGE_BYTES];
            let mut buf = [0u8; 2048];
            let mut requests = 0;
            for _ in 0..datagrams {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { return };
                let replies: Vec<Vec<u8>> = match (behaviour, Packet::parse(&buf[..n])) {
                    (Server::Silent, _) => vec![],
                    (Server::NoRcon, _) => vec![Packet::Refused { reason: RefusalReason::NoRcon }.encode()],
                    (Server::LosesFirstRequest, Ok(Packet::ChallengeRequest)) if requests == 0 => {
                        requests += 1;
                        vec![]
                    }
                    (_, Ok(Packet::ChallengeRequest)) => vec![Packet::Challenge { challenge, salt: SALT }.encode()],
                    (_, Ok(Packet::Command { challenge: c, sealed })) => {
                        let opened = rcon::open_command(key(), &c, &sealed).ok().filter(|_| c == challenge);
                        if let Some(command) = opened {
                            let repeat = if let Server::Honest { repeat } = behaviour { repeat } else { 1 };
                            let text = format!("ran: {command}\n").repeat(repeat);
                            let mut out = Vec::new();
                            if let Server::RefusalBeforeAnswer = behaviour {
                                out.push(Packet::Refused { reason: RefusalReason::BadMac }.encode());
                            }
                            for p in rcon::answer_packets(key(), &c, &text) {
                                if let (Server::ForgesParts, Packet::Answer { part, parts, .. }) = (behaviour, &p) {
                                    let forged = Packet::Answer {
                                        challenge: c,
                                        part: *part,
                                        parts: *parts,
                                        sealed: rcon::Sealed {
                                            nonce: [0; rcon::NONCE_BYTES],
                                            bytes: vec![0; 6 + rcon::TAG_BYTES],
                                        },
                                    };
                                    out.push(forged.encode());
                                }
                                out.push(p.encode());
                            }
                            out
                        } else {
                            vec![Packet::Refused { reason: RefusalReason::BadMac }.encode()]
                        }
                    }
                    _ => vec![],
                };
                for reply in replies {
                    let _ = socket.send_to(&reply, from);
                }
            }
        });
        addr
    }

    const WAIT: Duration = Duration::from_millis(2000);

    #[test]
    fn remote_console_client_runs_a_command_and_reads_a_long_answer() {
        let server = serve(Server::Honest { repeat: 1 }, 2);
        assert_eq!(run(server, PASSWORD, "status", WAIT).unwrap(), "ran: status\n");
        let server = serve(Server::Honest { repeat: 400 }, 2);
        let answer = run(server, &format!("  {PASSWORD} "), "kick 3", WAIT).unwrap();
        assert_eq!(answer, "ran: kick 3\n".repeat(400), "several parts, joined");
    }

    #[test]
    fn remote_console_client_reports_refusals_in_plain_words() {
        let server = serve(Server::Honest { repeat: 1 }, 2);
        let e = run(server, "not it", "status", WAIT).unwrap_err();
        assert!(matches!(e, RconError::RefusedAfterSend(RefusalReason::BadMac)), "{e}");
        let said = e.to_string();
        assert!(said.starts_with("wrong rcon password") && said.contains("may have run"), "{said}");
        let server = serve(Server::NoRcon, 1);
        let e = run(server, PASSWORD, "status", WAIT).unwrap_err();
        assert_eq!(e.to_string(), "the server has no remote console (--rcon-password-file)");
    }

    #[test]
    fn remote_console_client_asks_again_and_gives_up_in_time() {
        let server = serve(Server::LosesFirstRequest, 3);
        assert_eq!(run(server, PASSWORD, "status", Duration::from_millis(300)).unwrap(), "ran: status\n");
        let server = serve(Server::Silent, 10);
        let started = Instant::now();
        let e = run(server, PASSWORD, "status", Duration::from_millis(100)).unwrap_err();
        assert!(matches!(e, RconError::NoAnswer { .. }), "{e}");
        assert_eq!(e.to_string(), format!("no answer from {server} within 0.4 s"));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    /// Issue 60: a refusal carries no MAC, so one forged on the path must
    /// not make a command that ran look refused: the answer still wins.
    #[test]
    fn remote_console_client_takes_the_answer_over_a_refusal_before_it() {
        let server = serve(Server::RefusalBeforeAnswer, 2);
        assert_eq!(run(server, PASSWORD, "status", WAIT).unwrap(), "ran: status\n");
    }

    #[test]
    fn remote_console_client_ignores_forged_parts() {
        let server = serve(Server::ForgesParts, 2);
        let answer = run(server, PASSWORD, "status", WAIT).unwrap();
        assert_eq!(answer, "ran: status\n");
    }

    #[test]
    fn remote_console_client_refuses_bad_input_before_sending() {
        // No server at all: nothing is sent, so nothing times out.
        let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(matches!(run(nowhere, "  ", "status", WAIT), Err(RconError::Password(RconKeyError::Empty))));
        assert!(matches!(run(nowhere, PASSWORD, "", WAIT), Err(RconError::Command(CommandError::Empty))));
        assert!(matches!(
            run(nowhere, PASSWORD, "say hi\nquit", WAIT),
            Err(RconError::Command(CommandError::ControlCharacter { at: 6 }))
        ));
        let long = "x".repeat(rcon::MAX_COMMAND_BYTES + 1);
        assert!(matches!(run(nowhere, PASSWORD, &long, WAIT), Err(RconError::Command(CommandError::TooLong { .. }))));
    }
}
