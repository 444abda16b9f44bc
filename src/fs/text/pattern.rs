//! Python `re` patterns on the Rust engines: a pattern compiled on the linear-time `regex`
//! engine when it compiles there, else on `fancy-regex` (lookaround, backreferences); Python's
//! error texts for bad patterns; the literal prefilter every match must pass.

use std::sync::{Arc, OnceLock};

use regex_syntax::hir::literal::{ExtractKind, Extractor};

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::text::lazy::{LazySearch, Stop};

/// A compiled search pattern. A clone shares the compiled program but not the match
/// scratch space, so one clone per thread matches without contention.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// The linear-time engine, and how a long line is searched.
    Fast(regex::Regex, LongLines),
    /// The backtracking engine, for lookaround and backreferences.
    Fancy(fancy_regex::Regex),
}

/// Bytes from which a line is long: a [`Pattern::Fast`] given a cancel flag searches it with
/// [`LazySearch`], which reads the flag as it goes (one engine call over a long line with a
/// big automaton runs for seconds, and a cancel cannot stop it; issue 19).
pub const LONG_LINE: usize = 256 << 10;

/// How a [`Pattern::Fast`] searches long lines: the cancel flag (none: as a short line) and
/// the lazy DFA, built on the first long line and shared by clones.
#[derive(Debug, Clone, Default)]
pub struct LongLines {
    cancel: Option<CancelFlag>,
    lazy: Arc<OnceLock<Option<LazySearch>>>,
    /// Lines from this many bytes are long ([`LONG_LINE`]; lower in tests).
    from: usize,
}

impl Pattern {
    /// Compiles a Python `re` pattern. `\Z` is read as `\z` (Python's end of string).
    ///
    /// Errors: `ErrorKind::InvalidPattern` `Invalid regex pattern: <message>`.
    pub fn new(pattern: &str) -> Result<Self> {
        // Escapes Python rejects but the Rust engines accept (`\\p{L}`, `\\z`, ...).
        if let Some(msg) = bad_escape(pattern) {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!("Invalid regex pattern: {msg}"),
            ));
        }
        let translated = translate(pattern);
        if let Err(msg) = capture_room(&translated, false) {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!("Invalid regex pattern: {msg}"),
            ));
        }
        match regex::RegexBuilder::new(&translated)
            .size_limit(64 << 20)
            .build()
        {
            Ok(r) => Ok(Pattern::Fast(
                r,
                LongLines {
                    from: LONG_LINE,
                    ..LongLines::default()
                },
            )),
            Err(fast_err) => match fancy_regex::RegexBuilder::new(&translated)
                .backtrack_limit(1_000_000)
                .build()
            {
                Ok(r) => Ok(Pattern::Fancy(r)),
                Err(e) => {
                    if let Some(msg) = python_error(pattern) {
                        return Err(Error::new(
                            ErrorKind::InvalidPattern,
                            format!("Invalid regex pattern: {msg}"),
                        ));
                    }
                    let msg = match fast_err {
                        regex::Error::Syntax(_) => e.to_string(),
                        other => other.to_string(),
                    };
                    let msg = msg
                        .lines()
                        .rfind(|l| !l.trim().is_empty())
                        .unwrap_or("invalid pattern")
                        .trim();
                    Err(Error::new(
                        ErrorKind::InvalidPattern,
                        format!("Invalid regex pattern: {msg}"),
                    ))
                }
            },
        }
    }

    /// The most bytes a match can span, when that is bounded and the pattern has no
    /// assertion (`^`, `$`, `\b`, lookaround) whose answer depends on what lies outside a
    /// window of the line: then a line can be searched in windows overlapping by this much.
    pub fn max_match_bytes(&self) -> Option<usize> {
        let Pattern::Fast(r, _) = self else {
            return None;
        };
        let hir = regex_syntax::Parser::new().parse(r.as_str()).ok()?;
        let props = hir.properties();
        if !props.look_set().is_empty() {
            return None;
        }
        props.maximum_len()
    }

    /// This pattern reading `cancel` as it searches a long line (see [`LongLines`]): once
    /// it is set, no line matches.
    pub fn cancelled_by(mut self, cancel: &CancelFlag) -> Self {
        if let Pattern::Fast(_, long) = &mut self {
            long.cancel = Some(cancel.clone());
        }
        self
    }

    /// Lines from `bytes` are long (tests: the lazy DFA compared with the engine).
    #[cfg(test)]
    pub(crate) fn long_from(mut self, bytes: usize) -> Self {
        if let Pattern::Fast(_, long) = &mut self {
            long.from = bytes;
        }
        self
    }

    /// Whether `line` holds a match (`re.search`). A backtracking limit counts as no match.
    pub fn is_match(&self, line: &str) -> bool {
        match self {
            Pattern::Fast(r, long) => match long.lazy(r, line) {
                Some((lazy, cancel)) => match lazy.is_match(line.as_bytes(), cancel) {
                    Ok(found) => found,
                    Err(Stop::Cancelled) => false,
                    Err(Stop::Unsupported) => !cancel.is_cancelled() && r.is_match(line),
                },
                None => r.is_match(line),
            },
            Pattern::Fancy(r) => r.is_match(line).unwrap_or(false),
        }
    }

    /// The first match in `line` (`re.search`), as a byte range. A backtracking limit counts
    /// as no match.
    pub fn find(&self, line: &str) -> Option<(usize, usize)> {
        match self {
            Pattern::Fast(r, long) => {
                let engine = || r.find(line).map(|m| (m.start(), m.end()));
                match long.lazy(r, line) {
                    Some((lazy, cancel)) => match lazy.find_at(line.as_bytes(), 0, cancel) {
                        // An empty match is left to the engine: it never splits a char.
                        Ok(Some((s, e))) if s == e => engine(),
                        Ok(found) => found,
                        Err(Stop::Cancelled) => None,
                        Err(Stop::Unsupported) => (!cancel.is_cancelled()).then(engine).flatten(),
                    },
                    None => engine(),
                }
            }
            Pattern::Fancy(r) => r.find(line).ok().flatten().map(|m| (m.start(), m.end())),
        }
    }
}

