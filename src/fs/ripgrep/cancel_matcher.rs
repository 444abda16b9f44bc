//! `grep`'s matcher made to stop on a cancel however long one line is (issue 19): the
//! searcher hands the matcher whole buffers, and one regex search over a 40 MiB line could run
//! for minutes after the call was cancelled. A long haystack is searched in pieces, with the
//! cancel flag read between them:
//!
//! - a pattern that is one literal (`literal=True`, or a regex without metacharacters; case
//!   sensitive) is found with `memmem`, [`PIECE`] bytes at a time;
//! - a pattern whose matches have a bounded length, which asserts nothing about what
//!   surrounds them (no `^`, `$`, `\b`) and whose automaton is small is searched in windows of
//!   [`WINDOW`] bytes (or twice that length) that overlap by that length, each window a span
//!   of the whole haystack;
//! - any other pattern is searched by [`LazySearch`], its lazy DFA driven a byte at a time
//!   with the flag read every few dozen bytes; a pattern whose automaton is big (over
//!   [`BIG_NFA`] states, where one engine call on a buffer of short lines can take seconds)
//!   is searched so on any haystack over [`SHORT`] bytes, not only on long ones. Where the
//!   lazy DFA cannot go on (a Unicode `\b` next to a non-ASCII byte) the haystack is searched
//!   in one engine call, the flag read before it.
//!
//! A cancelled search answers "no match" from then on; the reader the searcher reads from
//! fails its next read ([`super::grep::CancelReader`]), which ends the file's search.

use std::sync::OnceLock;

use grep_matcher::{LineMatchKind, LineTerminator, Match, Matcher, NoError};
use grep_regex::RegexMatcher;
use memchr::memmem;
use regex_syntax::hir::{self, Hir, HirKind};

use crate::cancel::CancelFlag;
use crate::fs::text::lazy::{LazySearch, Stop};

/// Bytes a literal is looked for in between two reads of the cancel flag on a long haystack
/// (`memmem` goes through them in well under a millisecond).
pub const PIECE: usize = 1 << 20;

/// Bytes a window of a bounded pattern starts with (beside the overlap): a regex search goes
/// through this much in a few milliseconds unless the pattern's automaton is huge.
pub const WINDOW: usize = 64 << 10;

/// Bytes from which a haystack is long: searched in pieces or by the lazy DFA.
pub const LONG: usize = 256 << 10;

/// States of a pattern's automaton (as [`automaton_size`] estimates them) from which it is
/// big: one engine call over a buffer of [`SHORT`] bytes or more can take long (the engine's
/// lazy DFA gives up and its PikeVM walks every state for every byte). Below it the engine
/// keeps short haystacks and windows: the lazy DFA here has no literal prefilter, and a
/// pattern such as `\w{1,50}zq` (about 38,000) goes through a source tree in 16 ms with the
/// engine but 2 s with it. The price: `(x|xx){1,13000}y` (about 39,000) can still spend
/// seconds in one 64 KiB window after a cancel.
pub const BIG_NFA: usize = 50_000;

/// Bytes from which a haystack is searched by the lazy DFA when the automaton is big.
pub const SHORT: usize = 4 << 10;

