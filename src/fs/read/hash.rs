//! Content hashes: the first 12 hex chars of a sha256. The document's contract (0.36.0)
//! hashes a binary file's bytes and a text file's UTF-8-lossy decode (U+FFFD for each invalid
//! sequence, exactly as Python's incremental decoder with `errors='replace'`); the workspace
//! contract (0.62.0, `bytes_hash` in `_content.py`) hashes every file's raw bytes. Streaming,
//! constant memory.
//!
//! Valid UTF-8 decodes to itself, so its bytes are hashed directly; only invalid
//! sequences cost anything extra, and the two contracts agree on every valid UTF-8 file.

use std::io::Read;

use sha2::{Digest, Sha256};

use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::contract::Contract;

/// Bytes at the start of a file searched for NUL to call it binary.
pub const BINARY_SAMPLE: usize = 8192;

/// Chunk size of the streaming readers (bytes).
pub const CHUNK: usize = 1 << 20;

const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Whether `data` is binary: a NUL in its first 8192 bytes. Source: `_is_binary`.
pub fn is_binary(data: &[u8]) -> bool {
    memchr::memchr(0, &data[..data.len().min(BINARY_SAMPLE)]).is_some()
}

/// 12 hex chars of sha256 of `text`'s UTF-8 bytes. Source: `_content_hash`.
pub fn text_hash(text: &str) -> String {
    short_hex(Sha256::digest(text.as_bytes()).as_slice())
}

/// 12 hex chars of sha256 of the raw bytes, whatever they hold (0.62.0's `bytes_hash`).
pub fn bytes_hash(data: &[u8]) -> String {
    short_hex(Sha256::digest(data).as_slice())
}

/// `_disk_hash` of an in-memory file: raw bytes when binary, else the lossy decode.
pub fn content_hash(data: &[u8]) -> String {
    let mut h = DiskHasher::new();
    h.update(data);
    h.finish()
}

