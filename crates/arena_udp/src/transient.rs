//! The errors a UDP socket reports that say nothing about the socket
//! itself, which a loop shrugs off instead of stopping: each loses one
//! datagram at most. What a caller does with `WouldBlock` (stop reading for
//! now, or carry on) stays the caller's.

use std::io;

/// WSAEMSGSIZE: Windows' way of saying a datagram was longer than the
/// buffer (other systems cut it silently). Anyone can send one: it must
/// not end a loop.
const WSAEMSGSIZE: i32 = 10040;

/// Whether `e` is one to shrug off: nothing to read yet or a read timeout,
/// a signal, an ICMP error of an earlier send (Windows reports those on
/// later reads, and a full socket buffer on sends), a datagram too long
/// for the buffer.
pub fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) || e.raw_os_error() == Some(WSAEMSGSIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_datagrams_are_shrugged_off_and_broken_sockets_are_not() {
        for kind in [io::ErrorKind::WouldBlock, io::ErrorKind::ConnectionReset, io::ErrorKind::Interrupted] {
            assert!(is_transient(&io::Error::from(kind)), "{kind:?}");
        }
        assert!(is_transient(&io::Error::from_raw_os_error(WSAEMSGSIZE)));
        assert!(!is_transient(&io::Error::from(io::ErrorKind::PermissionDenied)));
        assert!(!is_transient(&io::Error::from(io::ErrorKind::AddrNotAvailable)));
    }
}
