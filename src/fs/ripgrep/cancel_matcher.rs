//! `grep`'s matcher made to stop on a cancel however long one line is (issue 19): the
//! searcher hands the matcher whole buffers, and one regex search over a 40 MiB line could run
//! for minutes after the call was cancelled. A long haystack is searched in pieces, with the
//! cancel flag read between them:
//!
//! - a pattern that is one literal (`literal=True`, or a regex without metacharacters; case
//!   sensitive) is found with `memmem`, [`PIECE`] bytes at a time;
//! - a pattern whose matches have a bounded length and which asserts nothing about what
//!   surrounds them (no `^`, `$`, `\b`) is searched in windows of [`WINDOW`] bytes (or twice
//!   that length) that overlap by that length, each window a span of the whole haystack;
//! - any other pattern is searched in one go (its matches may span the whole line): the
//!   flag is read before each search only.
//!
//! A cancelled search answers "no match" from then on; the reader the searcher reads from
//! fails its next read ([`super::grep::CancelReader`]), which ends the file's search.

use grep_matcher::{LineMatchKind, LineTerminator, Match, Matcher, NoError};
use grep_regex::RegexMatcher;
use memchr::memmem;

use crate::cancel::CancelFlag;

/// Bytes a literal is looked for in between two reads of the cancel flag on a long haystack
/// (`memmem` goes through them in well under a millisecond).
pub const PIECE: usize = 1 << 20;

/// Bytes a window of a bounded pattern starts with (beside the overlap): a regex search goes
/// through this much in a few milliseconds unless the pattern's automaton is huge.
pub const WINDOW: usize = 64 << 10;

/// How a long haystack is cut.
enum Pieces {
    /// The pattern is this literal.
    Literal(Box<memmem::Finder<'static>>),
    /// Matches are at most this many bytes long and assert nothing outside themselves.
    Windows(usize),
    /// One search.
    Whole,
}

/// A [`RegexMatcher`] that reads `cancel` between pieces of a long haystack where the
/// pattern allows it (see the module doc).
pub struct CancelMatcher<'a> {
    inner: &'a RegexMatcher,
    cancel: &'a CancelFlag,
    pieces: &'a Pieces,
}

/// How `pattern` (rg syntax; `literal`: taken as a fixed string) can be cut.
pub struct Cuts(Pieces);

impl Cuts {
    /// Works out how a search of `pattern` can be cut into pieces.
    pub fn new(pattern: &str, literal: bool, ignore_case: bool) -> Self {
        let escaped;
        let syntax = if literal {
            escaped = regex_syntax::escape(pattern);
            escaped.as_str()
        } else {
            pattern
        };
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .build()
            .parse(syntax);
        let Ok(hir) = hir else {
            return Cuts(Pieces::Whole);
        };
        if let regex_syntax::hir::HirKind::Literal(lit) = hir.kind() {
            if !lit.0.is_empty() {
                return Cuts(Pieces::Literal(Box::new(
                    memmem::Finder::new(&lit.0).into_owned(),
                )));
            }
        }
        let props = hir.properties();
        match props.maximum_len() {
            Some(max) if props.look_set().is_empty() => Cuts(Pieces::Windows(max)),
            _ => Cuts(Pieces::Whole),
        }
    }

    /// `inner` reading `cancel` between pieces.
    pub fn matcher<'a>(
        &'a self,
        inner: &'a RegexMatcher,
        cancel: &'a CancelFlag,
    ) -> CancelMatcher<'a> {
        CancelMatcher {
            inner,
            cancel,
            pieces: &self.0,
        }
    }
}

impl CancelMatcher<'_> {
    /// The leftmost match at or after `at`, searched piece by piece; `None` once cancelled.
    fn find_cut(&self, haystack: &[u8], at: usize) -> Option<Match> {
        match self.pieces {
            Pieces::Literal(finder) => {
                let n = finder.needle().len();
                let mut start = at;
                while start < haystack.len() {
                    if self.cancel.is_cancelled() {
                        return None;
                    }
                    let end = haystack.len().min(start + PIECE + n - 1);
                    if let Some(p) = finder.find(&haystack[start..end]) {
                        return Some(Match::new(start + p, start + p + n));
                    }
                    start += PIECE;
                }
                None
            }
            &Pieces::Windows(max) => {
                // The overlap costs a search of it again per window: windows at least as
                // long as twice the longest match keep that under a half.
                let step = WINDOW.max(max.saturating_mul(2));
                let mut start = at;
                loop {
                    if self.cancel.is_cancelled() {
                        return None;
                    }
                    let end = haystack
                        .len()
                        .min(start.saturating_add(step).saturating_add(max));
                    let found = self.inner.find_at(&haystack[..end], start).ok().flatten();
                    // A match starting in the window's first `step` bytes is whole in it, and
                    // none starts earlier; one starting later is taken from the next window.
                    match found {
                        Some(m) if m.start() < start + step || end == haystack.len() => {
                            return Some(m)
                        }
                        _ if end == haystack.len() => return None,
                        _ => start += step,
                    }
                }
            }
            Pieces::Whole => self.inner.find_at(haystack, at).ok().flatten(),
        }
    }

    /// Whether `haystack` from `at` is long enough to cut.
    fn long(haystack: &[u8], at: usize) -> bool {
        haystack.len().saturating_sub(at) > PIECE
    }
}

