//! Fuzz targets of the browsers' endpoint (`arena_webtransport`) and the
//! framing both ends use (`arena_protocol::web_frame`): a stream's bytes
//! cut anywhere into frames, and strangers' HTTP request heads for the
//! page.

use arena_protocol::web_frame::{FRAME_HEADER_BYTES, FrameReader, MAX_FRAME_BYTES, frame};
use arena_webtransport::{Request, file_in_folder, parse_request};

use crate::target::Target;

/// A stream's bytes, cut into pieces where the input says: every frame
/// read is 1 to [`MAX_FRAME_BYTES`] bytes, the reader never holds more than
/// one frame, nothing is read after an error, and frames written by
/// `frame` read back whole whatever the cuts.
pub struct WebFrames;

impl Target for WebFrames {
    fn name(&self) -> &'static str {
        "web_frames"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut stream = vec![3u8, 7];
        stream.extend(frame(&[0xAB; 1078]).unwrap_or_default());
        stream.extend(frame(&[1, 2, 3]).unwrap_or_default());
        vec![stream, vec![0, 0, 0, 0], vec![1, 0xFF, 0xFF, 1, 2, 3], vec![2, 1, 0, 5, 1, 2, 3, 4, 5]]
    }

    fn run(&mut self, input: &[u8]) {
        let Some((&cut, rest)) = input.split_first() else { return };
        // Pieces of 1 to 256 bytes, as the network cuts a stream.
        let piece = usize::from(cut) + 1;
        let mut reader = FrameReader::default();
        let mut frames = 0usize;
        let mut broken = false;
        for chunk in rest.chunks(piece) {
            let result = reader.push(chunk, |f| {
                assert!(!f.is_empty() && f.len() <= MAX_FRAME_BYTES, "a frame of {} bytes", f.len());
                frames += 1;
            });
            assert!(reader.pending_bytes() <= FRAME_HEADER_BYTES + MAX_FRAME_BYTES);
            if broken {
                assert!(result.is_err(), "read on after an error");
            }
            broken |= result.is_err();
        }
        // The same bytes as frames of our own: each comes back whole.
        let datagrams: Vec<&[u8]> = rest.chunks(piece.min(MAX_FRAME_BYTES)).collect();
        let stream: Vec<u8> = datagrams.iter().flat_map(|d| frame(d).unwrap_or_default()).collect();
        let mut reader = FrameReader::default();
        let mut back: Vec<Vec<u8>> = Vec::new();
        for chunk in stream.chunks(usize::from(cut % 7) + 1) {
            let pushed = reader.push(chunk, |f| back.push(f.to_vec()));
            assert!(pushed.is_ok(), "our own frames refused");
        }
        assert_eq!(back.len(), datagrams.len());
        assert!(back.iter().zip(&datagrams).all(|(a, b)| a.as_slice() == *b));
        let _ = frames;
    }
}

/// A stranger's request head to the page: refused or a file inside the
/// folder (no `..`, no hidden file, no escape), never a panic.
pub struct PageRequests;

impl Target for PageRequests {
    fn name(&self) -> &'static str {
        "page_requests"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        [
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: gzip",
            "GET /arena_bg.wasm HTTP/1.1",
            "HEAD /web-endpoint?x HTTP/1.0",
            "GET /../etc/passwd HTTP/1.1",
            "GET /a/./b HTTP/1.1\r\nX: y",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(Request::File { path, .. }) = parse_request(input) {
            assert!(!path.is_empty() && !path.starts_with('/') && !path.starts_with('.'), "{path:?}");
            for part in path.split('/') {
                assert!(!part.is_empty() && part != ".." && part != "." && !part.starts_with('.'), "{path:?}");
                assert!(part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')), "{path:?}");
            }
        }
        let _ = file_in_folder(&String::from_utf8_lossy(input));
    }
}
