//! What a committed write reports about its content, its hash and its line count, taken in
//! one pass: each slice is hashed and then counted while it is still in cache. A separate
//! counting pass reads the whole content from memory again (about 1 ms for 10 MiB, on the
//! critical path of `write_file`). A big content is tallied on a second core: while it is
//! written, or, for an announced write over a file at least as big, while the plan reads and
//! hashes the old file (the commit then has two passes for two cores, not three).

use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use crate::fs::contract::Contract;
use crate::fs::read::hash::short_hex;

/// Bytes hashed, then counted, at a time: small enough to stay in the core's cache between
/// the two.
const SLICE: usize = 64 << 10;

/// Whether `bytes` hold none of the bytes of a line break other than `\n` that Python's
/// `splitlines` knows (`\r`, `\v`, `\f`, `\x1c`-`\x1e`, U+0085, U+2028, U+2029: the bytes
/// 0x0b-0x0d and 0x1c-0x1e, and the lead bytes 0xc2 and 0xe2).
fn only_newlines(bytes: &[u8]) -> bool {
    bytes.chunks(4096).all(|chunk| {
        !chunk.iter().fold(false, |seen, &b| {
            seen | matches!(b, 0x0b..=0x0d | 0x1c..=0x1e | 0xc2 | 0xe2)
        })
    })
}

/// `read::line_count` of a text fed a slice at a time: `\n`s counted at memory speed while the
/// text has no other line break (always, in the workspace contract, which only knows `\n`);
/// otherwise [`crate::fs::read::line_count`] over the whole text at the end.
pub(crate) struct LineTally {
    newlines: usize,
    /// No other line break seen so far (or the workspace contract).
    plain: bool,
    contract: Contract,
}

impl LineTally {
    /// A tally that has seen nothing.
    pub(crate) fn new(contract: Contract) -> Self {
        LineTally {
            newlines: 0,
            plain: true,
            contract,
        }
    }

    /// Counts the next bytes of the text (any cut: the bytes looked for are never inside a
    /// longer sequence's continuation bytes).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        if !self.plain {
            return;
        }
        if !self.contract.is_workspace() && !only_newlines(bytes) {
            self.plain = false;
            return;
        }
        self.newlines += memchr::memchr_iter(b'\n', bytes).count();
    }

    /// The line count of `text`, all of which was fed.
    pub(crate) fn finish(self, text: &str) -> usize {
        if !self.plain {
            return crate::fs::read::line_count(text, self.contract);
        }
        self.newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
    }
}

impl LineTally {
    /// The tally of everything `self` and `other` were fed (in any order: the count is a sum).
    fn merge(self, other: LineTally) -> LineTally {
        LineTally {
            newlines: self.newlines + other.newlines,
            plain: self.plain && other.plain,
            contract: self.contract,
        }
    }
}

/// Runs `write` on this thread while a second one hashes `text`, and returns its result with
/// the hash and line count of `text` ([`hash_and_lines`]'s). The count is shared: the second
/// thread counts each slice right after hashing it, unless this one has claimed it; this one,
/// once `write` is done, counts slices from the last one back until it meets one already
/// counted. Whichever finishes first takes more of the count, so neither waits for the other
/// longer than a slice.
pub(crate) fn beside<T>(
    text: &str,
    contract: Contract,
    write: impl FnOnce() -> T,
) -> (T, String, usize) {
    let slices: Vec<&[u8]> = text.as_bytes().chunks(SLICE).collect();
    let claimed: Vec<AtomicBool> = slices.iter().map(|_| AtomicBool::new(false)).collect();
    let claim = |i: usize| !claimed[i].swap(true, Ordering::AcqRel);
    std::thread::scope(|s| {
        let hashed = s.spawn(|| {
            let mut digest = Sha256::new();
            let mut lines = LineTally::new(contract);
            for (i, slice) in slices.iter().enumerate() {
                digest.update(slice);
                if claim(i) {
                    lines.feed(slice);
                }
            }
            (short_hex(digest.finalize().as_slice()), lines)
        });
        let written = write();
        let mut lines = LineTally::new(contract);
        // The hasher claims in order: past the first slice it holds, it holds all before.
        for (i, slice) in slices.iter().enumerate().rev() {
            if !claim(i) {
                break;
            }
            lines.feed(slice);
        }
        let (hash, theirs) = hashed.join().expect("hashing does not panic");
        (written, hash, lines.merge(theirs).finish(text))
    })
}

/// The content hash of `text` (`hash::text_hash`: sha256 of its UTF-8) and its line count
/// (`read::line_count`), in one pass.
pub(crate) fn hash_and_lines(text: &str, contract: Contract) -> (String, usize) {
    let mut digest = Sha256::new();
    let mut lines = LineTally::new(contract);
    for slice in text.as_bytes().chunks(SLICE) {
        digest.update(slice);
        lines.feed(slice);
    }
    (short_hex(digest.finalize().as_slice()), lines.finish(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::read::hash::text_hash;
    use crate::fs::read::line_count;

    #[test]
    fn one_pass_agrees_with_the_hash_and_the_line_count() {
        let big_plain = "0123456789 abc\n".repeat(10_000); // over several slices
        let late_break = format!("{big_plain}x\r\ny\u{2028}z"); // a break past the first slice
        let cut_lead = format!("{}\u{2028}tail", "a".repeat(SLICE - 1)); // U+2028 across a cut
        for text in [
            "",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n",
            "a\r\nb",
            "a\rb\n",
            "a\x0bb",
            "a\u{85}b",
            "a\u{2028}b\n",
            "é\nx",
            "\u{2029}",
            "x\x1c",
            &big_plain,
            &late_break,
            &cut_lead,
        ] {
            for contract in [Contract::Document, Contract::Workspace] {
                let (hash, lines) = hash_and_lines(text, contract);
                assert_eq!(hash, text_hash(text), "{:?}", &text[..text.len().min(20)]);
                assert_eq!(lines, line_count(text, contract), "{contract:?}");
                // Shared with a writer that is done at once (it counts from the back) or late
                // (the hasher counts everything first), the count is the same.
                for delay in [0, 20] {
                    let wait = || std::thread::sleep(std::time::Duration::from_millis(delay));
                    let ((), shared_hash, shared_lines) = beside(text, contract, wait);
                    assert_eq!((shared_hash.as_str(), shared_lines), (hash.as_str(), lines));
                }
            }
        }
    }
}
