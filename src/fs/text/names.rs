//! File names as the model sees them and gives them back (issue 19).
//!
//! - A name holding a character that could forge a line of a listing is shown as Python's
//!   `repr()` writes it ([`escape_name`]), and the call's result says so ([`ESCAPED_NOTE`]);
//!   whether a call escaped a name is known per call ([`EscapeScope`]), not process-wide.
//! - A name that is not UTF-8 travels through the core as *marked text* ([`lossless`]): each
//!   byte of an invalid sequence is a NUL followed by the character of that byte's value
//!   (U+0080..U+00FF). No real name holds a NUL, so marked text cannot collide with a real
//!   UTF-8 name, and [`raw_bytes`] gives the exact bytes back. The model sees such a name as
//!   the lone surrogates Python's `surrogateescape` decodes it to (`'bad\udcff.txt'`,
//!   [`crate::fs::text::py_repr`]), and the bindings map a path holding those surrogates
//!   back to marked text, so a listed name reads the file it names.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The note a listing ends with when it shows an escaped name (issue 19).
pub const ESCAPED_NOTE: &str = "[names holding control characters or bytes that are not UTF-8, or \
starting with a quote, are shown as Python's repr() shows them, quoted and escaped; give such a name to a tool as the string \
it stands for]";

/// The character that opens a raw byte in marked text ([`lossless`]).
const RAW: char = '\0';