impl LongLines {
    /// The lazy DFA of `r` and the cancel flag, when `line` is long and there is a flag.
    fn lazy(&self, r: &regex::Regex, line: &str) -> Option<(&LazySearch, &CancelFlag)> {
        let cancel = self.cancel.as_ref()?;
        if line.len() < self.from {
            return None;
        }
        let lazy = self.lazy.get_or_init(|| {
            let hir = regex_syntax::Parser::new().parse(r.as_str()).ok()?;
            LazySearch::new(&hir)
        });
        // No lazy DFA (over its size limit): the engine searches.
        lazy.as_ref().map(|lazy| (lazy, cancel))
    }
}

/// Most bytes the capture slot table of a pattern may take: the `regex` engines' PikeVM
/// (their fallback on a long line) holds a slot per capture group bound for every state of
/// the pattern's automaton, allocated whole, so a pattern with many groups and many states
/// (`(a|b)` written 50,000 times) would ask for gigabytes and abort the process (issue 19).
pub const MAX_CAPTURE_TABLE_BYTES: usize = 256 << 20;

/// Automata bigger than this are left to the engine's own size limit.
const NFA_LIMIT: usize = 64 << 20;

/// Refuses a pattern (`regex` crate syntax) whose capture slot table would pass
/// [`MAX_CAPTURE_TABLE_BYTES`]: its automaton's states times its capture slots. A pattern
/// the `regex` engines cannot compile (lookaround, backreferences, a syntax error) passes:
/// the engine that takes it reports it.
///
/// Errors: the reason, for the caller's error text (`pattern too large: ...`).
pub fn capture_room(pattern: &str, case_insensitive: bool) -> std::result::Result<(), String> {
    use regex_automata::nfa::thompson;
    use regex_automata::util::syntax;
    // A pattern without a group has 2 slots a state: the engine's own size limit bounds it.
    if !pattern.contains('(') {
        return Ok(());
    }
    let nfa = thompson::Compiler::new()
        .syntax(syntax::Config::new().case_insensitive(case_insensitive))
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(NFA_LIMIT))
                .shrink(false),
        )
        .build(pattern);
    let Ok(nfa) = nfa else { return Ok(()) };
    let groups = nfa.group_info().all_group_len().saturating_sub(1);
    let table = nfa
        .states()
        .len()
        .saturating_mul(nfa.group_info().slot_len())
        .saturating_mul(std::mem::size_of::<usize>());
    if table <= MAX_CAPTURE_TABLE_BYTES {
        return Ok(());
    }
    Err(format!(
        "pattern too large: {groups} capture groups over {} automaton states would need {} MiB \
         to match; use non-capturing groups (?:...) or a shorter pattern",
        nfa.states().len(),
        table >> 20
    ))
}

