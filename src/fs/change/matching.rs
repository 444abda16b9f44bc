//! Where an `edit_file` replacement lands: the exact text first, else the same text with its
//! line endings taken as equal (an LF `old_text` in a CRLF file), and the endings `new_text`
//! gets (those of the text it replaces, else the file's dominant one), so an edit never mixes
//! endings in a file that had one kind. A miss that matches once whitespace is ignored says
//! where and what differs. All of it on bytes, so bytes that are not UTF-8 are kept as they are.
//!
//! The reference replaces exact text only, writes `new_text`'s endings as given and answers
//! every miss with the same sentence. Source: `_apply_replacements`, _toolset.py.

use std::borrow::Cow;

use memchr::memmem;

use crate::error::{Error, ErrorKind, Result};
use crate::fs::change::shown;
use crate::fs::change::tiers::{self, Match, Tier};
use crate::fs::change::write::Replacement;
use crate::fs::contract::Contract;
use crate::fs::read::encoding;

/// A line ending `new_text` is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `\n`.
    Lf,
    /// `\r\n`.
    Crlf,
}

impl Ending {
    fn bytes(self) -> &'static [u8] {
        match self {
            Ending::Lf => b"\n",
            Ending::Crlf => b"\r\n",
        }
    }
}

/// The line ending most lines of `text` end with (`\r\n` or `\n`; a tie goes to the first
/// one), `None` when it has no `\n`.
pub fn dominant_ending(text: &[u8]) -> Option<Ending> {
    let first = memchr::memchr(b'\n', text)?;
    if memchr::memchr(b'\r', text).is_none() {
        return Some(Ending::Lf);
    }
    let (mut crlf, mut lf) = (0usize, 0usize);
    for at in memchr::memchr_iter(b'\n', text) {
        if at > 0 && text[at - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    Some(match crlf.cmp(&lf) {
        std::cmp::Ordering::Greater => Ending::Crlf,
        std::cmp::Ordering::Less => Ending::Lf,
        std::cmp::Ordering::Equal if first > 0 && text[first - 1] == b'\r' => Ending::Crlf,
        std::cmp::Ordering::Equal => Ending::Lf,
    })
}

/// The one ending every line break of `region` uses, `None` when it has none or both.
fn uniform_ending(region: &[u8]) -> Option<Ending> {
    let mut seen = None;
    for at in memchr::memchr_iter(b'\n', region) {
        let e = if at > 0 && region[at - 1] == b'\r' {
            Ending::Crlf
        } else {
            Ending::Lf
        };
        match seen {
            None => seen = Some(e),
            Some(s) if s != e => return None,
            Some(_) => {}
        }
    }
    seen
}

/// `s` with every `\r\n` and `\n` written as `ending` (a lone `\r` is kept).
fn with_ending(s: &[u8], ending: Ending) -> Cow<'_, [u8]> {
    let ok = match ending {
        Ending::Lf => memchr::memchr(b'\r', s).is_none(),
        Ending::Crlf => !has_bare_lf(s),
    };
    if ok {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len() + s.len() / 8);
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\r' && s.get(i + 1) == Some(&b'\n') {
            out.extend_from_slice(ending.bytes());
            i += 2;
        } else if s[i] == b'\n' {
            out.extend_from_slice(ending.bytes());
            i += 1;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

fn has_bare_lf(s: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', s).any(|at| at == 0 || s[at - 1] != b'\r')
}

/// `s` with each `\r\n` as `\n`, and the positions (in the result) of the `\n`s that lost
/// their `\r`.
fn lf_only(s: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(s.len());
    let mut dropped = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\r' && s.get(i + 1) == Some(&b'\n') {
            dropped.push(out.len());
            i += 1;
            continue;
        }
        out.push(s[i]);
        i += 1;
    }
    (out, dropped)
}

/// How many times `needle` occurs in `hay`, overlapping occurrences included, and where the
/// first starts. The needle starts with a whole character, so the next match starts later.
fn count(hay: &[u8], needle: &[u8]) -> (usize, usize) {
    let finder = memmem::Finder::new(needle);
    let (mut n, mut first, mut from) = (0, 0, 0);
    while let Some(at) = finder.find(&hay[from..]) {
        if n == 0 {
            first = from + at;
        }
        n += 1;
        from += at + 1;
    }
    (n, first)
}

