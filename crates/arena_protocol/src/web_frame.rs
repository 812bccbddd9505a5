//! How a netcode datagram crosses WebTransport: as a datagram when it fits
//! the session's limit, otherwise as a frame on the one unidirectional
//! stream each side opens. Both ends follow these rules: the server's
//! endpoint (`arena_webtransport`), its native client link, and the page
//! (`arena_view`'s WebTransport link), which hands its stream's bytes to the
//! same [`FrameReader`].
//!
//! Why a stream at all: Chromium drops browser-to-server datagrams over
//! [`BROWSER_DATAGRAM_LIMIT`] bytes without an error, and netcode's
//! connection request is 1078 bytes; a server's bundle (up to 1300 bytes of
//! payload) can exceed what QUIC's path allows the other way. netcode
//! orders nothing and tolerates a packet that comes late, so the stream's
//! ordering costs only the rare large packet.
//!
//! A frame is a 2-byte big-endian length, then that many bytes: one
//! netcode datagram, 1 to [`MAX_FRAME_BYTES`] bytes. Anything else (a zero
//! length, a longer one) is a broken stream: the reader says so and the
//! stream is dropped, never a buffer grown to fit it.

use crate::datagram::MAX_DATAGRAM_BYTES;

/// The largest datagram Chromium sends from a page (Blink's
/// `max_datagram_size_`, never raised after the session opens).
pub const BROWSER_DATAGRAM_LIMIT: usize = 1024;
/// The longest frame: netcode's largest datagram.
pub const MAX_FRAME_BYTES: usize = MAX_DATAGRAM_BYTES;
/// A frame's length prefix.
pub const FRAME_HEADER_BYTES: usize = 2;

/// Which way a datagram of `len` bytes goes on a session whose datagrams
/// may be at most `datagram_limit` bytes (`None`: datagrams are not
/// available, so everything goes on the stream).
pub fn fits_datagram(len: usize, datagram_limit: Option<usize>) -> bool {
    datagram_limit.is_some_and(|limit| len <= limit)
}

/// A datagram as one stream frame; `None` for an empty one or one longer
/// than [`MAX_FRAME_BYTES`] (netcode never sends either).
pub fn frame(datagram: &[u8]) -> Option<Vec<u8>> {
    if datagram.is_empty() || datagram.len() > MAX_FRAME_BYTES {
        return None;
    }
    let len = u16::try_from(datagram.len()).ok()?;
    let mut framed = Vec::with_capacity(FRAME_HEADER_BYTES + datagram.len());
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(datagram);
    Some(framed)
}

/// Why a stream's bytes are not frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A frame said it was empty.
    Empty,
    /// A frame said it was longer than [`MAX_FRAME_BYTES`].
    TooLong(usize),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Empty => write!(f, "an empty frame"),
            FrameError::TooLong(len) => write!(f, "a frame of {len} bytes (at most {MAX_FRAME_BYTES})"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Frames out of a stream's bytes, as they come in pieces of any size. It
/// holds at most one frame's bytes ([`FRAME_HEADER_BYTES`] +
/// [`MAX_FRAME_BYTES`]); after an error it takes nothing more.
#[derive(Debug, Default)]
pub struct FrameReader {
    pending: Vec<u8>,
    broken: Option<FrameError>,
}

impl FrameReader {
    /// Takes `bytes` from the stream and calls `each` with every frame they
    /// complete, in order. The first error ends the stream: it is returned
    /// now and on every later call, and nothing after it is read.
    pub fn push(&mut self, mut bytes: &[u8], mut each: impl FnMut(&[u8])) -> Result<(), FrameError> {
        if let Some(error) = self.broken {
            return Err(error);
        }
        while !bytes.is_empty() {
            // The header first, then the body it announces.
            let want = match self.announced() {
                None => FRAME_HEADER_BYTES - self.pending.len(),
                Some(len) => FRAME_HEADER_BYTES + len - self.pending.len(),
            };
            let take = want.min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            match self.announced() {
                None => {}
                Some(0) => return Err(self.break_with(FrameError::Empty)),
                Some(len) if len > MAX_FRAME_BYTES => return Err(self.break_with(FrameError::TooLong(len))),
                Some(len) if self.pending.len() == FRAME_HEADER_BYTES + len => {
                    each(&self.pending[FRAME_HEADER_BYTES..]);
                    self.pending.clear();
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Bytes held of a frame not yet complete.
    pub fn pending_bytes(&self) -> usize {
        self.pending.len()
    }

    fn announced(&self) -> Option<usize> {
        match self.pending[..] {
            [a, b, ..] => Some(usize::from(u16::from_be_bytes([a, b]))),
            _ => None,
        }
    }

    fn break_with(&mut self, error: FrameError) -> FrameError {
        self.broken = Some(error);
        self.pending = Vec::new();
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(reader: &mut FrameReader, pieces: &[&[u8]]) -> Result<Vec<Vec<u8>>, FrameError> {
        let mut out = Vec::new();
        for piece in pieces {
            reader.push(piece, |f| out.push(f.to_vec()))?;
        }
        Ok(out)
    }

    #[test]
    fn frames_come_back_whole_however_the_stream_cuts_them() {
        let request = vec![7u8; 1078];
        let small = vec![1u8, 2, 3];
        let mut stream = frame(&request).unwrap();
        stream.extend(frame(&small).unwrap());
        for cut in [1, 2, 3, 500, 1079, 1080, 1081, stream.len()] {
            let mut reader = FrameReader::default();
            let frames = read_all(&mut reader, &[&stream[..cut], &stream[cut..]]).unwrap();
            assert_eq!(frames, vec![request.clone(), small.clone()], "cut at {cut}");
            assert_eq!(reader.pending_bytes(), 0);
        }
        // One byte at a time too.
        let mut reader = FrameReader::default();
        let pieces: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(read_all(&mut reader, &pieces).unwrap().len(), 2);
    }

    #[test]
    fn a_broken_stream_is_refused_for_good_and_holds_nothing() {
        let mut reader = FrameReader::default();
        assert_eq!(read_all(&mut reader, &[&[0xFF, 0xFF, 1, 2]]), Err(FrameError::TooLong(65_535)));
        assert_eq!(reader.pending_bytes(), 0);
        // Even a good frame after it is not read.
        assert_eq!(read_all(&mut reader, &[&frame(&[1]).unwrap()]), Err(FrameError::TooLong(65_535)));
        let mut reader = FrameReader::default();
        assert_eq!(read_all(&mut reader, &[&[0, 0]]), Err(FrameError::Empty));
    }

    #[test]
    fn what_crosses_as_a_datagram_and_what_as_a_frame() {
        assert!(fits_datagram(1024, Some(BROWSER_DATAGRAM_LIMIT)));
        assert!(!fits_datagram(1078, Some(BROWSER_DATAGRAM_LIMIT)));
        assert!(!fits_datagram(10, None));
        assert!(frame(&[]).is_none());
        assert!(frame(&vec![0; MAX_FRAME_BYTES + 1]).is_none());
        assert_eq!(frame(&vec![0; MAX_FRAME_BYTES]).unwrap().len(), MAX_FRAME_BYTES + 2);
    }
}