/// Python's `bad escape \\X at position N` for an ASCII-letter escape `re` does not know.
fn bad_escape(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut in_class = false;
    let mut class_start = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let &e = chars.get(i + 1)?;
                let known = if in_class {
                    "abfnrtvxuUNdDsSwW"
                } else {
                    "AbBdDsSwWZabfnrtvxuUN"
                };
                if e.is_ascii_alphabetic() && !known.contains(e) {
                    return Some(format!("bad escape \\{e} at position {i}"));
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = i;
            }
            ']' if in_class
                && i > class_start + 1
                && !(i == class_start + 2 && chars[class_start + 1] == '^') =>
            {
                in_class = false;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Python's `re.error` text for the common syntax errors: unbalanced parentheses, an
/// unterminated character set, a repeat with nothing before it. Positions count chars.
fn python_error(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut open: Vec<usize> = Vec::new();
    let mut i = 0;
    let mut prev_atom = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                i += 2;
                prev_atom = true;
                continue;
            }
            '[' => {
                let start = i;
                let mut j = i + 1;
                if chars.get(j) == Some(&'^') {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += if chars[j] == '\\' { 2 } else { 1 };
                }
                if j >= chars.len() {
                    return Some(format!("unterminated character set at position {start}"));
                }
                i = j + 1;
                prev_atom = true;
                continue;
            }
            '(' => {
                open.push(i);
                prev_atom = false;
                if chars.get(i + 1) == Some(&'?') {
                    i += 2;
                    continue;
                }
            }
            ')' => {
                if open.pop().is_none() {
                    return Some(format!("unbalanced parenthesis at position {i}"));
                }
                prev_atom = true;
            }
            '|' => prev_atom = false,
            '*' | '+' | '?' => {
                if !prev_atom {
                    return Some(format!("nothing to repeat at position {i}"));
                }
                // A lazy or possessive suffix is not a second repeat.
                if matches!(chars.get(i + 1), Some('?') | Some('+')) {
                    i += 1;
                }
            }
            _ => prev_atom = true,
        }
        i += 1;
    }
    open.last()
        .map(|&p| format!("missing ), unterminated subpattern at position {p}"))
}

/// The length of a Python repeat `{m}`, `{m,}`, `{,n}`, `{m,n}` at the start of `s`, and
/// its Rust spelling; `None` when Python reads the brace literally.
fn python_repeat(s: &[char]) -> Option<(usize, String)> {
    let close = s.iter().position(|&c| c == '}')?;
    let body: String = s[1..close].iter().collect();
    let (lo, hi) = match body.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (body.as_str(), None),
    };
    let digits = |x: &str| x.chars().all(|c| c.is_ascii_digit());
    if !digits(lo) || !hi.is_none_or(digits) || (lo.is_empty() && hi.is_none()) {
        return None;
    }
    let rust = match hi {
        None => format!("{{{lo}}}"),
        Some(hi) => format!("{{{},{hi}}}", if lo.is_empty() { "0" } else { lo }),
    };
    Some((close + 1, rust))
}