/// How a long haystack is cut.
enum Pieces {
    /// The pattern is this literal.
    Literal(Box<memmem::Finder<'static>>),
    /// Matches are at most this many bytes long and assert nothing outside themselves.
    Windows(usize),
    /// The lazy DFA of this HIR (built on the first long haystack), reading the flag as it
    /// goes; `big`: its automaton has more than [`BIG_NFA`] states.
    Lazy {
        hir: Box<Hir>,
        dfa: Box<OnceLock<Option<LazySearch>>>,
        big: bool,
    },
    /// One search (a pattern the matcher's HIR could not be rebuilt for).
    Whole,
}

/// A [`RegexMatcher`] that reads `cancel` between pieces of a long haystack where the
/// pattern allows it (see the module doc).
pub struct CancelMatcher<'a> {
    inner: &'a RegexMatcher,
    cancel: &'a CancelFlag,
    pieces: &'a Pieces,
    /// Haystacks from this many bytes (past the search start) take the cut search.
    long: usize,
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
        let Some(hir) = grep_hir(syntax, ignore_case) else {
            return Cuts(Pieces::Whole);
        };
        let big = automaton_size(&hir) > BIG_NFA;
        let props = hir.properties();
        match props.maximum_len() {
            Some(max) if props.look_set().is_empty() && !big => Cuts(Pieces::Windows(max)),
            _ => Cuts(Pieces::Lazy {
                hir: Box::new(hir),
                dfa: Box::default(),
                big,
            }),
        }
    }

    /// `inner` reading `cancel` between pieces.
    pub fn matcher<'a>(
        &'a self,
        inner: &'a RegexMatcher,
        cancel: &'a CancelFlag,
    ) -> CancelMatcher<'a> {
        let long = match self.0 {
            Pieces::Lazy { big: true, .. } => SHORT,
            _ => LONG,
        };
        CancelMatcher {
            inner,
            cancel,
            pieces: &self.0,
            long,
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
            Pieces::Lazy { hir, dfa, .. } => {
                let lazy = dfa.get_or_init(|| LazySearch::new(hir));
                let found = match lazy {
                    Some(lazy) => lazy.find_at(haystack, at, self.cancel),
                    None => Err(Stop::Unsupported),
                };
                match found {
                    Ok(m) => m.map(|(s, e)| Match::new(s, e)),
                    Err(Stop::Cancelled) => None,
                    Err(Stop::Unsupported) => self.inner.find_at(haystack, at).ok().flatten(),
                }
            }
            Pieces::Whole => self.inner.find_at(haystack, at).ok().flatten(),
        }
    }

    /// Whether `haystack` from `at` is long enough to cut.
    fn long(&self, haystack: &[u8], at: usize) -> bool {
        haystack.len().saturating_sub(at) > self.long
    }
}

impl Matcher for CancelMatcher<'_> {
    type Captures = <RegexMatcher as Matcher>::Captures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        if self.cancel.is_cancelled() {
            return Ok(None);
        }
        if self.long(haystack, at) {
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
        if self.long(haystack, at) {
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
        if self.long(haystack, 0) {
            return Ok(self
                .find_cut(haystack, 0)
                .map(|m| LineMatchKind::Confirmed(m.start())));
        }
        self.inner.find_candidate_line(haystack)
    }
}

/// The HIR `grep_regex` builds for `syntax` with [`super::grep::matcher`]'s settings
/// (multi-line, Unicode, bytes, no octal, then every `\n` taken out of classes: a match never
/// spans lines). `None` when it does not parse (the matcher would not have built either).
fn grep_hir(syntax: &str, ignore_case: bool) -> Option<Hir> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(ignore_case)
        .multi_line(true)
        .dot_matches_new_line(false)
        .crlf(false)
        .swap_greed(false)
        .unicode(true)
        .octal(false)
        .build()
        .parse(&format!("(?:{syntax})"))
        .ok()?;
    Some(strip_newline(hir))
}

/// `hir` with `\n` removed from every class (a literal `\n` is refused when the matcher is
/// built, so none is left).
fn strip_newline(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Class(hir::Class::Unicode(mut cls)) => {
            let nl = hir::ClassUnicode::new([hir::ClassUnicodeRange::new('\n', '\n')]);
            cls.difference(&nl);
            Hir::class(hir::Class::Unicode(cls))
        }
        HirKind::Class(hir::Class::Bytes(mut cls)) => {
            let nl = hir::ClassBytes::new([hir::ClassBytesRange::new(b'\n', b'\n')]);
            cls.difference(&nl);
            Hir::class(hir::Class::Bytes(cls))
        }
        HirKind::Repetition(mut rep) => {
            rep.sub = Box::new(strip_newline(*rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Capture(mut cap) => {
            cap.sub = Box::new(strip_newline(*cap.sub));
            Hir::capture(cap)
        }
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(strip_newline).collect()),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.into_iter().map(strip_newline).collect())
        }
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => Hir::literal(lit.0),
        HirKind::Look(look) => Hir::look(look),
    }
}

