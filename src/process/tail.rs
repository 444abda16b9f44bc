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
}