thread_local! {
    /// The flag of the call this thread works for ([`EscapeScope`]), if any.
    static CALL: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Whether one call escaped a name ([`escape_name`]): set on the thread running the call
/// ([`EscapeScope::new`] then [`EscapeScope::enter`]) and carried onto each thread it starts
/// ([`EscapeScope::current`], then `enter` on that thread). A name escaped by another call
/// running beside it sets that call's flag, never this one's.
#[derive(Clone, Default)]
pub struct EscapeScope(Option<Arc<AtomicBool>>);

impl EscapeScope {
    /// A fresh scope for one call: nothing escaped yet.
    pub fn new() -> Self {
        EscapeScope(Some(Arc::new(AtomicBool::new(false))))
    }

    /// The scope of the call this thread works for (none outside a call): what a thread
    /// started by the call enters.
    pub fn current() -> Self {
        EscapeScope(CALL.with(|c| c.borrow().clone()))
    }

    /// Runs `f` on this thread for the call of this scope; the thread's previous scope is
    /// restored afterwards, even when `f` panics.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<AtomicBool>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CALL.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CALL.with(|c| c.replace(self.0.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// Makes this thread work for the call of this scope from now on, without restoring: for
    /// a thread that lives only for the call (a parallel walker's worker, which is handed
    /// its visitor, not a closure to run).
    pub fn adopt(&self) {
        CALL.with(|c| *c.borrow_mut() = self.0.clone());
    }

    /// Whether a name was escaped in this scope.
    pub fn escaped(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Whether `c` can break or forge a line of a listing: a control character (C0, DEL, C1) or
/// a Unicode line or paragraph separator. The NUL of a raw byte ([`lossless`]) is one.
fn breaks_lines(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// A file name (or path) as a listing shows it: unchanged, or, when it holds a character
/// that could forge a line ([`breaks_lines`]: `\n`, `\r`, `\x1b`, ...) or a byte that is not
/// UTF-8 ([`lossless`]), as Python's `repr()` writes it (`'a\nb.txt'`, `'bad\udcff.txt'`),
/// noted in the call's [`EscapeScope`]. Issue 19: a name is one line.
pub fn escape_name(s: &str) -> Cow<'_, str> {
    if !needs_escape(s) {
        return Cow::Borrowed(s);
    }
    CALL.with(|c| {
        if let Some(flag) = &*c.borrow() {
            flag.store(true, Ordering::Relaxed);
        }
    });
    Cow::Owned(super::py_repr(s))
}

/// Whether a listing shows `s` escaped: it holds a character that could forge a line
/// ([`breaks_lines`]) or a raw byte ([`lossless`]'s marker is a control character), or it
/// starts with a quote, so that no plain name reads as the escaped form of another
/// (`'bad\udcff.txt'` spelled with a backslash is shown `"'bad\\udcff.txt'"`).
fn needs_escape(s: &str) -> bool {
    if s.starts_with(['\'', '"']) {
        return true;
    }
    let suspect = s
        .bytes()
        .any(|b| b < 0x20 || b == 0x7f || b == 0xc2 || b == 0xe2);
    suspect && s.chars().any(breaks_lines)
}

/// A path the model gave back, as results echo it (`read_file`'s header, `file_info`,
/// `Edited p.`, errors): unchanged, or, when a listing would show it escaped (bytes that are
/// not UTF-8, a control character, a leading quote), as the listing showed it
/// (`'bad\udcff.txt'`), so no name can forge a line of a result either.
pub fn shown_path(s: &str) -> Cow<'_, str> {
    if s.contains(RAW) || needs_escape(s) {
        Cow::Owned(super::py_repr(s))
    } else {
        Cow::Borrowed(s)
    }
}

/// Marked text with each raw byte written as its lone surrogate's escape (`bad\udcff.txt`):
/// where a result already quotes a path (`'p' is a directory`) or shows it inside other text
/// (a diff's `a/p`).
pub fn inline(s: &str) -> Cow<'_, str> {
    if !s.contains(RAW) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match raw_byte_after(c, chars.peek()) {
            Some(b) => {
                chars.next();
                out.push_str(&format!("\\udc{b:02x}"));
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The byte a raw-byte pair of marked text stands for: `c` is [`RAW`] and `next` a
/// character U+0080..U+00FF.
pub fn raw_byte_after(c: char, next: Option<&char>) -> Option<u8> {
    match (c, next) {
        (RAW, Some(&n)) if ('\u{80}'..='\u{ff}').contains(&n) => Some(n as u32 as u8),
        _ => None,
    }
}

/// `bytes` (a name or path from the OS) as marked text: valid UTF-8 unchanged; each byte of
/// an invalid sequence a NUL and the character of its value (what Python's
/// `bytes.decode('utf-8', 'surrogateescape')` makes a lone surrogate U+DC80..U+DCFF).
pub fn lossless(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for &b in chunk.invalid() {
                    out.push(RAW);
                    out.push(char::from(b));
                }
            }
            Cow::Owned(out)
        }
    }
}

/// The bytes marked text stands for ([`lossless`]'s inverse): a raw-byte pair is its byte,
/// a NUL in any other place stays a NUL (which no path may hold). A raw byte is always
/// 0x80..0xFF, never `/`, `.` or a NUL, so no component can be smuggled in.
pub fn raw_bytes(s: &str) -> Cow<'_, [u8]> {
    if !s.contains(RAW) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(b) = raw_byte_after(c, chars.peek()) {
            chars.next();
            out.push(b);
        } else {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marked text gives back the bytes it was made from, and shows as Python's
    /// `repr(b.decode('utf-8', 'surrogateescape'))`.
    #[test]
    fn names_that_are_not_utf8_round_trip() {
        for bytes in [
            &b"bad\xff.txt"[..],
            b"\xc3\x28x",
            b"ok",
            b"\xe2\x80",
            b"a/\xed\xa0\x80/b",
        ] {
            let marked = lossless(bytes);
            assert_eq!(&*raw_bytes(&marked), bytes);
        }
        let marked = lossless(b"bad\xff\xfe.txt");
        assert_eq!(super::super::py_repr(&marked), "'bad\\udcff\\udcfe.txt'");
        assert_eq!(escape_name(&marked), "'bad\\udcff\\udcfe.txt'");
        assert_eq!(shown_path(&marked), "'bad\\udcff\\udcfe.txt'");
        assert_eq!(shown_path("a.txt"), "a.txt");
        assert_eq!(inline(&marked), "bad\\udcff\\udcfe.txt");
        // A NUL not followed by a byte's character stays a NUL.
        assert_eq!(&*raw_bytes("a\0b"), b"a\0b");
    }

    /// A name escaped by one call marks that call's result, never another's running at the
    /// same time (issue 19): the two calls are held side by side by a barrier, one escaping
    /// on its own thread, the other on a thread it starts.
    #[test]
    fn the_escaped_note_is_per_call() {
        use crate::fs::{noting_escaped_names, Outcome};
        let barrier = std::sync::Barrier::new(3);
        let call = |odd: bool, spawned: bool| {
            noting_escaped_names(|| {
                barrier.wait();
                let name = if odd { "a\nb" } else { "ab" };
                let text = if spawned {
                    let scope = EscapeScope::current();
                    std::thread::scope(|s| {
                        s.spawn(move || scope.enter(|| escape_name(name).into_owned()))
                            .join()
                            .unwrap()
                    })
                } else {
                    escape_name(name).into_owned()
                };
                barrier.wait();
                Ok(Outcome {
                    text,
                    ..Default::default()
                })
            })
            .unwrap()
            .text
        };
        let (odd, spawned, plain) = std::thread::scope(|s| {
            let odd = s.spawn(|| call(true, false));
            let spawned = s.spawn(|| call(true, true));
            let plain = s.spawn(|| call(false, false));
            (
                odd.join().unwrap(),
                spawned.join().unwrap(),
                plain.join().unwrap(),
            )
        });
        let noted = format!("'a\\nb'\n{ESCAPED_NOTE}");
        assert_eq!(
            (odd, spawned, plain),
            (noted.clone(), noted, "ab".to_string())
        );
    }
}