impl Matcher for CancelMatcher<'_> {
    type Captures = <RegexMatcher as Matcher>::Captures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        if Self::long(haystack, at) {
            return Ok(self.find_cut(haystack, at));
        }
        self.inner.find_at(haystack, at)
    }

    fn new_captures(&self) -> Result<Self::Captures, NoError> {
        self.inner.new_captures()
    }

    fn capture_count(&self) -> usize {
        self.inner.capture_count()
    }

    fn capture_index(&self, name: &str) -> Option<usize> {
        self.inner.capture_index(name)
    }

    fn captures_at(
        &self,
        haystack: &[u8],
        at: usize,
        caps: &mut Self::Captures,
    ) -> Result<bool, NoError> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        self.inner.captures_at(haystack, at, caps)
    }

    fn shortest_match_at(&self, haystack: &[u8], at: usize) -> Result<Option<usize>, NoError> {
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        if Self::long(haystack, at) {
            return Ok(self.find_cut(haystack, at).map(|m| m.end()));
        }
        self.inner.shortest_match_at(haystack, at)
    }

    fn non_matching_bytes(&self) -> Option<&grep_matcher::ByteSet> {
        self.inner.non_matching_bytes()
    }

    fn line_terminator(&self) -> Option<LineTerminator> {
        self.inner.line_terminator()
    }

    fn find_candidate_line(&self, haystack: &[u8]) -> Result<Option<LineMatchKind>, NoError> {
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        if Self::long(haystack, 0) {
            return Ok(self
                .find_cut(haystack, 0)
                .map(|m| LineMatchKind::Confirmed(m.start())));
        }
        self.inner.find_candidate_line(haystack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_regex::RegexMatcherBuilder;

    fn regex(pattern: &str, literal: bool) -> RegexMatcher {
        RegexMatcherBuilder::new()
            .fixed_strings(literal)
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .unwrap()
    }

    /// Cut searches find what one search finds, wherever the match falls against the cuts.
    #[test]
    fn pieces_find_what_one_search_finds() {
        let c = CancelFlag::new();
        for (pattern, literal, kind) in [
            ("needle", false, "literal"),
            ("a.b", true, "literal"),
            ("ne+dle|needles", false, "whole"),
            ("ne{1,3}dle|needles", false, "windows"),
            ("(ab|a)c?", false, "windows"),
            ("^needle", false, "whole"),
        ] {
            let cuts = Cuts::new(pattern, literal, false);
            let got = match cuts.0 {
                Pieces::Literal(_) => "literal",
                Pieces::Windows(_) => "windows",
                Pieces::Whole => "whole",
            };
            assert_eq!(got, kind, "{pattern}");
            let inner = regex(pattern, literal);
            let m = cuts.matcher(&inner, &c);
            let text = if literal { "a.b" } else { "needles" };
            for at in [
                0,
                5,
                WINDOW - 3,
                WINDOW + 1,
                PIECE - 3,
                PIECE,
                PIECE + 2,
                2 * PIECE + 1 - text.len(),
            ] {
                let mut hay = vec![b'y'; 2 * PIECE + 1];
                hay[at..at + text.len()].copy_from_slice(text.as_bytes());
                assert_eq!(
                    m.find_at(&hay, 0).unwrap(),
                    inner.find_at(&hay, 0).unwrap(),
                    "{pattern} at {at}"
                );
            }
            let hay = vec![b'y'; 2 * PIECE + 1];
            assert_eq!(m.find_at(&hay, 0).unwrap(), None);
        }
    }

    /// Once cancelled, a long search stops at the next piece: no match, whatever the haystack.
    #[test]
    fn a_cancelled_search_finds_nothing() {
        let c = CancelFlag::new();
        let cuts = Cuts::new("needle", false, false);
        let inner = regex("needle", false);
        let m = cuts.matcher(&inner, &c);
        let mut hay = vec![b'y'; 3 * PIECE];
        hay[2 * PIECE..2 * PIECE + 6].copy_from_slice(b"needle");
        assert!(m.find_at(&hay, 0).unwrap().is_some());
        c.cancel();
        assert_eq!(m.find_at(&hay, 0).unwrap(), None);
        assert!(m.find_candidate_line(&hay).unwrap().is_none());
    }
}
