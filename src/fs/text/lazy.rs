//! A regex search that reads the cancel flag as it goes, however long the haystack and however
//! big the pattern's automaton (issue 19).
//!
//! The `regex` engines search a haystack in one call: a cancel cannot stop it, and on a long
//! line with a big automaton that call runs for seconds or minutes (their lazy DFA gives up
//! and falls back to the PikeVM). Here the lazy DFA of `regex-automata` is driven a byte at a
//! time: it is told never to give up (its cache is cleared and refilled as often as needed,
//! within a bounded capacity), and the cancel flag is read every [`CHECK_EVERY`] bytes.
//!
//! A leftmost-first match is found as the engines find it: a forward search gives the end of
//! the match, an anchored reverse search from that end (longest match) gives its start. Given
//! the same [`Hir`] the answer is the one the engines give.
//!
//! A Unicode word boundary (`\b`, `\w` boundaries with Unicode on) is handled by the lazy DFA
//! only over ASCII: at the first non-ASCII byte the search answers [`Stop::Unsupported`] and
//! the caller searches as before (one call, the flag read before it).

use std::sync::Mutex;

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::hybrid::LazyStateID;
use regex_automata::nfa::thompson;
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::hir::Hir;

use crate::cancel::CancelFlag;

/// Bytes searched between two reads of the cancel flag. Each byte is at most one transition
/// of the lazy DFA, which builds a state when it has none (work proportional to the pattern's
/// automaton): 64 of those keep a huge pattern within milliseconds of the cancel.
pub const CHECK_EVERY: usize = 64;

/// Bytes of the lazy DFA's state cache (per direction, per search in flight). When full it is
/// cleared and filled again; the search never gives up.
const CACHE_BYTES: usize = 2 << 20;

/// Why a search did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The cancel flag was set.
    Cancelled,
    /// The lazy DFA cannot go on (a Unicode word boundary next to a non-ASCII byte): the
    /// caller searches with its own engine.
    Unsupported,
}

/// A pattern's forward and reverse lazy DFAs, with caches for the searches in flight.
pub struct LazySearch {
    fwd: DFA,
    rev: DFA,
    caches: Mutex<Vec<(Cache, Cache)>>,
}

impl std::fmt::Debug for LazySearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazySearch")
    }
}

impl LazySearch {
    /// The lazy DFAs of `hir` (as the engine that searches it normally compiled it: `regex`
    /// syntax, already case-folded, stripped of line terminators, ...). `None` when they
    /// cannot be built (a pattern over the automaton size limit): the caller keeps its engine.
    pub fn new(hir: &Hir) -> Option<Self> {
        let base = DFA::config()
            .cache_capacity(CACHE_BYTES)
            .skip_cache_capacity_check(true)
            .minimum_cache_clear_count(None)
            .minimum_bytes_per_state(None)
            .unicode_word_boundary(true);
        let nfa = |reverse: bool| {
            thompson::Compiler::new()
                .configure(
                    thompson::Config::new()
                        .utf8(false)
                        .reverse(reverse)
                        .shrink(reverse)
                        .which_captures(thompson::WhichCaptures::None),
                )
                .build_from_hir(hir)
                .ok()
        };
        let fwd = DFA::builder()
            .configure(base.clone().match_kind(MatchKind::LeftmostFirst))
            .build_from_nfa(nfa(false)?)
            .ok()?;
        let rev = DFA::builder()
            .configure(
                base.match_kind(MatchKind::All)
                    .prefilter(None)
                    .specialize_start_states(false),
            )
            .build_from_nfa(nfa(true)?)
            .ok()?;
        Some(LazySearch {
            fwd,
            rev,
            caches: Mutex::new(Vec::new()),
        })
    }

    /// The leftmost-first match in `haystack[at..]` (look-behind sees `haystack[..at]`), as
    /// `(start, end)` byte offsets of `haystack`.
    ///
    /// Errors: [`Stop::Cancelled`] once `cancel` is set, [`Stop::Unsupported`] (see the module
    /// doc).
    pub fn find_at(
        &self,
        haystack: &[u8],
        at: usize,
        cancel: &CancelFlag,
    ) -> Result<Option<(usize, usize)>, Stop> {
        self.with_caches(|fwd, rev| {
            let Some(end) = self.forward(fwd, haystack, at, false, cancel)? else {
                return Ok(None);
            };
            if end == at {
                return Ok(Some((at, at)));
            }
            let start = self.reverse(rev, haystack, at, end, cancel)?;
            Ok(Some((start, end)))
        })
    }

    /// Whether `haystack` holds a match.
    ///
    /// Errors: as [`LazySearch::find_at`].
    pub fn is_match(&self, haystack: &[u8], cancel: &CancelFlag) -> Result<bool, Stop> {
        self.with_caches(|fwd, _| Ok(self.forward(fwd, haystack, 0, true, cancel)?.is_some()))
    }

    /// Runs `f` with a pair of caches of this pattern's DFAs, taken from the pool (or new)
    /// and given back after.
    fn with_caches<T>(&self, f: impl FnOnce(&mut Cache, &mut Cache) -> T) -> T {
        let taken = self.caches.lock().ok().and_then(|mut v| v.pop());
        let (mut fwd, mut rev) =
            taken.unwrap_or_else(|| (self.fwd.create_cache(), self.rev.create_cache()));
        let out = f(&mut fwd, &mut rev);
        if let Ok(mut v) = self.caches.lock() {
            // A few caches at most are kept: one per thread searching at a time.
            if v.len() < 8 {
                v.push((fwd, rev));
            }
        }
        out
    }

