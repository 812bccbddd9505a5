//! Socket I/O off the frame: the client's UDP socket read and written on
//! its own thread, every datagram stamped with the time it came, and
//! datagrams sent at the time they were meant to leave (a command at its
//! tick's time, not when the next frame happens). The link conditioner sits
//! here, between the socket and everything else.
//!
//! The thread only moves bytes and times: netcode, renet and Bevy keep their
//! state on the game's thread, which takes the datagrams that came since
//! its last frame, each with its arrival time, and hands over the ones to
//! send with their departure times.
//!
//! An app whose time is stepped by hand (tests, `arena lab`) has no thread:
//! the socket is read and written once a frame, on that frame's clock, so a
//! run stays repeatable.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use arena_protocol::datagram::MAX_DATAGRAM_BYTES;
use arena_udp::UdpSocket;
// std's clock panics in a browser; web-time's is std's natively.
use web_time::Instant;

use crate::conditioner::{LinkConditioner, LinkConditions};

/// Most datagrams waiting for the game's thread (over 30 s of snapshots at
/// 128 Hz); beyond it the oldest are dropped and counted.
pub const MAX_ARRIVED: usize = 4096;
/// Most datagrams waiting for their departure time.
pub const MAX_LEAVING: usize = 1024;
/// Command datagrams whose departures are remembered (for the round trip
/// and the gaps between them): four seconds at 128 Hz.
pub const DEPARTURES_KEPT: usize = 512;
/// Largest datagram read whole; anything longer is cut here and refused
/// by the datagram guard as too large.
const RECEIVE_BYTES: usize = 2048;
/// Longest the I/O thread sleeps before looking at its queues again: how
/// late a departure the game's thread added while it slept can leave.
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// Shortest sleep (a zero read timeout would block for ever).
const MIN_SLEEP: Duration = Duration::from_micros(100);
/// Longest a send may wait for room in a full socket buffer before the
/// datagram is lost (as the network would lose it).
const SEND_TIMEOUT: Duration = Duration::from_millis(2);

/// Where the socket is read and written. As a resource, it decides for the
/// next connection; without it, an app whose time runs by itself gets the
/// thread and one stepped by hand reads once a frame.
#[derive(bevy::prelude::Resource, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// Once a frame, on the frame's clock: for apps stepped by hand.
    #[default]
    Frame,
    /// On its own thread, in real time.
    Thread,
    /// No thread, but whoever steps the app by hand also calls
    /// [`Link::pump`] between its frames, as the thread would run: arrivals
    /// stamped between frames, departures at their time (the lab's stand-in
    /// for the thread on a clock stepped by hand).
    Pumped,
}

impl IoMode {
    /// Whether datagrams move between frames (departures can wait for their time).
    pub fn between_frames(self) -> bool {
        self != IoMode::Frame
    }
}

/// A datagram that came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// When it came (after the conditioner's delay), on the app's real clock.
    pub at: Duration,
    pub from: SocketAddr,
    pub bytes: Vec<u8>,
}

/// A datagram for the server, waiting for its departure time.
#[derive(Debug)]
struct Leaving {
    at: Duration,
    bytes: Vec<u8>,
    /// The newest command it carries, if it carries commands.
    newest_command: Option<u32>,
}

/// What went through the socket since connecting.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkCounters {
    /// UDP payload bytes and datagrams to and from the server.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Datagrams dropped because the game's thread did not take them in
    /// time ([`MAX_ARRIVED`]) or too many waited to leave ([`MAX_LEAVING`]).
    pub overflowed: u64,
}

/// When a command datagram left: the newest command in it, the time it was
/// to leave (the link's delay counts from it), and the time it did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Departure {
    pub newest_command: u32,
    pub at: Duration,
    pub released: Duration,
}

/// The way to the server through a TURN relay: datagrams to the server go
/// to `turn` as ChannelData on `channel`, and ChannelData on that channel
/// from `turn` is the server's (the relay bound the channel to the server's
/// address as the relay sees it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayRoute {
    pub turn: SocketAddr,
    pub channel: u16,
}