/// What one replacement matched.
enum Matches {
    /// Every non-overlapping occurrence of the exact text (`replace_all`), at least one.
    All,
    /// These byte ranges of the text.
    Ranges(Vec<(usize, usize)>),
    /// Matches on a tier past the exact one (`FileSystem(match='tolerant')`).
    Tiered(Tier, Vec<tiers::Found>),
    /// No match, or `count` (more than one) where exactly one was required.
    Miss {
        count: usize,
        ignoring_endings: bool,
    },
    /// `count` matches (more than one) on `tier`, where exactly one was required.
    TierMiss { tier: Tier, count: usize },
}

/// After an exact miss: the first tier past the exact one that finds `old` (every
/// non-overlapping match with `replace_all`, else exactly one), else the exact miss.
fn locate_tolerant(text: &[u8], old: &[u8], replace_all: bool) -> Matches {
    for &tier in &Tier::LADDER[1..] {
        let mut found = tiers::locate(text, old, tier);
        if found.is_empty() {
            continue;
        }
        if replace_all {
            let mut end = 0;
            found.retain(|f| {
                let keep = f.start >= end;
                if keep {
                    end = f.end.max(f.start + 1);
                }
                keep
            });
        } else if found.len() > 1 {
            return Matches::TierMiss {
                tier,
                count: found.len(),
            };
        }
        return Matches::Tiered(tier, found);
    }
    Matches::Miss {
        count: 0,
        ignoring_endings: false,
    }
}

/// What [`apply_matched`] made: the new bytes, a note per replacement matched past the exact
/// tier (`[matched ignoring trailing whitespace on lines 12-14]`), and the byte ranges of the
/// new bytes that the replacements wrote (empty where text was only removed), in order.
#[derive(Debug, Default)]
pub struct Applied {
    /// The edited text.
    pub bytes: Vec<u8>,
    /// The tier notes, one line each.
    pub notes: Vec<String>,
    /// Changed byte ranges of `bytes`, sorted, merged where they touch.
    pub changed: Vec<(usize, usize)>,
}

/// `p`, a position of the text before a replacement, in the text after it; `spans` are the
/// replaced `(old_start, old_end, new_start, new_end)`, in order. A position inside a replaced
/// range goes to its replacement's start (`end == false`) or end.
fn remap(p: usize, spans: &[(usize, usize, usize, usize)], end: bool) -> usize {
    let i = spans.partition_point(|s| s.0 < p);
    match i.checked_sub(1).map(|j| spans[j]) {
        Some((_, old_end, new_start, new_end)) if old_end > p => {
            if end {
                new_end
            } else {
                new_start
            }
        }
        Some((_, old_end, _, new_end)) => p - old_end + new_end,
        None => p,
    }
}

