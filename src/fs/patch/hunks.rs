//! Where the hunks of an `Update File` land in a file's bytes, and the bytes they make.
//!
//! Lines are split as `read_file` splits them (at `\n`, and under the document's contract
//! also at a lone `\r`) and compared without their terminators, so a CRLF or CR-only file
//! matches a patch written with `\n`; every line the hunks do not remove or add is copied byte for byte (its own terminator,
//! bytes that are not UTF-8 included), and an added line gets the file's dominant ending (`\n`, `\r\n` or `\r`). Each
//! hunk is searched from where the previous one ended, after its `@@` anchors; a hunk with
//! `*** End of File` is tried at the end first. Lines are found by the one line search of the
//! match tiers ([`tiers::seek_lines`]): exactly by default, the first match from that place
//! (as Codex does: the hunks' order disambiguates); with `match='tolerant'` a match past the
//! exact tier must be unique from that place on, is reported ([`TierMatch`]), and on the
//! indentation tiers re-indents the hunk's added lines by the same shift. An `@@` anchor names
//! a line compared without its leading and trailing whitespace (as Codex finds it), or on a
//! later tier. A UTF-16 file is
//! decoded, patched and written back in its encoding; a UTF-8 byte order mark stays out of
//! reach of the hunks.

use crate::error::{Error, ErrorKind, Result};
use crate::fs::change::matching::describe;
use crate::fs::change::tiers::{self, Match, Shift, Tier};
use crate::fs::contract::Contract;
use crate::fs::patch::parse::{Hunk, HunkLine};
use crate::fs::read::encoding;
use crate::fs::read::hash::{is_binary, BINARY_SAMPLE};
use crate::fs::text::py_repr;

/// One line of a file: its content and its terminator (`\n`, `\r\n`, a lone `\r` under the
/// document's contract, or none at the end).
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    content: &'a [u8],
    terminator: &'a [u8],
}

/// `bytes` split into lines as `read_file` splits them for the hunks: at `\n` (a `\r` before
/// it part of the terminator) and, when `cr` (the document's contract, whose `read_file`
/// splits at `str.splitlines`' terminators), also at a lone `\r`. The rarer terminators of
/// `str.splitlines` (`\x0c`, `\x85`, ...) stay inside their line, as `git diff` keeps them.
fn split_lines(bytes: &[u8], cr: bool) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let breaks: Box<dyn Iterator<Item = usize>> = if cr {
        Box::new(memchr::memchr2_iter(b'\n', b'\r', bytes))
    } else {
        Box::new(memchr::memchr_iter(b'\n', bytes))
    };
    for at in breaks {
        if bytes[at] == b'\r' && bytes.get(at + 1) == Some(&b'\n') {
            continue; // the `\n` after it ends the line
        }
        let end = if bytes[at] == b'\n' && at > start && bytes[at - 1] == b'\r' {
            at - 1
        } else {
            at
        };
        out.push(Line {
            content: &bytes[start..end],
            terminator: &bytes[end..=at],
        });
        start = at + 1;
    }
    if start < bytes.len() {
        out.push(Line {
            content: &bytes[start..],
            terminator: b"",
        });
    }
    out
}

/// Byte offsets where each line of `bytes` starts, as the hunks split them ([`apply`] with
/// `contract`), for numbering the lines a [`TierMatch`] names.
pub fn line_starts(bytes: &[u8], contract: Contract) -> Vec<usize> {
    let mut at = 0;
    split_lines(bytes, contract == Contract::Document)
        .iter()
        .map(|l| {
            let start = at;
            at += l.content.len() + l.terminator.len();
            start
        })
        .collect()
}