/// A quick estimate of the states of `hir`'s automaton (a walk of the HIR, no compile):
/// literals count their bytes, classes their ranges, repetitions multiply.
fn automaton_size(hir: &Hir) -> usize {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(lit) => lit.0.len(),
        HirKind::Class(hir::Class::Unicode(cls)) => cls.ranges().len(),
        HirKind::Class(hir::Class::Bytes(cls)) => cls.ranges().len(),
        HirKind::Repetition(rep) => {
            let copies = rep.max.unwrap_or(rep.min).max(rep.min).max(1);
            automaton_size(&rep.sub).saturating_mul(copies as usize)
        }
        HirKind::Capture(cap) => automaton_size(&cap.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs
            .iter()
            .map(automaton_size)
            .fold(0, usize::saturating_add),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::text::lazy::Gen;
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
            ("ne+dle|needles", false, "lazy"),
            ("ne{1,3}dle|needles", false, "windows"),
            ("(ab|a)c?", false, "windows"),
            ("^needle", false, "lazy"),
        ] {
            let cuts = Cuts::new(pattern, literal, false);
            let got = match cuts.0 {
                Pieces::Literal(_) => "literal",
                Pieces::Windows(_) => "windows",
                Pieces::Lazy { .. } => "lazy",
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

    /// The lazy DFA finds exactly the matches the engine finds (start and end, from every
    /// search start), on random patterns and haystacks: the cut search forced on short
    /// haystacks.
    #[test]
    fn lazy_dfa_finds_what_the_engine_finds() {
        let c = CancelFlag::new();
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for round in 0..100 {
            let pattern = g.pattern(4);
            let ignore_case = round % 4 == 0;
            let Ok(inner) = RegexMatcherBuilder::new()
                .multi_line(true)
                .unicode(true)
                .octal(false)
                .case_insensitive(ignore_case)
                .line_terminator(Some(b'\n'))
                .dot_matches_new_line(false)
                .ban_byte(Some(b'\x00'))
                .build(&pattern)
            else {
                continue;
            };
            let hir = grep_hir(&pattern, ignore_case).expect("parses when the matcher builds");
            let pieces = Pieces::Lazy {
                hir: Box::new(hir),
                dfa: Box::default(),
                big: true,
            };
            let m = CancelMatcher {
                inner: &inner,
                cancel: &c,
                pieces: &pieces,
                long: 0,
            };
            for _ in 0..12 {
                let hay = g.haystack();
                for at in 0..=hay.len() {
                    assert_eq!(
                        m.find_at(&hay, at).unwrap(),
                        inner.find_at(&hay, at).unwrap(),
                        "{pattern:?} (ignore case {ignore_case}) in {:?} from {at}",
                        String::from_utf8_lossy(&hay)
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared > 20_000, "{compared}");
    }

    /// A big automaton is searched by the lazy DFA from a few KiB on; a small bounded one in
    /// windows; an unbounded one by the lazy DFA on long haystacks.
    #[test]
    fn big_and_unbounded_patterns_take_the_lazy_dfa() {
        let kind = |p: &str| match Cuts::new(p, false, false).0 {
            Pieces::Lazy { big: true, .. } => "lazy big",
            Pieces::Lazy { big: false, .. } => "lazy",
            Pieces::Windows(_) => "windows",
            Pieces::Literal(_) => "literal",
            Pieces::Whole => "whole",
        };
        assert_eq!(kind("(x|xx){1,20000}y"), "lazy big");
        assert_eq!(kind("(x|xx){1,20}y"), "windows");
        assert_eq!(kind("a.*b"), "lazy");
        assert_eq!(kind("x+y"), "lazy");
        assert_eq!(kind("\\w{1,50}"), "windows");
        assert_eq!(kind("(x|xx){1,20000}y+"), "lazy big");
    }

    /// A cancelled lazy search of a big automaton over a long line answers no match.
    #[test]
    fn a_cancelled_lazy_search_finds_nothing() {
        let c = CancelFlag::new();
        let cuts = Cuts::new("(x|xx){1,200}y+", false, false);
        let inner = regex("(x|xx){1,200}y+", false);
        let m = cuts.matcher(&inner, &c);
        let mut hay = vec![b'x'; 2 * PIECE];
        hay.extend_from_slice(b"y\n");
        assert_eq!(m.find_at(&hay, 0).unwrap(), inner.find_at(&hay, 0).unwrap());
        c.cancel();
        assert_eq!(m.find_at(&hay, 0).unwrap(), None);
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