/// `ranges` sorted and merged where they overlap or touch.
fn merged(mut ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `[matched ignoring indentation on lines 3-4, 9-10]` for matches at `regions` of `text`
/// (line numbers as `read_file` gives them under `contract`).
fn tier_note(
    label: Option<&str>,
    tier: Tier,
    text: &[u8],
    regions: &[(usize, usize)],
    contract: Contract,
) -> String {
    let starts = shown::line_starts(text, contract);
    let mut places: Vec<String> = regions
        .iter()
        .take(5)
        .map(|&(a, b)| {
            let first = shown::line_of(&starts, a) + 1;
            let last = shown::line_of(&starts, b.saturating_sub(1).max(a)) + 1;
            if first == last {
                format!("{first}")
            } else {
                format!("{first}-{last}")
            }
        })
        .collect();
    if regions.len() > 5 {
        places.push(format!("and {} more", regions.len() - 5));
    }
    let single = regions.len() == 1 && !places[0].contains('-');
    let noun = if single { "line" } else { "lines" };
    let who = label.map_or("matched".to_string(), |l| format!("{l} matched"));
    format!(
        "[{who} {} on {noun} {}]",
        tier.describe(),
        places.join(", ")
    )
}

fn locate(text: &[u8], old: &[u8], replace_all: bool) -> Matches {
    let exact = if replace_all {
        usize::from(memmem::find(text, old).is_some())
    } else {
        let (n, first) = count(text, old);
        if n == 1 {
            return Matches::Ranges(vec![(first, first + old.len())]);
        }
        n
    };
    if exact > 0 {
        return if replace_all {
            Matches::All
        } else {
            Matches::Miss {
                count: exact,
                ignoring_endings: false,
            }
        };
    }
    let exact_miss = Matches::Miss {
        count: 0,
        ignoring_endings: false,
    };
    // No exact match: compare with every `\r\n` taken as `\n`, on both sides.
    if memchr::memchr(b'\n', old).is_none()
        || (memchr::memchr(b'\r', text).is_none() && memchr::memchr(b'\r', old).is_none())
    {
        return exact_miss;
    }
    let (norm, dropped) = lf_only(text);
    let (needle, _) = lf_only(old);
    let back = |i: usize| i + dropped.partition_point(|&p| p < i);
    let starts: Vec<usize> = if replace_all {
        memmem::find_iter(&norm, &needle).collect()
    } else {
        let (n, first) = count(&norm, &needle);
        if n != 1 {
            return Matches::Miss {
                count: n,
                ignoring_endings: n > 0,
            };
        }
        vec![first]
    };
    if starts.is_empty() {
        return exact_miss;
    }
    Matches::Ranges(
        starts
            .iter()
            .map(|&s| (back(s), back(s + needle.len())))
            .collect(),
    )
}

/// Applies `replacements` to `text` (bytes; those that are not UTF-8 are kept), in order,
/// each matching exactly once (overlapping matches count) or, with `replace_all`, at least
/// once. `old_text` matches its exact bytes, else the same text with `\r\n` and `\n` taken as
/// equal; the line breaks of `new_text` take the ending of the text it replaces when that has
/// one kind, else the file's dominant ending, else its own first one; except where `old_text`
/// holds a `\r\n` and matched exactly: then `new_text` is written as given.
///
/// Errors: `InvalidArgument` (empty old_text), `NoMatch` (with where it would match if
/// whitespace were ignored, or the byte that is not UTF-8 when old_text holds U+FFFD),
/// `AmbiguousMatch`; the reference's messages and labels (`old_text`, or `replacement N`).
pub fn apply(text: &[u8], replacements: &[Replacement], path: &str) -> Result<Vec<u8>> {
    Ok(apply_matched(text, replacements, path, Match::Exact, Contract::Workspace)?.bytes)
}

/// [`apply`], with `mode`'s tiers tried after an exact miss ([`tiers`]: a match past the exact
/// tier must be unique on its tier unless `replace_all`, whose matches are that tier's,
/// non-overlapping; `new_text` is re-indented by the indentation difference the match had),
/// and what a result needs: the tier notes (line numbers of the text each replacement saw, as
/// `read_file` numbers lines under `contract`) and the changed ranges of the new text.
///
/// Errors: those of [`apply`]; an ambiguous match on a tier reads `old_text found 2 times in
/// p (ignoring trailing whitespace). ...`.
pub fn apply_matched(
    text: &[u8],
    replacements: &[Replacement],
    path: &str,
    mode: Match,
    contract: Contract,
) -> Result<Applied> {
    let path = &*crate::fs::text::names::shown_path(path);
    let mut text: Cow<'_, [u8]> = Cow::Borrowed(text);
    let mut dominant: Option<Option<Ending>> = None;
    let mut notes = Vec::new();
    let mut changed: Vec<(usize, usize)> = Vec::new();
    for (index, r) in replacements.iter().enumerate() {
        let label = if replacements.len() > 1 {
            format!("replacement {}", index + 1)
        } else {
            "old_text".to_string()
        };
        if r.old.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{label} is empty; old_text must be the exact text to replace."),
            ));
        }
        let old = r.old.as_bytes();
        let mut matches = locate(&text, old, r.replace_all);
        if mode == Match::Tolerant && matches!(matches, Matches::Miss { count: 0, .. }) {
            matches = locate_tolerant(&text, old, r.replace_all);
        }
        let mut found: Vec<tiers::Found> = Vec::new();
        let ranges = match matches {
            Matches::TierMiss { tier, count } => {
                return Err(Error::new(
                    ErrorKind::AmbiguousMatch,
                    format!(
                        "{label} found {count} times in {path} ({}). Include more surrounding context to \
                         make the match unique. No changes were written.",
                        tier.describe()
                    ),
                ));
            }
            Matches::Tiered(tier, f) => {
                let regions: Vec<(usize, usize)> = f.iter().map(|f| (f.start, f.end)).collect();
                let who = (replacements.len() > 1).then_some(label.as_str());
                notes.push(tier_note(who, tier, &text, &regions, contract));
                found = f;
                regions
            }
            Matches::Miss { count: 0, .. } => {
                let mut message = format!("{label} not found in {path}. No changes were written.");
                if let Some(hint) = miss_hint(&text, &r.old) {
                    message.push(' ');
                    message.push_str(&hint);
                }
                return Err(Error::new(ErrorKind::NoMatch, message));
            }
            Matches::Miss {
                count,
                ignoring_endings,
            } => {
                let how = if ignoring_endings {
                    " (line endings ignored)"
                } else {
                    ""
                };
                return Err(Error::new(
                    ErrorKind::AmbiguousMatch,
                    format!(
                        "{label} found {count} times in {path}{how}. Include more surrounding context to make \
                         the match unique. No changes were written."
                    ),
                ));
            }
            Matches::Ranges(ranges) => ranges,
            Matches::All => memmem::find_iter(&text, old)
                .map(|s| (s, s + old.len()))
                .collect(),
        };
        let new = r.new.as_bytes();
        let has_breaks = memchr::memchr(b'\n', new).is_some();
        // Fallible: many matches times a long new_text can ask more than memory holds.
        let need = ranges
            .len()
            .checked_mul(new.len())
            .and_then(|n| n.checked_add(text.len()));
        let Some(mut out) = need.and_then(crate::fs::room::buffer) else {
            return Err(crate::fs::room::too_big_to_edit(
                path,
                need.unwrap_or(usize::MAX) as u64,
            ));
        };
        let mut at = 0;
        let mut spans = Vec::with_capacity(ranges.len());
        for (i, &(start, end)) in ranges.iter().enumerate() {
            out.extend_from_slice(&text[at..start]);
            let from = out.len();
            let new: Cow<'_, [u8]> = match found.get(i) {
                Some(f) => tiers::reindent(new, &f.shift, f.anchored),
                None => Cow::Borrowed(new),
            };
            // An `old_text` that names `\r\n` and matched exactly: the model chose its endings,
            // so `new_text`'s are meant and written as given (issue 19).
            let named = memmem::find(old, b"\r\n").is_some() && text[start..end] == *old;
            if has_breaks && !named {
                let ending = uniform_ending(&text[start..end])
                    .or_else(|| *dominant.get_or_insert_with(|| dominant_ending(&text)))
                    .or_else(|| dominant_ending(&new));
                match ending {
                    Some(e) => out.extend_from_slice(&with_ending(&new, e)),
                    None => out.extend_from_slice(&new),
                }
            } else {
                out.extend_from_slice(&new);
            }
            spans.push((start, end, from, out.len()));
            at = end;
        }
        out.extend_from_slice(&text[at..]);
        let mut next: Vec<(usize, usize)> = changed
            .iter()
            .map(|&(a, b)| (remap(a, &spans, false), remap(b, &spans, true)))
            .collect();
        // Each replacement marks only its lines that differ (a removal: where lines were).
        next.extend(
            spans
                .iter()
                .filter_map(|s| shown::trim(&text, (s.0, s.1), &out, (s.2, s.3))),
        );
        changed = merged(next);
        text = Cow::Owned(out);
    }
    Ok(Applied {
        bytes: text.into_owned(),
        notes,
        changed,
    })
}