/// The ending of most of `file`'s lines, which added lines get: `\n` for a file without one
/// (ties go to the first line's).
fn dominant(file: &[Line<'_>]) -> &'static [u8] {
    let endings: [&'static [u8]; 3] = [b"\n", b"\r\n", b"\r"];
    let count = |e: &[u8]| file.iter().filter(|l| l.terminator == e).count();
    let first = file
        .iter()
        .map(|l| l.terminator)
        .find(|t| !t.is_empty())
        .unwrap_or(b"\n");
    let mut best: &'static [u8] = b"\n";
    let mut most = 0;
    for e in endings {
        let n = count(e);
        if n > most || (n == most && n > 0 && e == first) {
            (best, most) = (e, n);
        }
    }
    best
}

/// Where a missed hunk was looked for.
struct Place {
    /// The line it was looked for after (0: from the start).
    from: usize,
    /// Where the previous hunk ended, for a hunk after the first.
    previous_end: Option<usize>,
    /// Where its lines are, before `from`, if they are.
    earlier: Option<usize>,
}

/// What made a hunk miss, for the retry.
fn miss(
    path: &str,
    number: usize,
    hunk: &Hunk,
    lines: &[&[u8]],
    old: &[&[u8]],
    place: Place,
) -> Error {
    let from = place.from;
    if let Some(at) = place.earlier {
        let mut message = format!(
            "Hunk {number} of Update File {} (patch line {}) does not match the file after line {from}: its lines \
             start at line {} of the file,",
            py_repr(path),
            hunk.line,
            at + 1,
        );
        match place.previous_end {
            Some(end) if at < end => message.push_str(&format!(
                " before the previous hunk's end (line {end}). Hunks are applied in file order: put this hunk \
                 before the one that comes later in the file, or join them."
            )),
            _ => message.push_str(&format!(
                " not after the line its '@@' line names (line {from}). An '@@' line names a line above the \
                 hunk's lines, not one of them: drop it, or name a line above them."
            )),
        }
        message.push_str(" No changes were written.");
        return Error::new(ErrorKind::NoMatch, message);
    }
    // The candidate start (from `from` on) matching the longest prefix of the hunk's lines.
    let mut best: Option<(usize, usize)> = None; // (matched, start)
    if old.len() <= lines.len() {
        for s in from..=lines.len().saturating_sub(old.len()) {
            let m = old
                .iter()
                .zip(&lines[s..])
                .take_while(|(a, b)| a == b)
                .count();
            if m > 0 && best.is_none_or(|(bm, _)| m > bm) {
                best = Some((m, s));
            }
        }
    }
    let (failing, closest) = match best {
        Some((m, s)) => (m, (s + m < lines.len()).then_some(s + m)),
        None => {
            // The first line matches nowhere: the closest is a line equal once whitespace is
            // ignored, else the most similar one.
            let want = loose(old[0]);
            let at = (from..lines.len())
                .find(|&i| loose(lines[i]) == want)
                .or_else(|| most_similar(lines, from, old[0]));
            (0, at)
        }
    };
    let shown = |b: &[u8]| py_repr(&String::from_utf8_lossy(b));
    let mut message = format!(
        "Hunk {number} of Update File {} (patch line {}) does not match the file: its line {} {} was not found",
        py_repr(path),
        hunk.line,
        line_in_hunk(hunk, failing) ,
        shown(old[failing]),
    );
    if from > 0 {
        message.push_str(&format!(" after line {from} of the file"));
    }
    message.push('.');
    // The patch line holds U+FFFD where the file line has bytes that are not UTF-8: what
    // `read_file` showed in their place, which no patch line can match.
    // Or it differs from the file line first where that line has such bytes (a latin-1 `é`
    // written as UTF-8 in the patch).
    let not_utf8 = closest.and_then(|i| {
        if std::str::from_utf8(lines[i]).is_ok() {
            return None;
        }
        let patch = String::from_utf8_lossy(old[failing]);
        if patch.contains('\u{FFFD}') {
            return Some("U+FFFD (\u{FFFD}, what read_file shows in their place)".to_string());
        }
        let file = String::from_utf8_lossy(lines[i]);
        let (_, file_mid, patch_mid) = first_difference(&file, &patch);
        file_mid.starts_with('\u{FFFD}').then(|| {
            format!(
                "{} (read_file shows U+FFFD, \u{FFFD}, in their place)",
                py_repr(
                    &patch_mid
                        .chars()
                        .take(MAX_SHOWN_DIFFERENCE)
                        .collect::<String>()
                )
            )
        })
    });
    match (closest, not_utf8) {
        (Some(i), Some(what)) => {
            message.push_str(&format!(
                " Closest: line {} of the file, {}, which holds bytes that are not UTF-8 where the patch line has \
                 {what}; a patch line cannot match them. No changes were written. Let the hunk's lines stop before \
                 that line or start after it, or change it with edit_file or write_file.",
                i + 1,
                shown(lines[i]),
            ));
            return Error::new(ErrorKind::NoMatch, message);
        }
        (Some(i), None) => {
            message.push_str(&format!(
                " Closest: line {} of the file, {}, which {}.",
                i + 1,
                shown(lines[i]),
                how_it_differs(lines[i], old[failing])
            ));
        }
        (None, _) => message.push_str(" No line of the file is like it."),
    }
    message.push_str(" No changes were written. Read the file and copy its lines exactly.");
    Error::new(ErrorKind::NoMatch, message)
}

/// The 1-based line within the hunk's lines of its `index`-th old line (context or removed).
fn line_in_hunk(hunk: &Hunk, index: usize) -> usize {
    let mut seen = 0;
    for (i, l) in hunk.lines.iter().enumerate() {
        if matches!(l, HunkLine::Context(_) | HunkLine::Remove(_)) {
            if seen == index {
                return i + 1;
            }
            seen += 1;
        }
    }
    hunk.lines.len()
}

fn loose(s: &[u8]) -> String {
    String::from_utf8_lossy(s)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// How the file's line differs from the patch's, in words.
fn how_it_differs(file: &[u8], patch: &[u8]) -> String {
    let (file, patch) = (
        String::from_utf8_lossy(file),
        String::from_utf8_lossy(patch),
    );
    let lead = |s: &str| s.len() - s.trim_start().len();
    let trail = |s: &str| s.len() - s.trim_end().len();
    let mut out = Vec::new();
    let (fl, pl) = (&file[..lead(&file)], &patch[..lead(&patch)]);
    if fl != pl {
        out.push(format!(
            "is indented with {} in the file and {} in the patch",
            describe(fl),
            describe(pl)
        ));
    }
    let (ft, pt) = (
        &file[file.len() - trail(&file)..],
        &patch[patch.len() - trail(&patch)..],
    );
    if ft != pt && !file.trim().is_empty() {
        out.push(format!(
            "ends with {} in the file and {} in the patch",
            describe(ft),
            describe(pt)
        ));
    }
    if out.is_empty() {
        if loose(file.as_bytes()) == loose(patch.as_bytes()) {
            out.push("has different spacing between words".to_string());
        } else {
            let (column, file_mid, patch_mid) = first_difference(&file, &patch);
            let part = |s: &str| match s {
                "" => "nothing".to_string(),
                s => py_repr(&s.chars().take(MAX_SHOWN_DIFFERENCE).collect::<String>()),
            };
            out.push(format!(
                "differs at column {column}: {} in the patch, {} in the file",
                part(patch_mid),
                part(file_mid)
            ));
        }
    }
    out.join(" and ")
}

/// Most chars of each side shown where two lines differ.
const MAX_SHOWN_DIFFERENCE: usize = 40;

/// Where `file` and `patch` first differ: the 1-based column (in chars) and the differing
/// middle of each, once the chars they share at both ends are set aside.
fn first_difference<'a>(file: &'a str, patch: &'a str) -> (usize, &'a str, &'a str) {
    let head: Vec<(usize, char)> = file
        .char_indices()
        .zip(patch.chars())
        .take_while(|((_, a), b)| a == b)
        .map(|(x, _)| x)
        .collect();
    let (column, start) = (
        head.len() + 1,
        head.last().map_or(0, |&(i, c)| i + c.len_utf8()),
    );
    let (f, p) = (&file[start..], &patch[start..]);
    let tail: usize = f
        .chars()
        .rev()
        .zip(p.chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum();
    let tail = tail.min(f.len()).min(p.len());
    (column, &f[..f.len() - tail], &p[..p.len() - tail])
}

/// Lines looked at for the one most like a missed patch line, from where the hunk was looked for.
const MAX_SIMILAR_LINES: usize = 2000;
/// Chars of each line compared for similarity.
const SIMILAR_CHARS: usize = 200;
/// Least similarity (1 - edit distance / the longer length) of a line named as the closest.
const MIN_SIMILARITY: f64 = 0.6;

/// The line of `lines` from `from` (at most [`MAX_SIMILAR_LINES`] of them, [`SIMILAR_CHARS`]
/// chars of each) most like `want` by edit distance, if one is at least [`MIN_SIMILARITY`]
/// alike; the first of equals. Each line is skipped at once when its length or its chars
/// (counted in 64 classes) bound its similarity below the best so far.
fn most_similar(lines: &[&[u8]], from: usize, want: &[u8]) -> Option<usize> {
    let chars = |b: &[u8]| -> Vec<char> {
        String::from_utf8_lossy(b)
            .chars()
            .take(SIMILAR_CHARS)
            .collect()
    };
    let classes = |c: &[char]| {
        let mut h = [0u16; 64];
        for &x in c {
            h[x as usize % 64] += 1;
        }
        h
    };
    let want = chars(want);
    let want_classes = classes(&want);
    let mut best: Option<(f64, usize)> = None;
    for (i, line) in lines.iter().enumerate().skip(from).take(MAX_SIMILAR_LINES) {
        let line = chars(line);
        let longer = line.len().max(want.len());
        if longer == 0 {
            continue;
        }
        let floor = best.map_or(MIN_SIMILARITY, |(r, _)| r.max(MIN_SIMILARITY));
        let line_classes = classes(&line);
        let shared: usize = (0..64)
            .map(|k| line_classes[k].min(want_classes[k]) as usize)
            .sum();
        // At least `longer - shared` edits are needed.
        if (shared as f64) / (longer as f64) < floor {
            continue;
        }
        let ratio = 1.0 - distance(&line, &want) as f64 / longer as f64;
        if ratio >= floor && best.is_none_or(|(r, _)| ratio > r) {
            best = Some((ratio, i));
        }
    }
    best.map(|(_, i)| i)
}

/// The Levenshtein distance between `a` and `b` (two rows).
fn distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// A hunk's lines, or one of its `@@` anchors, found past the exact tier
/// (`FileSystem(match='tolerant')`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierMatch {
    /// 1-based number of the hunk in its `Update File`.
    pub hunk: usize,
    /// The tier it matched on.
    pub tier: Tier,
    /// 1-based lines of the file (as it was before the hunk) it matched: first, last.
    pub lines: (usize, usize),
}

/// What [`apply`] made of a file.
#[derive(Debug, Clone, Default)]
pub struct Patched {
    /// The new bytes.
    pub bytes: Vec<u8>,
    /// The anchors and hunks' lines found past the exact tier, in order.
    pub matched: Vec<TierMatch>,
    /// The byte ranges of the new bytes that the hunks added or removed lines at, in order (a
    /// removal only: an empty range where it was); `None` for a UTF-16 file.
    pub changed: Option<Vec<(usize, usize)>>,
}

/// Where `pattern` lands from `start` ([`tiers::seek_lines`] under `mode`); past the exact
/// tier it must be the only place on its tier, else `Err(count)`.
fn seek(
    lines: &[&[u8]],
    pattern: &[&[u8]],
    start: usize,
    eof: bool,
    mode: Match,
) -> std::result::Result<Option<(usize, Tier)>, (Tier, usize)> {
    let Some((at, tier)) = tiers::seek_lines(lines, pattern, start, eof, mode) else {
        return Ok(None);
    };
    if tier != Tier::Exact {
        let count = tiers::count_on(lines, pattern, start, tier);
        if count > 1 {
            return Err((tier, count));
        }
    }
    Ok(Some((at, tier)))
}

/// Where the anchor `anchor` (trimmed) names a line from `start`: the first line equal to it
/// once trimmed, else (tolerant) the only line it matches on a later tier.
fn seek_anchor(
    lines: &[&[u8]],
    anchor: &str,
    start: usize,
    mode: Match,
) -> std::result::Result<Option<(usize, Tier)>, (Tier, usize)> {
    let trimmed = |l: &[u8]| -> bool {
        let t = l.trim_ascii();
        t == anchor.as_bytes()
    };
    if let Some(at) = (start..lines.len()).find(|&i| trimmed(lines[i])) {
        return Ok(Some((at, Tier::Exact)));
    }
    seek(lines, &[anchor.as_bytes()], start, false, mode)
}

fn not_unique(
    path: &str,
    number: usize,
    hunk: &Hunk,
    what: &str,
    tier: Tier,
    count: usize,
    pos: usize,
) -> Error {
    let mut message = format!(
        "Hunk {number} of Update File {} (patch line {}): {what} {count} places of the file ({})",
        py_repr(path),
        hunk.line,
        tier.describe(),
    );
    if pos > 0 {
        message.push_str(&format!(" after line {pos}"));
    }
    message.push_str(
        ". Add context lines or an '@@' line to make the match unique. No changes were written.",
    );
    Error::new(ErrorKind::AmbiguousMatch, message)
}

/// Where a hunk without `@@` anchors whose lines match exactly, first at `first`, lands: there
/// when no later place matches; with several, the one nearest its unified diff range's old start line
/// ([`Hunk::old_start`]), else an `AmbiguousMatch` naming the places.
fn one_place(
    lines: &[&[u8]],
    old: &[&[u8]],
    first: usize,
    path: &str,
    number: usize,
    hunk: &Hunk,
) -> Result<usize> {
    let places: Vec<usize> = (first..=lines.len() - old.len())
        .filter(|&i| lines[i..i + old.len()] == *old)
        .collect();
    if places.len() < 2 {
        return Ok(first);
    }
    if let Some(start) = hunk.old_start {
        let target = start.saturating_sub(1);
        return Ok(*places
            .iter()
            .min_by_key(|&&i| i.abs_diff(target))
            .expect("two places"));
    }
    let numbers: Vec<String> = places.iter().map(|i| (i + 1).to_string()).collect();
    let (last, rest) = numbers.split_last().expect("two places");
    Err(Error::new(
        ErrorKind::AmbiguousMatch,
        format!(
            "Hunk {number} of Update File {} (patch line {}) matches the file at {} places (lines {} and {last}): \
             add an '@@' line naming a line above it (e.g. the def or class it is in) or more context lines. \
             No changes were written.",
            py_repr(path),
            hunk.line,
            places.len(),
            rest.join(", "),
        ),
    ))
}

/// A run of removed and added lines between kept ones, as [`apply`] writes it.
struct Run<'a> {
    /// Where it began in the new bytes.
    at: usize,
    /// The removed lines' contents.
    removed: Vec<&'a [u8]>,
    /// The added lines: their byte range in the new bytes, their contents.
    added: Vec<(usize, usize, Vec<u8>)>,
}

impl<'a> Run<'a> {
    fn at(at: usize) -> Self {
        Run {
            at,
            removed: Vec::new(),
            added: Vec::new(),
        }
    }

    /// The byte range of the new bytes that really changed: the added lines, less those equal
    /// to removed ones at the run's start and end; an empty range where lines were only
    /// removed; `None` when the run gives back what it took.
    fn changed(&self) -> Option<(usize, usize)> {
        let (old, new) = (&self.removed, &self.added);
        let same = |i: usize, j: usize| old[i] == new[j].2.as_slice();
        let head = (0..old.len().min(new.len()))
            .take_while(|&i| same(i, i))
            .count();
        let room = old.len().min(new.len()) - head;
        let tail = (1..=room)
            .take_while(|&k| same(old.len() - k, new.len() - k))
            .count();
        let added = &new[head..new.len() - tail];
        if let (Some(first), Some(last)) = (added.first(), added.last()) {
            return Some((first.0, last.1));
        }
        if old.len() == head + tail {
            return None;
        }
        let at = match head.checked_sub(1) {
            Some(i) => new[i].1,
            None => self.at,
        };
        Some((at, at))
    }
}

/// Applies `hunks` to the text bytes `text` (no byte order mark); see the module doc.
///
/// Errors: `NoMatch` naming the file, the hunk, its first line not found and the closest line;
/// `AmbiguousMatch` for a tolerant match found more than once on its tier.
fn apply_text(
    text: &[u8],
    hunks: &[Hunk],
    path: &str,
    mode: Match,
    contract: Contract,
) -> Result<Patched> {
    let file = split_lines(text, contract == Contract::Document);
    let contents: Vec<&[u8]> = file.iter().map(|l| l.content).collect();
    let ending = dominant(&file);
    let mut matched = Vec::new();
    // (start, matched old lines, hunk, shift of its added lines) in file order.
    let mut placed: Vec<(usize, usize, &Hunk, Shift)> = Vec::new();
    let mut pos = 0usize;
    for (k, hunk) in hunks.iter().enumerate() {
        let previous_end = pos; // where the previous hunk ended (0 for the first)
        for anchor in &hunk.anchors {
            let found = seek_anchor(&contents, anchor, pos, mode).map_err(|(tier, count)| {
                not_unique(
                    path,
                    k + 1,
                    hunk,
                    &format!("its '@@ {anchor}' line matches"),
                    tier,
                    count,
                    pos,
                )
            })?;
            let Some((at, tier)) = found else {
                let mut message = format!(
                    "Hunk {} of Update File {} (patch line {}): its '@@ {}' line was not found",
                    k + 1,
                    py_repr(path),
                    hunk.line,
                    anchor
                );
                if pos > 0 {
                    message.push_str(&format!(" after line {pos} of the file"));
                }
                message.push_str(
                    ". An '@@' line names a line of the file (leading and trailing whitespace aside), found \
                     before the hunk's lines. No changes were written.",
                );
                return Err(Error::new(ErrorKind::NoMatch, message));
            };
            if tier != Tier::Exact {
                matched.push(TierMatch {
                    hunk: k + 1,
                    tier,
                    lines: (at + 1, at + 1),
                });
            }
            pos = at + 1;
        }
        let mut old: Vec<&[u8]> = hunk.old_lines().into_iter().map(str::as_bytes).collect();
        if old.is_empty() {
            // Only added lines: after the anchors, or at the end of the file without one.
            let at = if hunk.anchors.is_empty() {
                contents.len()
            } else {
                pos
            };
            placed.push((at, 0, hunk, Shift::default()));
            pos = at;
            continue;
        }
        let ambiguous = |(tier, count): (Tier, usize)| {
            not_unique(path, k + 1, hunk, "its lines match", tier, count, pos)
        };
        let mut found = seek(&contents, &old, pos, hunk.end_of_file, mode).map_err(ambiguous)?;
        if found.is_none() && old.len() > 1 && old.last() == Some(&&b""[..]) {
            // A trailing empty context line stands for the file's final line break.
            old.pop();
            found = seek(&contents, &old, pos, hunk.end_of_file, mode).map_err(ambiguous)?;
        }
        let found = match found {
            // An `@@` anchor says where (the first place after it); without one the place must be
            // the only one, or the one a unified range names.
            Some((at, Tier::Exact)) if !hunk.end_of_file && hunk.anchors.is_empty() => Some((
                one_place(&contents, &old, at, path, k + 1, hunk)?,
                Tier::Exact,
            )),
            other => other,
        };
        let Some((at, tier)) = found else {
            let all: Vec<&[u8]> = hunk.old_lines().into_iter().map(str::as_bytes).collect();
            // Its lines may be in the file, only before where this hunk is looked for.
            let earlier = match seek(&contents, &old, 0, false, mode) {
                Ok(Some((at, _))) if at < pos => Some(at),
                _ => None,
            };
            let place = Place {
                from: pos,
                previous_end: (k > 0).then_some(previous_end),
                earlier,
            };
            return Err(miss(path, k + 1, hunk, &contents, &all, place));
        };
        let shift = if tier >= Tier::Indentation {
            tiers::shift_of(&contents[at..at + old.len()], &old, tier).unwrap_or_default()
        } else {
            Shift::default()
        };
        if tier != Tier::Exact {
            matched.push(TierMatch {
                hunk: k + 1,
                tier,
                lines: (at + 1, at + old.len()),
            });
        }
        placed.push((at, old.len(), hunk, shift));
        pos = at + old.len();
    }
    let mut out = Vec::with_capacity(text.len() + 64);
    let mut changed: Vec<(usize, usize)> = Vec::new();
    let mut open = false; // the last line written has no terminator
    let mut push = |out: &mut Vec<u8>, content: &[u8], terminator: &[u8]| {
        if open {
            out.extend_from_slice(ending);
        }
        out.extend_from_slice(content);
        out.extend_from_slice(terminator);
        open = terminator.is_empty();
    };
    let mut cursor = 0;
    for (start, matched_lines, hunk, shift) in placed {
        for l in &file[cursor..start] {
            push(&mut out, l.content, l.terminator);
        }
        cursor = start;
        let end = start + matched_lines;
        // The current run of removed and added lines (between kept ones): where it began in
        // `out`, the removed lines' contents, the added lines' contents and byte ranges.
        let mut run: Option<Run<'_>> = None;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) if cursor < end => {
                    if let Some(r) = run.take() {
                        changed.extend(r.changed());
                    }
                    let l = file[cursor];
                    push(&mut out, l.content, l.terminator);
                    cursor += 1;
                }
                HunkLine::Remove(_) if cursor < end => {
                    let r = run.get_or_insert_with(|| Run::at(out.len()));
                    r.removed.push(file[cursor].content);
                    cursor += 1;
                }
                HunkLine::Context(_) | HunkLine::Remove(_) => {}
                HunkLine::Add(s) => {
                    let r = run.get_or_insert_with(|| Run::at(out.len()));
                    let s = tiers::reindent(s.as_bytes(), &shift, true);
                    push(&mut out, &s, ending);
                    let to = out.len();
                    r.added
                        .push((to - s.len() - ending.len(), to, s.into_owned()));
                }
            }
        }
        if let Some(r) = run {
            changed.extend(r.changed());
        }
    }
    for l in &file[cursor..] {
        push(&mut out, l.content, l.terminator);
    }
    Ok(Patched {
        bytes: out,
        matched,
        changed: Some(changed),
    })
}