/// Everything both threads touch.
struct LinkState {
    server: SocketAddr,
    /// Through a relay, once one carries the connection.
    route: Option<RelayRoute>,
    conditioner: LinkConditioner,
    arrived: VecDeque<Arrival>,
    /// Ordered by departure time.
    leaving: VecDeque<Leaving>,
    departures: VecDeque<Departure>,
    counters: LinkCounters,
    /// A socket error that ended the I/O thread.
    error: Option<io::Error>,
}

impl LinkState {
    /// A datagram read from the socket at `now`.
    fn take_in(&mut self, now: Duration, from: SocketAddr, bytes: &[u8]) {
        let relayed = match self.route {
            Some(route) if from == route.turn => {
                arena_turn::parse_channel_data(bytes).filter(|(channel, _)| *channel == route.channel)
            }
            _ => None,
        };
        if let Some((_, inner)) = relayed {
            // The server's datagram, unwrapped: from here on as if direct
            // (its ChannelData header counted with it: what the wire carried).
            let inner = inner.to_vec();
            self.counters.bytes_received += (bytes.len() - inner.len()) as u64;
            return self.take_in(now, self.server, &inner);
        }
        if from == self.server {
            self.counters.bytes_received += bytes.len() as u64;
            self.counters.datagrams_received += 1;
            if bytes.len() > MAX_DATAGRAM_BYTES {
                // Refused by the guard anyway: straight through, cut short,
                // so that it neither waits in the conditioner nor takes
                // memory for what it claims to be.
                self.arrive(Arrival { at: now, from, bytes: bytes[..=MAX_DATAGRAM_BYTES].to_vec() });
            } else if self.conditioner.incoming.len() >= MAX_ARRIVED {
                // A flood held back by a long fake latency: bounded too.
                self.counters.overflowed += 1;
            } else {
                self.conditioner.receive(now, bytes.to_vec());
            }
        } else {
            // Masters' answers (hole punching) and strangers: not the link
            // to the server, so not conditioned. The game's thread sorts them.
            self.arrive(Arrival { at: now, from, bytes: bytes.to_vec() });
        }
    }

    fn arrive(&mut self, arrival: Arrival) {
        if self.arrived.len() >= MAX_ARRIVED {
            self.arrived.pop_front();
            self.counters.overflowed += 1;
        }
        self.arrived.push_back(arrival);
    }