/// Why a missed `old_text` missed, when that can be told: it holds U+FFFD where the file has
/// a byte that is not UTF-8, or it matches once whitespace is ignored.
fn miss_hint(text: &[u8], old: &str) -> Option<String> {
    if old.contains('\u{FFFD}') {
        if let Some((byte, line)) = encoding::first_invalid(text) {
            return Some(format!(
                "old_text holds U+FFFD (\u{FFFD}), which read_file shows in place of bytes that are \
                 not UTF-8; line {line} has such a byte (0x{byte:02x}), which old_text cannot \
                 match. Choose an old_text that stops before or starts after it."
            ));
        }
    }
    whitespace_hint(text, old)
}

/// Largest file whose lines are compared with whitespace ignored after a miss (bytes).
const MAX_HINT_BYTES: usize = 32 * 1024 * 1024;

/// `s`'s words joined by single spaces.
fn loose(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn lines_of(s: &str) -> Vec<&str> {
    s.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// Where `old` matches `text` once the whitespace in and around its lines is ignored, and
/// what differs there: `It matches line 3 if whitespace is ignored: ...`.
fn whitespace_hint(text: &[u8], old: &str) -> Option<String> {
    if text.len() > MAX_HINT_BYTES || old.trim().is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(text);
    let file: Vec<&str> = lines_of(&text);
    let want: Vec<&str> = lines_of(old);
    let k = want.len();
    if k > file.len() {
        return None;
    }
    let want_loose: Vec<String> = want.iter().map(|l| loose(l)).collect();
    let file_loose: Vec<String> = file.iter().map(|l| loose(l)).collect();
    let fits = |i: usize| -> bool {
        if k == 1 {
            return file_loose[i].contains(want_loose[0].as_str());
        }
        file_loose[i].ends_with(want_loose[0].as_str())
            && (1..k - 1).all(|j| file_loose[i + j] == want_loose[j])
            && file_loose[i + k - 1].starts_with(want_loose[k - 1].as_str())
    };
    let starts: Vec<usize> = (0..=file.len() - k).filter(|&i| fits(i)).take(4).collect();
    let first = *starts.first()?;
    let span = |i: usize| {
        if k == 1 {
            format!("{}", i + 1)
        } else {
            format!("{}-{}", i + 1, i + k)
        }
    };
    let mut places: Vec<String> = starts.iter().take(3).map(|&i| span(i)).collect();
    if starts.len() > 3 {
        places.push("more".to_string());
    }
    let noun = if k == 1 { "line" } else { "lines" };
    let mut what = Vec::new();
    for j in 0..k {
        for d in differences(file[first + j], want[j], j == 0, j == k - 1) {
            if what.len() < 3 {
                what.push(format!("line {} {d}", first + j + 1));
            }
        }
    }
    let detail = if what.is_empty() {
        String::new()
    } else {
        format!(": {}", what.join("; "))
    };
    Some(format!(
        "It matches {noun} {} if whitespace is ignored{detail}. Copy old_text exactly as read_file shows it.",
        places.join(", ")
    ))
}

/// What differs in whitespace between a file line and an old_text line that match loosely.
fn differences(file: &str, old: &str, first: bool, last: bool) -> Vec<String> {
    let lead = |s: &str| s.len() - s.trim_start().len();
    let trail = |s: &str| s.len() - s.trim_end().len();
    let (fl, ol) = (&file[..lead(file)], &old[..lead(old)]);
    let (ft, ot) = (
        &file[file.len() - trail(file)..],
        &old[old.len() - trail(old)..],
    );
    let whole = loose(file) == loose(old);
    let mut out = Vec::new();
    if fl != ol && (!first || !ol.is_empty() || whole) {
        out.push(format!(
            "is indented with {} in the file and {} in old_text",
            describe(fl),
            describe(ol)
        ));
    }
    if ft != ot && (!last || !ot.is_empty() || whole) {
        out.push(format!(
            "ends with {} in the file and {} in old_text",
            describe(ft),
            describe(ot)
        ));
    }
    if whole && file.trim() != old.trim() {
        out.push("has different spacing between words".to_string());
    }
    out
}

/// `a tab`, `4 spaces`, `2 tabs and 1 space`, `no whitespace`.
pub(crate) fn describe(ws: &str) -> String {
    if ws.is_empty() {
        return "no whitespace".to_string();
    }
    let count = |c: char| ws.chars().filter(|&x| x == c).count();
    let (tabs, spaces) = (count('\t'), count(' '));
    let other = ws.chars().count() - tabs - spaces;
    let mut parts = Vec::new();
    for (n, one, many) in [
        (tabs, "a tab", "tabs"),
        (spaces, "1 space", "spaces"),
        (
            other,
            "1 other whitespace character",
            "other whitespace characters",
        ),
    ] {
        match n {
            0 => {}
            1 => parts.push(one.to_string()),
            n => parts.push(format!("{n} {many}")),
        }
    }
    parts.join(" and ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &[u8], old: &str, new: &str) -> std::result::Result<Vec<u8>, String> {
        apply(text, &[Replacement::once(old, new)], "f").map_err(|e| e.message)
    }

    #[test]
    fn endings() {
        assert_eq!(dominant_ending(b"a\r\nb\r\nc\n"), Some(Ending::Crlf));
        assert_eq!(dominant_ending(b"a\nb\r\n"), Some(Ending::Lf));
        assert_eq!(dominant_ending(b"a\r\nb\n"), Some(Ending::Crlf));
        assert_eq!(dominant_ending(b"abc"), None);
        // An LF old_text matches a CRLF file; the lines new_text adds are CRLF.
        assert_eq!(
            edit(b"one\r\ntwo\r\nthree\r\n", "one\ntwo\n", "1\n2\n2.5\n").unwrap(),
            b"1\r\n2\r\n2.5\r\nthree\r\n"
        );
        assert_eq!(
            edit(b"one\r\ntwo\r\n", "two", "two\nthree").unwrap(),
            b"one\r\ntwo\r\nthree\r\n"
        );
        // A CRLF new_text in an LF file is written with LF.
        assert_eq!(edit(b"a\nb\n", "a\n", "x\r\ny\r\n").unwrap(), b"x\ny\nb\n");
        // Documented: CRLF old and new text in a CRLF file, exactly as given.
        assert_eq!(
            edit(b"one\r\ntwo\r\n", "one\r\ntwo", "1\r\n2").unwrap(),
            b"1\r\n2\r\n"
        );
        // A mixed file: the replaced text's own ending wins.
        assert_eq!(
            edit(b"a\r\nb\r\nc\nd\n", "c\nd", "x\ny").unwrap(),
            b"a\r\nb\r\nx\ny\n"
        );
        // Ignoring endings, two matches are still ambiguous.
        assert_eq!(
            edit(b"a\r\nb\r\na\r\nb\r\n", "a\nb", "x").unwrap_err(),
            "old_text found 2 times in f (line endings ignored). Include more surrounding context to \
             make the match unique. No changes were written."
        );
        // Bytes that are not UTF-8 are kept.
        assert_eq!(
            edit(b"caf\xe9\nx = 1\n", "x = 1", "x = 2").unwrap(),
            b"caf\xe9\nx = 2\n"
        );
    }

    #[test]
    fn changed_ranges_follow_later_replacements() {
        let batch = [
            Replacement::once("b", "BBB"),
            Replacement::once("d", ""),
            Replacement::once("a", "A"),
        ];
        let applied = apply_matched(
            b"a\nb\nc\nd\ne\n",
            &batch,
            "f",
            Match::Exact,
            Contract::Workspace,
        )
        .unwrap();
        assert_eq!(applied.bytes, b"A\nBBB\nc\n\ne\n");
        // Each replacement's range, moved by the ones after it: "A", "BBB", and the line "d" was.
        assert_eq!(applied.changed, [(0, 1), (2, 5), (8, 9)]);
        // Lines old_text and new_text share are not marked; a removal of whole lines is an
        // empty range where they were.
        let applied = apply_matched(
            b"a\nb\nc\nd\n",
            &[
                Replacement::once("a\nb\nc\n", "a\nB\nc\n"),
                Replacement::once("d\n", ""),
            ],
            "f",
            Match::Exact,
            Contract::Workspace,
        )
        .unwrap();
        assert_eq!(applied.bytes, b"a\nB\nc\n");
        assert_eq!(applied.changed, [(2, 4), (6, 6)]);
        assert!(applied.notes.is_empty());
        let tiered = apply_matched(
            b"x  \ny\n",
            &[Replacement::once("x\ny", "z")],
            "f",
            Match::Tolerant,
            Contract::Workspace,
        )
        .unwrap();
        assert_eq!(tiered.bytes, b"z\n");
        assert_eq!(
            tiered.notes,
            ["[matched ignoring trailing whitespace on lines 1-2]"]
        );
        assert_eq!(tiered.changed, [(0, 1)]);
    }

    #[test]
    fn misses_that_teach() {
        let text = b"def f():\n\tif x:  \n\t\treturn 1\n";
        assert_eq!(
            edit(text, "    if x:\n        return 1", "").unwrap_err(),
            "old_text not found in f. No changes were written. It matches lines 2-3 if whitespace is \
             ignored: line 2 is indented with a tab in the file and 4 spaces in old_text; line 2 ends \
             with 2 spaces in the file and no whitespace in old_text; line 3 is indented with 2 tabs in \
             the file and 8 spaces in old_text. Copy old_text exactly as read_file shows it."
        );
        assert_eq!(
            edit(b"a  b\n", "a b", "").unwrap_err(),
            "old_text not found in f. No changes were written. It matches line 1 if whitespace is \
             ignored: line 1 has different spacing between words. Copy old_text exactly as read_file \
             shows it."
        );
        assert_eq!(
            edit(b"abc\n", "xyz", "").unwrap_err(),
            "old_text not found in f. No changes were written."
        );
        assert_eq!(
            edit(b"ok\ncaf\xe9 au lait\n", "caf\u{FFFD} au lait", "").unwrap_err(),
            "old_text not found in f. No changes were written. old_text holds U+FFFD (\u{FFFD}), which \
             read_file shows in place of bytes that are not UTF-8; line 2 has such a byte (0xe9), \
             which old_text cannot match. Choose an old_text that stops before or starts after it."
        );
    }
}