/// The new bytes of a file whose bytes are `raw` once `hunks` are applied: UTF-16 decoded and
/// encoded back, a UTF-8 byte order mark kept, bytes that are not UTF-8 kept.
///
/// Errors: a binary file (`p is a binary file; apply_patch only changes text files.`),
/// UTF-16 that does not decode, the hunks' misses.
pub fn apply(
    raw: &[u8],
    hunks: &[Hunk],
    path: &str,
    mode: Match,
    contract: Contract,
) -> Result<Patched> {
    let head = &raw[..raw.len().min(BINARY_SAMPLE)];
    if let Some(kind) = encoding::sniff_utf16(head) {
        let text = encoding::decode_utf16(raw, kind, false).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is {} text with bytes that do not decode (byte {}), so apply_patch cannot write it \
                     back unchanged. No changes were written.",
                    py_repr(path),
                    kind.name(),
                    e.offset
                ),
            )
        })?;
        let new = apply_text(text.as_bytes(), hunks, path, mode, contract)?;
        return Ok(Patched {
            bytes: encoding::encode_utf16(&String::from_utf8_lossy(&new.bytes), kind),
            matched: new.matched,
            changed: None,
        });
    }
    if is_binary(head) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is a binary file; apply_patch only changes text files. No changes were written.",
                py_repr(path)
            ),
        ));
    }
    let skip = if raw.starts_with(encoding::UTF8_BOM) {
        encoding::UTF8_BOM.len()
    } else {
        0
    };
    let mut new = apply_text(&raw[skip..], hunks, path, mode, contract)?;
    if skip > 0 {
        new.bytes.splice(0..0, raw[..skip].iter().copied());
        for r in new.changed.iter_mut().flatten() {
            *r = (r.0 + skip, r.1 + skip);
        }
    }
    Ok(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::patch::parse::parse;

    fn patched(file: &[u8], body: &str) -> std::result::Result<Vec<u8>, String> {
        let ops = parse(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
        ))
        .unwrap();
        let crate::fs::patch::parse::Op::Update { hunks, .. } = &ops[0] else {
            unreachable!()
        };
        apply(file, hunks, "f", Match::Exact, Contract::Document)
            .map(|p| p.bytes)
            .map_err(|e| e.message)
    }

    fn tolerant(file: &[u8], body: &str) -> std::result::Result<Patched, String> {
        let ops = parse(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
        ))
        .unwrap();
        let crate::fs::patch::parse::Op::Update { hunks, .. } = &ops[0] else {
            unreachable!()
        };
        apply(file, hunks, "f", Match::Tolerant, Contract::Document).map_err(|e| e.message)
    }

    #[test]
    fn seek_in_order_and_at_the_end() {
        let lines: Vec<&[u8]> = vec![b"a", b"b", b"a", b"b"];
        let at = |p: &[&[u8]], start, eof| {
            seek(&lines, p, start, eof, Match::Exact)
                .unwrap()
                .map(|f| f.0)
        };
        assert_eq!(at(&[b"a", b"b"], 0, false), Some(0));
        assert_eq!(at(&[b"a", b"b"], 1, false), Some(2));
        assert_eq!(at(&[b"a", b"b"], 0, true), Some(2));
        assert_eq!(at(&[b"c"], 0, false), None);
        assert_eq!(at(&[], 3, false), Some(3));
    }

    #[test]
    fn changed_ranges_mark_only_lines_that_differ() {
        let changed = |file: &[u8], body: &str| tolerant(file, body).unwrap().changed.unwrap();
        // A removal only: an empty range where the lines were, not the next line.
        assert_eq!(changed(b"a\nb\nc\n", " a\n-b\n c"), [(2, 2)]);
        assert_eq!(changed(b"a\nb\n", " a\n-b"), [(2, 2)]);
        // Removed and added again: only the lines that differ.
        assert_eq!(changed(b"a\nb\nc\n", "-a\n-b\n-c\n+a\n+B\n+c"), [(2, 4)]);
        assert_eq!(changed(b"a\nb\nc\n", "-a\n-b\n+a\n c"), [(2, 2)]);
        assert_eq!(changed(b"a\nb\n", "-a\n+a\n b\n+z"), [(4, 6)]);
    }

    #[test]
    fn tolerant_tiers_say_where_and_reindent() {
        let p = tolerant(
            b"def f():\n\tif x:  \n\t\treturn 1\n",
            " if x:\n-\treturn 1\n+\treturn 2",
        )
        .unwrap();
        assert_eq!(p.bytes, b"def f():\n\tif x:  \n\t\treturn 2\n");
        assert_eq!(
            p.matched,
            [TierMatch {
                hunk: 1,
                tier: Tier::Indentation,
                lines: (2, 3)
            }]
        );
        assert_eq!(p.changed, Some(vec![(18, 29)]));
        assert_eq!(
            tolerant(b"a  \nb\na \nb\n", " a\n-b\n+c").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3): its lines match 2 places of the file (ignoring trailing \
             whitespace). Add context lines or an '@@' line to make the match unique. No changes were written."
        );
        // Exact first: the tolerant mode takes an exact match as the exact mode does.
        assert!(tolerant(b"a\nb\na \nb\n", " a\n-b\n+c")
            .unwrap()
            .matched
            .is_empty());
    }

    #[test]
    fn cr_only_lines_are_lines_under_the_document_contract() {
        let file = b"one\rtwo\rthree\r";
        assert_eq!(patched(file, "-two\n+TWO").unwrap(), b"one\rTWO\rthree\r");
        // Added lines take the file's ending; a mixed file keeps each line's own.
        assert_eq!(
            patched(file, " two\n+new").unwrap(),
            b"one\rtwo\rnew\rthree\r"
        );
        assert_eq!(
            patched(b"a\rb\r\nc\rd", "-d\n+D\n+E").unwrap(),
            b"a\rb\r\nc\rD\rE\r"
        );
        assert_eq!(line_starts(file, Contract::Document), [0, 4, 8]);
        // Under 0.62.0's contract `read_file` splits at `\n` only: one line.
        assert_eq!(line_starts(file, Contract::Workspace), [0]);
        let ops = parse("*** Begin Patch\n*** Update File: f\n-two\n+TWO\n*** End Patch").unwrap();
        let crate::fs::patch::parse::Op::Update { hunks, .. } = &ops[0] else {
            unreachable!()
        };
        assert!(apply(file, hunks, "f", Match::Exact, Contract::Workspace).is_err());
    }

    #[test]
    fn hunks_keep_every_other_byte() {
        assert_eq!(
            patched(b"a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2").unwrap(),
            b"a\r\nB\r\nB2\r\nc\r\n"
        );
        assert_eq!(
            patched(b"x\xff\nold\n", " x\u{fffd}\n-old\n+new")
                .map_err(|e| e[..40].to_string())
                .unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3)"
        );
        assert_eq!(
            patched(b"x\xff\nold\n", "-old\n+new").unwrap(),
            b"x\xff\nnew\n"
        );
        assert_eq!(patched(b"a\nb", "-b\n+c").unwrap(), b"a\nc\n");
        assert_eq!(patched(b"a\nb", " a\n+z").unwrap(), b"a\nz\nb");
        assert_eq!(
            patched(b"\xef\xbb\xbfa\nb\n", "-a\n+A").unwrap(),
            b"\xef\xbb\xbfA\nb\n"
        );
        assert_eq!(
            patched(b"one\ntwo\n", "+three").unwrap(),
            b"one\ntwo\nthree\n"
        );
        assert_eq!(
            patched(b"f\nx\ng\nx\n", "@@ g\n-x\n+y").unwrap(),
            b"f\nx\ng\ny\n"
        );
        assert_eq!(
            patched(b"x\nend\nx\nend\n", "-x\n+y\n end\n*** End of File").unwrap(),
            b"x\nend\ny\nend\n"
        );
        assert_eq!(patched(b"a\nb\n", " a\n-b\n+c\n ").unwrap(), b"a\nc\n");
        // Two hunks, the second searched after the first; the first, matching two places, is
        // placed by its unified range (nearest its old start), else refused.
        assert_eq!(
            patched(b"x\nx\n", "@@ -1,1 +1,1 @@\n-x\n+1\n@@\n-x\n+2").unwrap(),
            b"1\n2\n"
        );
        assert_eq!(
            patched(b"x\nx\n", "@@ -2,1 +2,1 @@\n-x\n+2").unwrap(),
            b"x\n2\n"
        );
        assert!(patched(b"x\nx\n", "@@\n-x\n+1")
            .unwrap_err()
            .contains("matches the file at 2 places (lines 1 and 2)"));
        let kind = encoding::Utf16 {
            little_endian: true,
            bom: true,
        };
        let out = patched(&encoding::encode_utf16("a\r\nb\r\n", kind), "-b\n+c").unwrap();
        assert_eq!(out, encoding::encode_utf16("a\r\nc\r\n", kind));
    }

    #[test]
    fn misses_say_where_and_how() {
        assert_eq!(
            patched(b"def f():\n\treturn 1\n", " def f():\n-    return 1\n+    return 2").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 2 '    return 1' was not \
             found. Closest: line 2 of the file, '\\treturn 1', which is indented with a tab in the file and 4 spaces \
             in the patch. No changes were written. Read the file and copy its lines exactly."
        );
        assert_eq!(
            patched(b"a\n", "-zzz\n+y").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 1 'zzz' was not found. No \
             line of the file is like it. No changes were written. Read the file and copy its lines exactly."
        );
        assert_eq!(
            patched(b"a\n", "@@ nope\n-a\n+b").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3): its '@@ nope' line was not found. An '@@' line names a \
             line of the file (leading and trailing whitespace aside), found before the hunk's lines. No changes were written."
        );
        assert_eq!(
            patched(b"\0bin", "-a\n+b").unwrap_err(),
            "'f' is a binary file; apply_patch only changes text files. No changes were written."
        );
    }

    #[test]
    fn misses_name_the_most_similar_line_and_where_it_differs() {
        assert_eq!(
            patched(b"def f():\n    return 1\n", "-    return 2\n+    return 3").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 1 '    return 2' was not \
             found. Closest: line 2 of the file, '    return 1', which differs at column 12: '2' in the patch, '1' \
             in the file. No changes were written. Read the file and copy its lines exactly."
        );
        assert_eq!(
            patched(b"world\nhello\nhelp\n", "-hellx\n+bye").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 1 'hellx' was not found. \
             Closest: line 2 of the file, 'hello', which differs at column 5: 'x' in the patch, 'o' in the file. No \
             changes were written. Read the file and copy its lines exactly."
        );
        // Text missing on one side.
        assert_eq!(first_difference("value = 10", "value = 1"), (10, "0", ""));
        assert_eq!(first_difference("héllo", "hallo"), (2, "é", "a"));
        // Nothing alike enough: no line named.
        assert!(patched(b"alpha\nbeta\n", "-zzzz\n+y")
            .unwrap_err()
            .contains("No line of the file is like it."));
        assert_eq!(distance(&['a', 'b', 'c'], &['a', 'x', 'c', 'd']), 2);
        // A latin-1 byte against the char it stands for: the bytes are not UTF-8 there.
        assert_eq!(
            patched(b"x = 1\ncaf\xe9\n", "-caf\u{e9}\n+tea").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 1 'caf\u{e9}' was not \
             found. Closest: line 2 of the file, 'caf\u{FFFD}', which holds bytes that are not UTF-8 where the \
             patch line has '\u{e9}' (read_file shows U+FFFD, \u{FFFD}, in their place); a patch line cannot match \
             them. No changes were written. Let the hunk's lines stop before that line or start after it, or \
             change it with edit_file or write_file."
        );
    }

    #[test]
    fn misses_of_lines_that_are_there_say_why() {
        // Hunks out of file order: the lines are before the previous hunk's end.
        assert_eq!(
            patched(b"one\ntwo\nthree\nfour\n", "@@\n-three\n+3\n@@\n-one\n+1").unwrap_err(),
            "Hunk 2 of Update File 'f' (patch line 6) does not match the file after line 3: its lines start at line \
             1 of the file, before the previous hunk's end (line 3). Hunks are applied in file order: put this hunk \
             before the one that comes later in the file, or join them. No changes were written."
        );
        // Before the line the hunk's own anchor names.
        assert_eq!(
            patched(b"one\ntwo\nthree\n", "@@ two\n two\n-three\n+3").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file after line 2: its lines start at line \
             2 of the file, not after the line its '@@' line names (line 2). An '@@' line names a line above the \
             hunk's lines, not one of them: drop it, or name a line above them. No changes were written."
        );
        // U+FFFD copied from read_file's rendering of a byte that is not UTF-8.
        assert_eq!(
            patched(b"caf\xe9 = 1\nx = 2\n", "-caf\u{FFFD} = 1\n+cafe = 1").unwrap_err(),
            "Hunk 1 of Update File 'f' (patch line 3) does not match the file: its line 1 'caf\u{FFFD} = 1' was not \
             found. Closest: line 1 of the file, 'caf\u{FFFD} = 1', which holds bytes that are not UTF-8 where the \
             patch line has U+FFFD (\u{FFFD}, what read_file shows in their place); a patch line cannot match them. \
             No changes were written. Let the hunk's lines stop before that line or start after it, or change it \
             with edit_file or write_file."
        );
    }
}