    /// The end of the leftmost-first match in `haystack[at..]` (any match's end when
    /// `earliest`).
    fn forward(
        &self,
        cache: &mut Cache,
        haystack: &[u8],
        at: usize,
        earliest: bool,
        cancel: &CancelFlag,
    ) -> Result<Option<usize>, Stop> {
        if at > haystack.len() {
            return Ok(None);
        }
        let dfa = &self.fwd;
        let input = Input::new(haystack).span(at..haystack.len());
        let mut sid = dfa
            .start_state_forward(cache, &input)
            .map_err(|_| Stop::Unsupported)?;
        let mut end = None;
        let mut pos = at;
        while pos < haystack.len() {
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            let stop = haystack.len().min(pos + CHECK_EVERY);
            for &byte in &haystack[pos..stop] {
                sid = step(dfa, cache, sid, byte)?;
                if sid.is_tagged() {
                    if sid.is_match() {
                        end = Some(pos);
                        if earliest {
                            return Ok(end);
                        }
                    } else if sid.is_dead() {
                        return Ok(end);
                    } else if sid.is_quit() {
                        return Err(Stop::Unsupported);
                    }
                }
                pos += 1;
            }
        }
        sid = dfa
            .next_eoi_state(cache, sid)
            .map_err(|_| Stop::Unsupported)?;
        if sid.is_match() {
            end = Some(haystack.len());
        }
        Ok(end)
    }

    /// The start of the longest match ending at `end` and starting at or after `at` (there is
    /// one: the forward search found it).
    fn reverse(
        &self,
        cache: &mut Cache,
        haystack: &[u8],
        at: usize,
        end: usize,
        cancel: &CancelFlag,
    ) -> Result<usize, Stop> {
        let dfa = &self.rev;
        let input = Input::new(haystack).span(at..end).anchored(Anchored::Yes);
        let mut sid = dfa
            .start_state_reverse(cache, &input)
            .map_err(|_| Stop::Unsupported)?;
        let mut start = None;
        let mut pos = end;
        'outer: while pos > at {
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            let stop = at.max(pos.saturating_sub(CHECK_EVERY));
            while pos > stop {
                pos -= 1;
                sid = step(dfa, cache, sid, haystack[pos])?;
                if sid.is_tagged() {
                    if sid.is_match() {
                        start = Some(pos + 1);
                    } else if sid.is_dead() {
                        break 'outer;
                    } else if sid.is_quit() {
                        return Err(Stop::Unsupported);
                    }
                }
            }
        }
        if pos == at && !sid.is_dead() {
            sid = match at.checked_sub(1) {
                Some(before) => next(dfa, cache, sid, haystack[before])?,
                None => dfa
                    .next_eoi_state(cache, sid)
                    .map_err(|_| Stop::Unsupported)?,
            };
            if sid.is_match() {
                start = Some(at);
            } else if sid.is_quit() {
                return Err(Stop::Unsupported);
            }
        }
        start.ok_or(Stop::Unsupported)
    }
}

/// One transition, by the cache's table alone when it holds it (the DFA never gives up:
/// an error is not expected).
#[inline(always)]
fn step(dfa: &DFA, cache: &mut Cache, sid: LazyStateID, byte: u8) -> Result<LazyStateID, Stop> {
    if !sid.is_tagged() {
        let to = dfa.next_state_untagged(cache, sid, byte);
        if !to.is_unknown() {
            return Ok(to);
        }
    }
    next(dfa, cache, sid, byte)
}

/// One transition (the DFA never gives up: an error is not expected).
fn next(dfa: &DFA, cache: &mut Cache, sid: LazyStateID, byte: u8) -> Result<LazyStateID, Stop> {
    dfa.next_state(cache, sid, byte)
        .map_err(|_| Stop::Unsupported)
}

/// A small deterministic generator of patterns and haystacks (xorshift), for the tests that
/// compare the lazy DFA with the engines.
#[cfg(test)]
pub(crate) struct Gen(pub(crate) u64);

#[cfg(test)]
impl Gen {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.below(of.len())]
    }
    /// A random pattern over a small alphabet, `depth` levels of nesting at most.
    pub(crate) fn pattern(&mut self, depth: usize) -> String {
        const ATOMS: &[&str] = &[
            "a",
            "b",
            "x",
            "é",
            "A",
            ".",
            "[ab]",
            "[^a]",
            "\\w",
            "\\d",
            "\\s",
            "\\b",
            "\\B",
            "^",
            "$",
            "(?-u:\\b)",
            "[[:alpha:]]",
            "\\W",
            " ",
            "[^\\n]",
        ];
        if depth == 0 || self.below(3) == 0 {
            return self.pick(ATOMS).to_string();
        }
        let inner = self.pattern(depth - 1);
        match self.below(9) {
            0 => format!("{inner}{}", self.pattern(depth - 1)),
            1 => format!(
                "{inner}{}{}",
                self.pattern(depth - 1),
                self.pattern(depth - 1)
            ),
            2 => format!("(?:{inner}|{})", self.pattern(depth - 1)),
            3 => format!("({inner})*"),
            4 => format!("(?:{inner})+?"),
            5 => format!("({inner})?"),
            6 => format!("(?:{inner}){{{},{}}}", self.below(3), 2 + self.below(3)),
            7 => format!("(?i:{inner})"),
            _ => format!("{inner}+"),
        }
    }
    /// A random haystack: short lines of the pattern alphabet.
    pub(crate) fn haystack(&mut self) -> Vec<u8> {
        const CHARS: &[&str] = &["a", "b", "x", "é", "A", " ", "1", "\n", "ab", "xx"];
        let n = self.below(60);
        (0..n)
            .flat_map(|_| self.pick(CHARS).as_bytes().to_vec())
            .collect()
    }
}