    /// Moves whatever is due at `now`: datagrams through the conditioner to
    /// the game's thread (stamped with when they were due), departures into
    /// the conditioner, and the conditioner's output into the socket.
    fn release(&mut self, socket: &UdpSocket, now: Duration) -> io::Result<()> {
        while let Some((at, bytes)) = self.conditioner.incoming.pop_due_at(now) {
            let from = self.server;
            self.arrive(Arrival { at, from, bytes });
        }
        while self.leaving.front().is_some_and(|l| l.at <= now) {
            let Some(leaving) = self.leaving.pop_front() else { break };
            if let Some(newest_command) = leaving.newest_command {
                if self.departures.len() >= DEPARTURES_KEPT {
                    self.departures.pop_front();
                }
                self.departures.push_back(Departure { newest_command, at: leaving.at, released: now });
            }
            // The conditioner's delay counts from the departure time, so a
            // datagram released a little late by a sleeping thread still
            // takes exactly the delay asked for.
            self.conditioner.send(leaving.at, leaving.bytes);
        }
        while let Some(datagram) = self.conditioner.outgoing.pop_due(now) {
            self.counters.datagrams_sent += 1;
            let sent = match self.route {
                Some(route) => {
                    let framed = arena_turn::frame_channel_data(route.channel, &datagram);
                    self.counters.bytes_sent += framed.len() as u64;
                    socket.send_to(&framed, route.turn)
                }
                None => {
                    self.counters.bytes_sent += datagram.len() as u64;
                    socket.send_to(&datagram, self.server)
                }
            };
            match sent {
                Ok(_) => {}
                // A full socket buffer loses the datagram, as the network would.
                Err(e) if arena_udp::is_transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The next time something falls due, if anything waits.
    fn next_due(&self) -> Option<Duration> {
        [self.conditioner.incoming.next_due(), self.conditioner.outgoing.next_due(), self.leaving.front().map(|l| l.at)]
            .into_iter()
            .flatten()
            .min()
    }

    fn schedule(&mut self, leaving: Leaving) {
        if self.leaving.len() >= MAX_LEAVING {
            self.counters.overflowed += 1;
            return;
        }
        // Departures come almost always in order: search from the back.
        let index = self.leaving.iter().rposition(|l| l.at <= leaving.at).map_or(0, |i| i + 1);
        self.leaving.insert(index, leaving);
    }
}

fn lock(state: &Mutex<LinkState>) -> MutexGuard<'_, LinkState> {
    // A panic on the other thread leaves plain queues behind: keep using them.
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The I/O thread and how to stop it.
struct IoThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for IoThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// The client's socket, its conditioner and (in real time) its thread.
pub struct Link {
    socket: UdpSocket,
    state: Arc<Mutex<LinkState>>,
    mode: IoMode,
    /// Where the app's clock starts, for the thread.
    epoch: Arc<OnceLock<Instant>>,
    /// The newest command datagram's departure: commands never overtake.
    last_departure: Duration,
    /// Kept for its `Drop`, which stops and joins the thread.
    _thread: Option<IoThread>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("mode", &self.mode).finish()
    }
}

impl Link {
    /// Opens a socket for talking to `server` through a conditioner with
    /// these conditions and seed. With [`IoMode::Thread`], a thread reads
    /// and writes it once [`Link::start_clock`] has said where the app's
    /// clock starts.
    pub fn open(server: SocketAddr, conditions: LinkConditions, seed: u64, mode: IoMode) -> io::Result<Self> {
        let any: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any)?;
        let state = Arc::new(Mutex::new(LinkState {
            server,
            route: None,
            conditioner: LinkConditioner::new(conditions, seed),
            arrived: VecDeque::new(),
            leaving: VecDeque::new(),
            departures: VecDeque::new(),
            counters: LinkCounters::default(),
            error: None,
        }));
        let epoch = Arc::new(OnceLock::new());
        let thread = match mode {
            IoMode::Frame | IoMode::Pumped => {
                socket.set_nonblocking(true)?;
                None
            }
            IoMode::Thread => {
                // Blocking reads with a timeout on the thread; sends (from
                // either thread) give up on a full buffer within a moment.
                socket.set_write_timeout(Some(SEND_TIMEOUT))?;
                let reader = socket.try_clone()?;
                let stop = Arc::new(AtomicBool::new(false));
                let (thread_state, thread_stop, thread_epoch) = (state.clone(), stop.clone(), epoch.clone());
                let handle = std::thread::Builder::new()
                    .name("arena-client-io".into())
                    .spawn(move || run(&reader, &thread_state, &thread_stop, &thread_epoch))?;
                Some(IoThread { stop, handle: Some(handle) })
            }
        };
        Ok(Self { socket, state, mode, epoch, last_departure: Duration::ZERO, _thread: thread })
    }

    /// Where the app's real clock starts (Bevy's `Time<Real>` counts from
    /// its first update): the thread's times are counted from it, so that
    /// they read on the app's clock. Only the first call counts; the thread
    /// touches the socket only after it.
    pub fn start_clock(&self, epoch: Instant) {
        let _ = self.epoch.set(epoch);
    }

    pub fn mode(&self) -> IoMode {
        self.mode
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Reads and writes the socket at `now`, when no thread does.
    pub fn pump(&mut self, now: Duration) -> io::Result<()> {
        if self.mode == IoMode::Thread {
            return match lock(&self.state).error.take() {
                Some(e) => Err(e),
                None => Ok(()),
            };
        }
        let mut buffer = [0u8; RECEIVE_BYTES];
        let mut state = lock(&self.state);
        loop {
            match self.socket.recv_from(&mut buffer) {
                Ok((len, from)) => state.take_in(now, from, &buffer[..len]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if arena_udp::is_transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
        state.release(&self.socket, now)
    }

    /// The datagrams that came since the last call, in the order they came.
    pub fn take_arrivals(&mut self) -> VecDeque<Arrival> {
        std::mem::take(&mut lock(&self.state).arrived)
    }

    /// Sends `bytes` to the server through the conditioner at `at`;
    /// `newest_command` is the newest command it carries, if any (command
    /// datagrams never leave before an earlier one).
    pub fn send_at(&mut self, at: Duration, bytes: Vec<u8>, newest_command: Option<u32>) {
        let at = if newest_command.is_some() {
            self.last_departure = at.max(self.last_departure);
            self.last_departure
        } else {
            at
        };
        lock(&self.state).schedule(Leaving { at, bytes, newest_command });
    }

    /// Sends `bytes` to `to` at once, past the conditioner (to a master, or
    /// the last word to the server).
    pub fn send_direct(&self, to: SocketAddr, bytes: &[u8]) {
        let _ = self.socket.send_to(bytes, to);
    }

    pub fn counters(&self) -> LinkCounters {
        lock(&self.state).counters
    }

    /// Sends the server's datagrams through a relay from now on (`None`:
    /// straight to the server again).
    pub fn set_route(&self, route: Option<RelayRoute>) {
        lock(&self.state).route = route;
    }

    pub fn route(&self) -> Option<RelayRoute> {
        lock(&self.state).route
    }

    pub fn conditions(&self) -> LinkConditions {
        lock(&self.state).conditioner.conditions
    }

    pub fn set_conditions(&mut self, conditions: LinkConditions) {
        lock(&self.state).conditioner.conditions = conditions.clamped();
    }

    /// Datagrams the conditioner has dropped: (outgoing, incoming).
    pub fn conditioner_drops(&self) -> (u64, u64) {
        let state = lock(&self.state);
        (state.conditioner.outgoing.dropped, state.conditioner.incoming.dropped)
    }

    /// When the command for `tick` first left: the departure of the first
    /// command datagram whose newest command is `tick` or later.
    pub fn departure_of(&self, tick: u32) -> Option<Duration> {
        let state = lock(&self.state);
        state.departures.iter().find(|d| !arena_sim::tick_after(tick, d.newest_command)).map(|d| d.at)
    }

    /// The command datagrams' departures remembered, oldest first.
    pub fn departures(&self) -> Vec<Departure> {
        lock(&self.state).departures.iter().copied().collect()
    }
}

/// The I/O thread: sleeps until a datagram comes or something falls due,
/// then moves what is due.
fn run(socket: &UdpSocket, state: &Mutex<LinkState>, stop: &AtomicBool, epoch: &OnceLock<Instant>) {
    let mut buffer = [0u8; RECEIVE_BYTES];
    // Nothing is sent before the first frame, so nothing can come either.
    let epoch = loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match epoch.get() {
            Some(epoch) => break *epoch,
            None => std::thread::sleep(MAX_SLEEP),
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let now = epoch.elapsed();
        let wait = {
            let mut state = lock(state);
            if let Err(e) = state.release(socket, now) {
                state.error = Some(e);
                return;
            }
            state.next_due().map_or(MAX_SLEEP, |due| due.saturating_sub(now)).clamp(MIN_SLEEP, MAX_SLEEP)
        };
        if let Err(e) = socket.set_read_timeout(Some(wait)) {
            lock(state).error = Some(e);
            return;
        }
        match socket.recv_from(&mut buffer) {
            Ok((len, from)) => lock(state).take_in(epoch.elapsed(), from, &buffer[..len]),
            Err(e) if arena_udp::is_transient(&e) => {}
            Err(e) => {
                lock(state).error = Some(e);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A link in frame mode to a plain socket standing in for the server.
    fn pair(conditions: LinkConditions, mode: IoMode) -> (Link, UdpSocket, Instant) {
        let server = UdpSocket::bind("127.0.0.1:0").expect("a socket");
        let epoch = Instant::now();
        let link = Link::open(server.local_addr().expect("an address"), conditions, 1, mode).expect("a link");
        link.start_clock(epoch);
        (link, server, epoch)
    }

    #[test]
    fn departures_leave_at_their_time_in_order_and_are_remembered() {
        let (mut link, server, _) = pair(LinkConditions::OFF, IoMode::Frame);
        link.send_at(10 * MS, vec![2], Some(100));
        link.send_at(5 * MS, vec![1], Some(101)); // asked earlier than the last: not before it
        link.send_at(7 * MS, vec![3], None); // not a command: at its own time
        server.set_read_timeout(Some(Duration::from_secs(1))).expect("a timeout");
        let mut buffer = [0u8; 16];
        link.pump(9 * MS).expect("pumps");
        let len = server.recv_from(&mut buffer).expect("a datagram").0;
        assert_eq!(&buffer[..len], &[3], "only the non-command datagram is due at 9 ms");
        link.pump(10 * MS).expect("pumps");
        let len = server.recv_from(&mut buffer).expect("a datagram").0;
        assert_eq!(&buffer[..len], &[2]);
        let len = server.recv_from(&mut buffer).expect("a datagram").0;
        assert_eq!(&buffer[..len], &[1]);
        assert_eq!(link.departures()[0].released, 10 * MS);
        assert_eq!(link.departure_of(99), Some(10 * MS), "the first datagram carrying it");
        assert_eq!(link.departure_of(100), Some(10 * MS));
        assert_eq!(link.departure_of(101), Some(10 * MS));
        assert_eq!(link.departure_of(102), None);
    }

    #[test]
    fn arrivals_carry_the_time_the_conditioner_let_them_through() {
        let conditions = LinkConditions { latency_ms: 40.0, ..LinkConditions::OFF };
        let (mut link, server, _) = pair(conditions, IoMode::Frame);
        let client = link.local_addr().expect("an address");
        let client = SocketAddr::from(([127, 0, 0, 1], client.port()));
        server.send_to(&[7], client).expect("sent");
        std::thread::sleep(Duration::from_millis(20));
        link.pump(100 * MS).expect("pumps");
        assert!(link.take_arrivals().is_empty(), "held for half the round trip");
        link.pump(200 * MS).expect("pumps");
        let arrivals = link.take_arrivals();
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].at, 120 * MS, "stamped when it was due, not when the frame came");
        assert_eq!(link.counters().datagrams_received, 1);
    }

    #[test]
    fn the_thread_stamps_arrivals_as_they_come_between_frames() {
        let (mut link, server, epoch) = pair(LinkConditions::OFF, IoMode::Thread);
        let client = SocketAddr::from(([127, 0, 0, 1], link.local_addr().expect("an address").port()));
        let mut sent_at = Vec::new();
        for i in 0..5u8 {
            std::thread::sleep(Duration::from_millis(30));
            sent_at.push(epoch.elapsed());
            server.send_to(&[i], client).expect("sent");
        }
        std::thread::sleep(Duration::from_millis(30));
        // One "frame" after all of them: each still has its own time.
        let arrivals = link.take_arrivals();
        assert_eq!(arrivals.len(), 5);
        for (arrival, sent) in arrivals.iter().zip(sent_at) {
            let late = arrival.at.saturating_sub(sent);
            assert!(arrival.at >= sent && late < Duration::from_millis(15), "stamped {late:?} after it was sent");
        }
        // And a departure goes at its time with no frame to send it.
        let at = epoch.elapsed() + Duration::from_millis(40);
        link.send_at(at, vec![9], Some(1));
        server.set_read_timeout(Some(Duration::from_secs(1))).expect("a timeout");
        let mut buffer = [0u8; 4];
        server.recv_from(&mut buffer).expect("the departure came");
        let left = epoch.elapsed();
        assert!(left >= at && left < at + Duration::from_millis(15), "left {:?} after its time", left - at);
    }

    #[test]
    fn a_stalled_game_thread_loses_the_oldest_datagrams_not_memory() {
        let (mut link, server, _) = pair(LinkConditions::OFF, IoMode::Frame);
        let stranger = SocketAddr::from(([127, 0, 0, 1], 9));
        {
            let mut state = lock(&link.state);
            for i in 0..MAX_ARRIVED + 10 {
                state.take_in(Duration::ZERO, stranger, &(i as u32).to_le_bytes());
            }
        }
        assert_eq!(link.counters().overflowed, 10);
        // One from the server too large to be anything: straight through
        // (pushing out one more of the oldest), cut short.
        lock(&link.state).take_in(Duration::ZERO, server.local_addr().expect("an address"), &[0u8; 2000]);
        assert_eq!(link.counters().overflowed, 11);
        let arrivals = link.take_arrivals();
        assert_eq!(arrivals.len(), MAX_ARRIVED);
        assert_eq!(arrivals[0].bytes, 11u32.to_le_bytes());
        assert_eq!(arrivals.back().map(|a| a.bytes.len()), Some(MAX_DATAGRAM_BYTES + 1));
        for i in 0..MAX_LEAVING + 3 {
            link.send_at(Duration::from_secs(60), vec![0], Some(i as u32));
        }
        assert_eq!(link.counters().overflowed, 14);
    }
}
