//! A tail-keeping byte buffer: the last `capacity` bytes of a stream and how many bytes it had.

use std::collections::VecDeque;

/// Keeps the last `capacity` bytes pushed into it, so memory stays bounded whatever the
/// stream's length; [`TailBuffer::total`] counts every byte ever pushed.
#[derive(Debug, Clone)]
pub struct TailBuffer {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl TailBuffer {
    /// An empty buffer keeping at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        TailBuffer {
            bytes: VecDeque::new(),
            capacity,
            total: 0,
        }
    }

    /// Appends `chunk`, dropping the oldest bytes beyond the capacity.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if chunk.len() >= self.capacity {
            self.bytes.clear();
            self.bytes.extend(&chunk[chunk.len() - self.capacity..]);
            return;
        }
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    /// Bytes pushed in total, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether bytes were dropped from the head.
    pub fn is_truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes, oldest first.
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes.into()
    }
}

/// A stream captured as its first `head` bytes and its last `tail` bytes (never overlapping),
/// its size in bytes and lines, and, once it outgrows both, every byte spilled to a file.
#[derive(Debug)]
pub struct HeadTail {
    head: Vec<u8>,
    head_capacity: usize,
    tail: TailBuffer,
    lines: u64,
    spill_path: Option<std::path::PathBuf>,
    spill: Option<std::fs::File>,
    spilled: bool,
}

impl HeadTail {
    /// Keeps `head` bytes from the start and `tail` from the end; with `spill_path`, the whole
    /// stream is written there once it is longer than `head + tail` (never created otherwise).
    pub fn new(head: usize, tail: usize, spill_path: Option<std::path::PathBuf>) -> Self {
        HeadTail {
            head: Vec::new(),
            head_capacity: head,
            tail: TailBuffer::new(tail),
            lines: 0,
            spill_path,
            spill: None,
            spilled: false,
        }
    }

    /// Appends `chunk`. A spill file that cannot be written is dropped (the capture goes on).
    pub fn push(&mut self, chunk: &[u8]) {
        use std::io::Write;
        self.lines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        let room = self.head_capacity - self.head.len();
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        let overflows = self.tail.bytes.len() + rest.len() > self.tail.capacity;
        if overflows && !self.spilled {
            self.spilled = true;
            self.spill = self.spill_path.as_ref().and_then(|p| {
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(p)
                    .ok()?;
                let (a, b) = self.tail.bytes.as_slices();
                file.write_all(&self.head).ok()?;
                file.write_all(a).ok()?;
                file.write_all(b).ok()?;
                Some(file)
            });
        }
        if let Some(file) = &mut self.spill {
            if file.write_all(rest).is_err() {
                self.spill = None;
            }
        }
        self.tail.push(rest);
    }

    /// The first bytes pushed (up to the head's size).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Bytes pushed in total.
    pub fn total(&self) -> u64 {
        self.head.len() as u64 + self.tail.total()
    }

    /// Newline characters pushed in total.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether bytes between the head and the tail were dropped.
    pub fn is_truncated(&self) -> bool {
        self.tail.is_truncated()
    }

    /// Whether the whole stream is in the spill file.
    pub fn is_spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// `(head, tail)`: the whole stream is their concatenation unless [`HeadTail::is_truncated`].
    pub fn into_parts(self) -> (Vec<u8>, Vec<u8>) {
        (self.head, self.tail.into_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail() {
        // (chunks pushed, capacity, kept bytes, total)
        type Case<'a> = (&'a [&'a [u8]], usize, &'a [u8], u64);
        let cases: &[Case] = &[
            (&[b"abc", b"def"], 4, b"cdef", 6),
            (&[b"abcdefgh"], 3, b"fgh", 8),
            (&[b"ab"], 4, b"ab", 2),
            (&[b"ab", b"", b"cdefg", b"h"], 5, b"defgh", 8),
            (&[], 4, b"", 0),
        ];
        for (chunks, cap, expected, total) in cases {
            let mut buf = TailBuffer::new(*cap);
            for chunk in *chunks {
                buf.push(chunk);
            }
            assert_eq!(buf.total(), *total);
            assert_eq!(buf.is_truncated(), *total > expected.len() as u64);
            assert_eq!(buf.into_vec(), expected.to_vec());
        }
    }

    #[test]
    fn head_tail_keeps_both_ends_and_spills_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short");
        let mut cap = HeadTail::new(3, 4, Some(short.clone()));
        cap.push(b"ab\n");
        cap.push(b"cd\n");
        assert_eq!(
            (cap.total(), cap.lines(), cap.is_truncated()),
            (6, 2, false)
        );
        assert!(!short.exists());
        assert_eq!(cap.into_parts(), (b"ab\n".to_vec(), b"cd\n".to_vec()));

        let long = dir.path().join("long");
        let mut cap = HeadTail::new(3, 4, Some(long.clone()));
        for chunk in [&b"0123"[..], b"45", b"6789\nab"] {
            cap.push(chunk);
        }
        assert!(cap.is_truncated() && cap.is_spilled());
        assert_eq!((cap.total(), cap.lines()), (13, 1));
        assert_eq!(cap.into_parts(), (b"012".to_vec(), b"9\nab".to_vec()));
        assert_eq!(std::fs::read(long).unwrap(), b"0123456789\nab");
    }
}