/// The first 12 hex chars of a finished sha256 digest.
pub fn short_hex(digest: &[u8]) -> String {
    let mut s = String::with_capacity(12);
    for b in &digest[..6] {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// An incremental UTF-8 decoder with `errors='replace'`: feeds valid runs and U+FFFD to a
/// callback, carrying an incomplete sequence across chunk boundaries.
#[derive(Debug, Default)]
pub struct LossyDecoder {
    carry: Vec<u8>,
}

impl LossyDecoder {
    /// A decoder with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `chunk`, calling `out` with each piece of valid UTF-8 (U+FFFD included).
    pub fn feed(&mut self, chunk: &[u8], out: &mut impl FnMut(&[u8])) {
        self.feed_marked(chunk, &mut |piece, bad| {
            out(if bad { REPLACEMENT } else { piece })
        });
    }

    /// Decodes `chunk`, calling `out(piece, false)` with each piece of valid UTF-8 and
    /// `out(bytes, true)` with each undecodable sequence's bytes (one U+FFFD each).
    pub fn feed_marked(&mut self, chunk: &[u8], out: &mut impl FnMut(&[u8], bool)) {
        if chunk.is_empty() {
            return;
        }
        if self.carry.is_empty() {
            return self.feed_plain(chunk, out);
        }
        // Complete the pending sequence: decisions inside `buf` are the ones a whole-stream
        // decode makes, since an incomplete tail is carried, never judged.
        let k = chunk.len().min(3);
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(&chunk[..k]);
        self.feed_plain(&buf, out);
        self.feed_marked(&chunk[k..], out);
    }

    fn feed_plain(&mut self, mut chunk: &[u8], out: &mut impl FnMut(&[u8], bool)) {
        loop {
            match std::str::from_utf8(chunk) {
                Ok(_) => {
                    if !chunk.is_empty() {
                        out(chunk, false);
                    }
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    if valid > 0 {
                        out(&chunk[..valid], false);
                    }
                    match e.error_len() {
                        Some(n) => {
                            out(&chunk[valid..valid + n], true);
                            chunk = &chunk[valid + n..];
                        }
                        None => {
                            self.carry.extend_from_slice(&chunk[valid..]);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Flushes a pending incomplete sequence as U+FFFD (`final=True`).
    pub fn finish(&mut self, out: &mut impl FnMut(&[u8])) {
        self.finish_marked(&mut |piece, bad| out(if bad { REPLACEMENT } else { piece }));
    }

    /// [`LossyDecoder::finish`] with undecodable bytes marked as in [`LossyDecoder::feed_marked`].
    pub fn finish_marked(&mut self, out: &mut impl FnMut(&[u8], bool)) {
        if !self.carry.is_empty() {
            // An incomplete sequence at the end is one U+FFFD (Python's `final=True`).
            let carry = std::mem::take(&mut self.carry);
            out(&carry, true);
        }
    }
}

/// The streaming `_disk_hash`: the first bytes decide binary (NUL in the first 8192), or,
/// built with [`DiskHasher::raw`], a hash of the raw bytes whatever they hold.
#[derive(Debug)]
pub struct DiskHasher {
    digest: Sha256,
    decoder: LossyDecoder,
    head: Vec<u8>,
    binary: Option<bool>,
    raw: bool,
}

impl Default for DiskHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl DiskHasher {
    /// A hasher that has seen nothing.
    pub fn new() -> Self {
        DiskHasher {
            digest: Sha256::new(),
            decoder: LossyDecoder::new(),
            head: Vec::new(),
            binary: None,
            raw: false,
        }
    }

    /// A hasher of the raw bytes (`bytes_hash`, 0.62.0): no decode, no binary decision.
    pub fn raw() -> Self {
        DiskHasher {
            raw: true,
            ..Self::new()
        }
    }

    /// The hasher `contract` uses for a file's content hash.
    pub fn for_contract(contract: Contract) -> Self {
        match contract {
            Contract::Document => Self::new(),
            Contract::Workspace => Self::raw(),
        }
    }

    /// Whether the content is binary, once 8192 bytes (or the end) have been seen.
    pub fn binary(&self) -> Option<bool> {
        self.binary
    }

    /// Feeds the next bytes of the file.
    pub fn update(&mut self, data: &[u8]) {
        if self.raw {
            self.digest.update(data);
            return;
        }
        if self.binary.is_none() {
            self.head.extend_from_slice(data);
            if self.head.len() < BINARY_SAMPLE {
                return;
            }
            let head = std::mem::take(&mut self.head);
            self.decide(&head);
            return;
        }
        self.push(data);
    }

    fn decide(&mut self, head: &[u8]) {
        self.binary = Some(is_binary(head));
        self.push(head);
    }

    fn push(&mut self, data: &[u8]) {
        if self.binary == Some(true) {
            self.digest.update(data);
        } else {
            let digest = &mut self.digest;
            self.decoder.feed(data, &mut |piece| digest.update(piece));
        }
    }

    /// The 12-hex hash of everything fed.
    pub fn finish(mut self) -> String {
        if self.raw {
            return short_hex(self.digest.finalize().as_slice());
        }
        if self.binary.is_none() {
            let head = std::mem::take(&mut self.head);
            self.decide(&head);
        }
        if self.binary == Some(false) {
            let digest = &mut self.digest;
            self.decoder.finish(&mut |piece| digest.update(piece));
        }
        short_hex(self.digest.finalize().as_slice())
    }
}

/// Hashes everything `reader` yields with [`DiskHasher`], polling `cancel` per chunk.
pub fn hash_reader(reader: &mut impl Read, cancel: &CancelFlag) -> std::io::Result<Result<String>> {
    let mut h = DiskHasher::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(crate::error::Error::cancelled()));
        }
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Ok(h.finish()))
}

/// Chunk size of a piped pass ([`HashSink::piped`]).
pub const PIPE_CHUNK: usize = 512 * 1024;

/// Buffers in flight between the reading thread and the hashing thread.
const PIPE_BUFFERS: usize = 4;

/// A piece of the hashed stream: bytes `start..end` of a reader's buffer (handed back once
/// hashed), or bytes of its own (a lossy decode).
enum Piece {
    Range(Vec<u8>, usize, usize),
    Owned(Vec<u8>),
}

/// Where a streaming pass sends the bytes to hash, and where it gets its read buffers. Inline,
/// it hashes on the caller's thread; piped, a second thread hashes each buffer while the caller
/// reads and scans the next one (both cores on one file), buffers recycled through a bounded
/// pool of [`PIPE_BUFFERS`] of [`PIPE_CHUNK`] bytes.
pub struct HashSink {
    inline: Option<Sha256>,
    tx: Option<std::sync::mpsc::SyncSender<Piece>>,
    back: Option<std::sync::mpsc::Receiver<Vec<u8>>>,
    worker: Option<std::thread::JoinHandle<Sha256>>,
    spare: Vec<Vec<u8>>,
    made: usize,
    chunk: usize,
}

impl HashSink {
    /// Hashes on the caller's thread; buffers of `chunk` bytes.
    pub fn inline(chunk: usize) -> Self {
        HashSink {
            inline: Some(Sha256::new()),
            tx: None,
            back: None,
            worker: None,
            spare: Vec::new(),
            made: 0,
            chunk,
        }
    }

    /// Hashes on a second thread; falls back to [`HashSink::inline`] when no thread can start.
    pub fn piped() -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(PIPE_BUFFERS);
        let (back_tx, back) = std::sync::mpsc::channel::<Vec<u8>>();
        let worker = std::thread::Builder::new()
            .name("harness-hash".into())
            .spawn(move || {
                let mut digest = Sha256::new();
                for piece in rx {
                    match piece {
                        Piece::Range(buf, start, end) => {
                            digest.update(&buf[start..end]);
                            let _ = back_tx.send(buf);
                        }
                        Piece::Owned(data) => digest.update(&data),
                    }
                }
                digest
            });
        match worker {
            Ok(worker) => HashSink {
                inline: None,
                tx: Some(tx),
                back: Some(back),
                worker: Some(worker),
                spare: Vec::new(),
                made: 0,
                chunk: PIPE_CHUNK,
            },
            Err(_) => Self::inline(PIPE_CHUNK),
        }
    }

    /// A read buffer of the sink's chunk size (its contents are stale).
    pub fn buffer(&mut self) -> Vec<u8> {
        if let Some(buf) = self.spare.pop() {
            return buf;
        }
        if let Some(back) = &self.back {
            if let Ok(buf) = back.try_recv() {
                return buf;
            }
            if self.made >= PIPE_BUFFERS {
                if let Ok(buf) = back.recv() {
                    return buf;
                }
            }
        }
        self.made += 1;
        vec![0u8; self.chunk]
    }

    /// Hashes `buf[start..end]`; the buffer comes back from [`HashSink::buffer`] later.
    pub fn hash_range(&mut self, buf: Vec<u8>, start: usize, end: usize) {
        if let Some(d) = self.inline.as_mut() {
            d.update(&buf[start..end]);
            self.spare.push(buf);
            return;
        }
        if let Some(tx) = &self.tx {
            if let Err(std::sync::mpsc::SendError(Piece::Range(buf, ..))) =
                tx.send(Piece::Range(buf, start, end))
            {
                self.spare.push(buf);
            }
        }
    }

    /// Hashes `data`, bytes that are not a read buffer's.
    pub fn hash_owned(&mut self, data: Vec<u8>) {
        if let Some(d) = self.inline.as_mut() {
            d.update(&data);
        } else if let Some(tx) = &self.tx {
            let _ = tx.send(Piece::Owned(data));
        }
    }

    /// Returns a buffer that holds nothing to hash.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.spare.push(buf);
    }

    /// The 12-hex hash of everything sent, in order.
    pub fn finish(mut self) -> String {
        if let Some(d) = self.inline.take() {
            return short_hex(d.finalize().as_slice());
        }
        drop(self.tx.take());
        let digest = self
            .worker
            .take()
            .and_then(|w| w.join().ok())
            .unwrap_or_default();
        short_hex(digest.finalize().as_slice())
    }
}

impl Drop for HashSink {
    fn drop(&mut self) {
        // An abandoned pass (an error, a cancel) still ends its thread before returning.
        drop(self.tx.take());
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(data: &[u8]) -> String {
        if is_binary(data) {
            short_hex(Sha256::digest(data).as_slice())
        } else {
            text_hash(&String::from_utf8_lossy(data))
        }
    }

    #[test]
    fn known_values() {
        // Values from the reference: hashlib.sha256(b'x\ny\n').hexdigest()[:12].
        assert_eq!(content_hash(b"x\ny\n"), "09834d488008");
        assert_eq!(text_hash("x\ny\n"), "09834d488008");
        assert_eq!(content_hash(b""), "e3b0c44298fc");
    }

    #[test]
    fn streaming_equals_whole_decode_at_every_split() {
        let samples: [&[u8]; 6] = [
            b"plain ascii\n",
            "h\u{e9}llo \u{20ac} \u{1F600}".as_bytes(),
            b"bad \xff\xfe bytes \xe2\x82 cut \xf0\x9f\x98",
            b"\xe2\x82\xe2\x82\xac\xc3",
            b"\xed\xa0\x80 surrogate \xf4\x90\x80\x80",
            b"nul \x00 binary \xff",
        ];
        for data in samples {
            let expected = whole(data);
            for split in 0..=data.len() {
                for split2 in split..=data.len() {
                    let mut h = DiskHasher::new();
                    h.update(&data[..split]);
                    h.update(&data[split..split2]);
                    h.update(&data[split2..]);
                    assert_eq!(h.finish(), expected, "{data:?} {split} {split2}");
                }
            }
        }
    }

    #[test]
    fn raw_hash_is_of_the_bytes() {
        // hashlib.sha256(b'bad \xff\n').hexdigest()[:12] and of its lossy decode.
        let data = b"bad \xff\n";
        assert_eq!(bytes_hash(data), "f7a6c136d6bf");
        assert_eq!(content_hash(data), text_hash("bad \u{FFFD}\n"));
        assert_ne!(bytes_hash(data), content_hash(data));
        for split in 0..=data.len() {
            let mut h = DiskHasher::for_contract(Contract::Workspace);
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(h.finish(), bytes_hash(data));
        }
        // Valid UTF-8 and binary files hash alike under both contracts.
        for same in [&b"x\ny\n"[..], b"a\0\xff"] {
            assert_eq!(bytes_hash(same), content_hash(same));
        }
    }

    #[test]
    fn binary_decided_on_first_8192_bytes() {
        let mut data = vec![b'a'; 9000];
        data[8191] = 0;
        assert!(is_binary(&data));
        data[8191] = b'a';
        data[8192] = 0;
        assert!(!is_binary(&data));
        data.push(0xff);
        let mut h = DiskHasher::new();
        for c in data.chunks(1000) {
            h.update(c);
        }
        assert_eq!(h.finish(), whole(&data));
    }
}