/// Python-only syntax rewritten for the Rust engines: `\Z`, a literal `{`, `[` and set
/// operators inside a class, a leading `]` in a class.
fn translate(pattern: &str) -> String {
    let all: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().enumerate().peekable();
    let mut in_class = false;
    let mut skip_to = 0;
    while let Some((idx, c)) = chars.next() {
        if idx < skip_to {
            continue;
        }
        match c {
            '{' if !in_class => match python_repeat(&all[idx..]) {
                Some((len, rust)) => {
                    out.push_str(&rust);
                    skip_to = idx + len;
                }
                None => out.push_str("\\{"),
            },
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '\\' => {
                let next = chars.next().map(|(_, n)| n);
                match next {
                    Some('Z') if !in_class => out.push_str("\\z"),
                    // Python's `\s` also matches \x1c-\x1f (`str.isspace`).
                    Some('s') if !in_class => out.push_str("[\\s\\x1c-\\x1f]"),
                    Some('S') if !in_class => out.push_str("[^\\s\\x1c-\\x1f]"),
                    Some('s') => out.push_str("\\s\\x1c-\\x1f"),
                    Some(n) => {
                        out.push('\\');
                        out.push(n);
                    }
                    None => out.push('\\'),
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek().map(|p| p.1) == Some('^') {
                    out.push(chars.next().unwrap().1);
                }
                if chars.peek().map(|p| p.1) == Some(']') {
                    chars.next();
                    out.push_str("\\]");
                }
            }
            '[' if in_class => out.push_str("\\["),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// Literals one of which every match contains, when there are few and they are non-empty.
pub(crate) fn prefilter(pattern: &str) -> Option<regex::bytes::Regex> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&translate(pattern))
        .ok()?;
    let mut best: Option<Vec<Vec<u8>>> = None;
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        let seq = Extractor::new().kind(kind).extract(&hir);
        let Some(lits) = seq.literals() else { continue };
        if lits.is_empty() || lits.len() > 64 || lits.iter().any(|l| l.as_bytes().is_empty()) {
            continue;
        }
        let cand: Vec<Vec<u8>> = lits.iter().map(|l| l.as_bytes().to_vec()).collect();
        let min = |v: &Vec<Vec<u8>>| v.iter().map(Vec::len).min().unwrap_or(0);
        if best.as_ref().is_none_or(|b| min(&cand) > min(b)) {
            best = Some(cand);
        }
    }
    let lits = best?;
    // A U+FFFD in a literal could come from the lossy decode; then raw bytes cannot prefilter.
    if lits
        .iter()
        .any(|l| memchr::memmem::find(l, "\u{FFFD}".as_bytes()).is_some())
    {
        return None;
    }
    let alternation: Vec<String> = lits
        .iter()
        .map(|l| l.iter().map(|b| format!("\\x{b:02x}")).collect::<String>())
        .collect();
    regex::bytes::RegexBuilder::new(&alternation.join("|"))
        .unicode(false)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::text::lazy::Gen;

    /// On a long line (here: any line) the lazy DFA answers as the engine does: whether a
    /// line matches and where its first match is, on random patterns and lines.
    #[test]
    fn long_lines_match_as_short_ones() {
        let c = CancelFlag::new();
        let mut g = Gen(0x2545_f491_4f6c_dd1d);
        let mut compared = 0;
        for _ in 0..300 {
            let pattern = g.pattern(4);
            let Ok(engine) = Pattern::new(&pattern) else {
                continue;
            };
            if matches!(engine, Pattern::Fancy(_)) {
                continue;
            }
            let lazy = engine.clone().cancelled_by(&c).long_from(0);
            for _ in 0..8 {
                let hay = String::from_utf8(g.haystack()).unwrap();
                for (at, _) in hay.char_indices() {
                    let line = &hay[at..];
                    assert_eq!(
                        lazy.is_match(line),
                        engine.is_match(line),
                        "{pattern:?} {line:?}"
                    );
                    assert_eq!(lazy.find(line), engine.find(line), "{pattern:?} {line:?}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 20_000, "{compared}");
        // Once cancelled, a long line does not match.
        let p = Pattern::new("x+y").unwrap().cancelled_by(&c).long_from(0);
        assert!(p.is_match("xxy"));
        c.cancel();
        assert!(!p.is_match("xxy"));
        assert_eq!(p.find("xxy"), None);
    }

    #[test]
    fn patterns() {
        assert!(matches!(
            Pattern::new("(?<=x)y").unwrap(),
            Pattern::Fancy(_)
        ));
        assert!(matches!(Pattern::new("a\\Z").unwrap(), Pattern::Fast(..)));
        assert!(Pattern::new("a\\Z").unwrap().is_match("xa"));
        assert!(Pattern::new("[[]").unwrap().is_match("["));
        assert!(Pattern::new("[]a]").unwrap().is_match("]"));
        assert!(Pattern::new("a{2").unwrap().is_match("a{2"));
        assert!(Pattern::new("a{,2}b").unwrap().is_match("b"));
        assert!(Pattern::new("x{2}").unwrap().is_match("xx"));
        assert!(Pattern::new("[a&&b]").unwrap().is_match("&"));
        assert!(Pattern::new("\\s").unwrap().is_match("\x1f"));
        assert!(Pattern::new("[\\s]").unwrap().is_match("\x1f"));
        assert!(!Pattern::new("\\S").unwrap().is_match("\x1f"));
        let e = Pattern::new("(").unwrap_err();
        assert!(
            e.message.starts_with("Invalid regex pattern: "),
            "{}",
            e.message
        );
    }
}
