//! Match tiers (`FileSystem(match='tolerant')`, issue 22 §2): when a text to replace is not in
//! the file as written, find it ignoring, one tier after the other, trailing whitespace, a
//! uniform difference of leading indentation, then Unicode punctuation (curly quotes, dashes,
//! non-breaking spaces, the ellipsis) folded to ASCII. Each tier keeps what the tiers before it
//! ignore, and a later tier is tried only when the earlier ones find nothing. The caller names
//! the tier in its result, so the model learns the file's real text.
//!
//! Two ways in. [`seek_lines`] finds a sequence of whole lines (a patch hunk's context) from a
//! line on. [`locate`] finds `edit_file`'s `old_text`, which may start and end inside a line:
//! its first line matches the end of a file line (the whole line, indentation included, when
//! it starts with whitespace), its middle lines whole lines, its last line the start of a file
//! line (up to the line's end when it ends with whitespace); an `old_text` of one line is
//! found inside a line. The region a match replaces is always the file's own bytes between
//! those points. Matching is on bytes, lines split at `\n` with a `\r` before it left out, so
//! bytes that are not UTF-8 compare as themselves.
//!
//! After Codex's `seek_sequence` (exact, trim-end, trim, punctuation-normalised) and the
//! replacers of gemini-cli and opencode (whitespace- and indentation-flexible); unlike them a
//! match on any tier must be unique (the caller checks), and indentation must differ by one
//! prefix on every non-blank line, which then re-indents the replacement ([`reindent`]).

use std::borrow::Cow;

/// How `edit_file` (and a patch) may match: `FileSystem(match=...)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Match {
    /// The text as written only (line endings aside): the documented behaviour.
    #[default]
    Exact,
    /// Exact first, then each [`Tier`] in order.
    Tolerant,
}

impl Match {
    /// `'exact'` or `'tolerant'`, as Python names it; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Match> {
        match name {
            "exact" => Some(Match::Exact),
            "tolerant" => Some(Match::Tolerant),
            _ => None,
        }
    }

    /// The tiers this mode tries, in order.
    pub fn tiers(self) -> &'static [Tier] {
        match self {
            Match::Exact => &[Tier::Exact],
            Match::Tolerant => &Tier::LADDER,
        }
    }
}

/// What a match had to ignore; each tier ignores what the ones before it do, and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Byte for byte (for `edit_file`, `\r\n` and `\n` taken as equal).
    Exact,
    /// Whitespace at the end of lines ignored.
    TrailingWhitespace,
    /// Also leading indentation that differs by one prefix on every non-blank line.
    Indentation,
    /// Also Unicode punctuation folded to ASCII ([`fold`]).
    Punctuation,
}

impl Tier {
    /// Every tier, in the order [`Match::Tolerant`] tries them.
    pub const LADDER: [Tier; 4] = [
        Tier::Exact,
        Tier::TrailingWhitespace,
        Tier::Indentation,
        Tier::Punctuation,
    ];

    /// What the match ignored, as results say it: `ignoring trailing whitespace`.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Exact => "exactly",
            Tier::TrailingWhitespace => "ignoring trailing whitespace",
            Tier::Indentation => "ignoring indentation",
            Tier::Punctuation => "with Unicode punctuation folded to ASCII",
        }
    }
}

/// How a match's indentation differs from the pattern's: the file's lines carry `prefix`
/// more (`added`) or less than the pattern's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shift {
    /// The whitespace one side has in front of the other's indentation.
    pub prefix: Vec<u8>,
    /// `true`: the file is indented deeper than the pattern by `prefix`.
    pub added: bool,
}

impl Shift {
    /// Whether there is no difference.
    pub fn is_none(&self) -> bool {
        self.prefix.is_empty()
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rposition(|&b| !is_ws(b)).map_or(0, |i| i + 1);
    &s[..n]
}

fn lead_len(s: &[u8]) -> usize {
    s.iter().position(|&b| !is_ws(b)).unwrap_or(s.len())
}

fn is_blank(s: &[u8]) -> bool {
    lead_len(s) == s.len()
}

/// The ASCII spelling of a punctuation character the model may type differently from the
/// file (or the file from the model), `None` for any other.
fn ascii_of(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => "-",
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2039}'
        | '\u{203A}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
        | '\u{00BB}' => "\"",
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        '\u{2026}' => "...",
        _ => return None,
    })
}

/// A line as one tier compares it: its bytes, and for each the offset in the original line
/// it came from (one more entry: the original end).
#[derive(Debug)]
struct View<'a> {
    bytes: Cow<'a, [u8]>,
    /// `None`: the identity.
    map: Option<Vec<usize>>,
}

impl View<'_> {
    fn at(&self, i: usize) -> usize {
        self.map.as_ref().map_or(i, |m| m[i])
    }
}

/// `line` with the punctuation of [`ascii_of`] folded to ASCII (bytes that are not UTF-8
/// kept), mapped back to `line`'s offsets.
fn fold(line: &[u8]) -> View<'_> {
    if line.is_ascii() {
        return View {
            bytes: Cow::Borrowed(line),
            map: None,
        };
    }
    let mut bytes = Vec::with_capacity(line.len());
    let mut map = Vec::with_capacity(line.len() + 1);
    let mut at = 0;
    for chunk in line.utf8_chunks() {
        for c in chunk.valid().chars() {
            let len = c.len_utf8();
            match ascii_of(c) {
                Some(a) => {
                    bytes.extend_from_slice(a.as_bytes());
                    map.extend(std::iter::repeat_n(at, a.len()));
                }
                None => {
                    bytes.extend_from_slice(&line[at..at + len]);
                    map.extend(at..at + len);
                }
            }
            at += len;
        }
        for _ in chunk.invalid() {
            bytes.push(line[at]);
            map.push(at);
            at += 1;
        }
    }
    map.push(at);
    View {
        bytes: Cow::Owned(bytes),
        map: Some(map),
    }
}

fn view(line: &[u8], tier: Tier) -> View<'_> {
    if tier == Tier::Punctuation {
        fold(line)
    } else {
        View {
            bytes: Cow::Borrowed(line),
            map: None,
        }
    }
}

/// Collects the indentation pairs of one candidate match and tells whether one [`Shift`]
/// explains them all.
#[derive(Default)]
struct Indents {
    shift: Option<Shift>,
    broken: bool,
}

impl Indents {
    fn add(&mut self, file: &[u8], pattern: &[u8]) {
        if self.broken {
            return;
        }
        let shift = if file.len() >= pattern.len() && file.ends_with(pattern) {
            Shift {
                prefix: file[..file.len() - pattern.len()].to_vec(),
                added: true,
            }
        } else if pattern.ends_with(file) {
            Shift {
                prefix: pattern[..pattern.len() - file.len()].to_vec(),
                added: false,
            }
        } else {
            self.broken = true;
            return;
        };
        match &self.shift {
            None => self.shift = Some(shift),
            Some(s) if *s == shift => {}
            Some(_) => self.broken = true,
        }
    }

    fn result(self) -> Option<Shift> {
        (!self.broken).then(|| self.shift.unwrap_or_default())
    }
}

/// Whether whole `line` equals whole `pattern` under `tier`, adding its indentation pair.
fn whole_line(line: &[u8], pattern: &[u8], tier: Tier, indents: &mut Indents) -> bool {
    match tier {
        Tier::Exact => line == pattern,
        Tier::TrailingWhitespace => trim_end(line) == trim_end(pattern),
        Tier::Indentation | Tier::Punctuation => {
            let (l, p) = (view(line, tier), view(pattern, tier));
            let (l, p) = (&l.bytes[..], &p.bytes[..]);
            if is_blank(p) || is_blank(l) {
                return is_blank(p) && is_blank(l);
            }
            let (ll, pl) = (lead_len(l), lead_len(p));
            if trim_end(&l[ll..]) != trim_end(&p[pl..]) {
                return false;
            }
            indents.add(&l[..ll], &p[..pl]);
            true
        }
    }
}

/// Where `pattern` (whole lines) first matches `lines` at or after line `start` (0-based),
/// and the first tier of `mode` it matches on; each tier searches the whole range before the
/// next is tried. `eof`: the pattern should end the file, so it is looked for there first
/// (from `lines.len() - pattern.len()`), then from `start`. An empty pattern matches at
/// `start`; a pattern longer than `lines` matches nowhere. On the indentation tiers every
/// non-blank line must differ from the pattern's by the same [`Shift`] ([`shift_of`] tells
/// it, for [`reindent`]). Lines come without their terminators; a `\r` left at the end of
/// one is trailing whitespace. After Codex's `seek_sequence` (codex-rs/apply-patch), which
/// takes the first match of the most exact tier as this does.
pub fn seek_lines<L: AsRef<[u8]>, P: AsRef<[u8]>>(
    lines: &[L],
    pattern: &[P],
    start: usize,
    eof: bool,
    mode: Match,
) -> Option<(usize, Tier)> {
    if pattern.is_empty() {
        return Some((start, Tier::Exact));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let mut firsts = Vec::with_capacity(2);
    if eof {
        firsts.push(last.max(start));
    }
    firsts.push(start);
    for &tier in mode.tiers() {
        for &from in &firsts {
            for i in from..=last {
                if lines_match(&lines[i..i + pattern.len()], pattern, tier).is_some() {
                    return Some((i, tier));
                }
            }
        }
    }
    None
}

/// How many places at or after line `start` `pattern` (whole lines, not empty) matches
/// `lines` on exactly `tier` (overlapping places counted): what a caller checks to keep a match
/// past the exact tier unique.
pub fn count_on<L: AsRef<[u8]>, P: AsRef<[u8]>>(
    lines: &[L],
    pattern: &[P],
    start: usize,
    tier: Tier,
) -> usize {
    if pattern.is_empty() || pattern.len() > lines.len() {
        return 0;
    }
    (start..=lines.len() - pattern.len())
        .filter(|&i| lines_match(&lines[i..i + pattern.len()], pattern, tier).is_some())
        .count()
}

/// The [`Shift`] between `lines` and `pattern` (as many lines each) when they match on
/// `tier`, `None` when they do not: what a patch applier passes to [`reindent`].
pub fn shift_of<L: AsRef<[u8]>, P: AsRef<[u8]>>(
    lines: &[L],
    pattern: &[P],
    tier: Tier,
) -> Option<Shift> {
    (lines.len() == pattern.len())
        .then(|| lines_match(lines, pattern, tier))
        .flatten()
}

fn lines_match<L: AsRef<[u8]>, P: AsRef<[u8]>>(
    lines: &[L],
    pattern: &[P],
    tier: Tier,
) -> Option<Shift> {
    let mut indents = Indents::default();
    for (l, p) in lines.iter().zip(pattern) {
        if !whole_line(l.as_ref(), p.as_ref(), tier, &mut indents) {
            return None;
        }
    }
    indents.result()
}

/// `new` re-indented by `shift`: each line that begins a line of the file gets `prefix` in
/// front (`added`) or loses it when it starts with it; blank lines are left as they are.
/// `anchored`: `new`'s first line begins a line too (the match began at a line's start).
pub fn reindent<'a>(new: &'a [u8], shift: &Shift, anchored: bool) -> Cow<'a, [u8]> {
    if shift.is_none() {
        return Cow::Borrowed(new);
    }
    let mut out = Vec::with_capacity(new.len() + new.len() / 8);
    for (i, line) in new.split_inclusive(|&b| b == b'\n').enumerate() {
        let begins = i > 0 || anchored;
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if !begins || is_blank(body) {
            out.extend_from_slice(line);
        } else if shift.added {
            out.extend_from_slice(&shift.prefix);
            out.extend_from_slice(line);
        } else {
            out.extend_from_slice(line.strip_prefix(&shift.prefix[..]).unwrap_or(line));
        }
    }
    Cow::Owned(out)
}

/// One match of an `old_text` on a tier past the first: the file's bytes `start..end`, the
/// indentation difference, and whether it began at a line's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// First byte of the region.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// How its indentation differs from `old_text`'s.
    pub shift: Shift,
    /// Whether `start` is a line's start (the replacement's first line is re-indented too).
    pub anchored: bool,
}

/// A line of `text`: where it starts and where its content ends (before `\r\n` or `\n`).
fn text_lines(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for at in memchr::memchr_iter(b'\n', text) {
        let end = if at > start && text[at - 1] == b'\r' {
            at - 1
        } else {
            at
        };
        out.push((start, end));
        start = at + 1;
    }
    out.push((start, text.len()));
    out
}

/// Every place `old` matches `text` on `tier` (not [`Tier::Exact`]: the caller matched that),
/// overlapping places included, in order. How an `old_text` that starts or ends inside a line
/// matches: see the module's paragraph.
pub fn locate(text: &[u8], old: &[u8], tier: Tier) -> Vec<Found> {
    if tier == Tier::Exact || old.is_empty() {
        return Vec::new();
    }
    let lines = text_lines(text);
    let pattern: Vec<&[u8]> = old
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    let k = pattern.len();
    if k > lines.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for i in 0..=lines.len() - k {
        if k == 1 {
            let (s, e) = lines[i];
            for (start, end, shift, anchored) in within_line(&text[s..e], pattern[0], tier) {
                out.push(Found {
                    start: s + start,
                    end: s + end,
                    shift,
                    anchored,
                });
            }
        } else if let Some(found) = across(text, &lines[i..i + k], &pattern, tier) {
            out.push(found);
        }
    }
    out
}

/// Matches of a one-line `pattern` inside `line`: `(start, end, shift, anchored)`.
fn within_line(line: &[u8], pattern: &[u8], tier: Tier) -> Vec<(usize, usize, Shift, bool)> {
    let (l, p) = (view(line, tier), view(pattern, tier));
    let (lb, pb) = (&l.bytes[..], &p.bytes[..]);
    let trailing = trim_end(pb).len() < pb.len();
    let pt = trim_end(pb);
    if pt.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let pl = lead_len(pt);
    if tier >= Tier::Indentation && pl > 0 {
        // Indented: anchored at the line's start, the indentation one shift apart.
        let ll = lead_len(lb);
        let body = &lb[ll..];
        let content = &pt[pl..];
        let fits = if trailing {
            trim_end(body) == content
        } else {
            body.starts_with(content)
        };
        if fits {
            let mut indents = Indents::default();
            indents.add(&lb[..ll], &pt[..pl]);
            if let Some(shift) = indents.result() {
                let end = if trailing {
                    line.len()
                } else {
                    l.at(ll + content.len())
                };
                out.push((0, end, shift, true));
            }
        }
        return out;
    }
    if trailing {
        // Only at the end of the line: the whitespace the pattern ends with is the line's.
        let lt = trim_end(lb);
        if lt.ends_with(pt) {
            out.push((
                l.at(lt.len() - pt.len()),
                line.len(),
                Shift::default(),
                false,
            ));
        }
        return out;
    }
    if tier == Tier::Punctuation {
        for at in memchr::memmem::find_iter(lb, pt) {
            out.push((l.at(at), l.at(at + pt.len()), Shift::default(), false));
        }
    }
    out
}

/// A match of `pattern` (two lines or more) over `lines` (as many), or `None`.
fn across(text: &[u8], lines: &[(usize, usize)], pattern: &[&[u8]], tier: Tier) -> Option<Found> {
    let k = pattern.len();
    let mut indents = Indents::default();
    let line = |j: usize| &text[lines[j].0..lines[j].1];
    // First line: the end of a file line, or the whole line when the pattern's is indented.
    let (first, p0) = (view(line(0), tier), view(pattern[0], tier));
    let (fb, pb) = (&first.bytes[..], trim_end(&p0.bytes));
    let ft = trim_end(fb);
    let (start, anchored) = if pattern[0].is_empty() {
        // `old_text` starts with a line break: at the line's end.
        (lines[0].1, false)
    } else if pb.is_empty() {
        // Whitespace, then a line break: after the line's last non-blank byte.
        (lines[0].0 + first.at(ft.len()), false)
    } else if tier >= Tier::Indentation && lead_len(pb) > 0 {
        let (fl, pl) = (lead_len(ft), lead_len(pb));
        if ft[fl..] != pb[pl..] {
            return None;
        }
        indents.add(&ft[..fl], &pb[..pl]);
        (lines[0].0, true)
    } else if ft.ends_with(pb) {
        (lines[0].0 + first.at(ft.len() - pb.len()), false)
    } else {
        return None;
    };
    for (j, p) in pattern.iter().enumerate().take(k - 1).skip(1) {
        if !whole_line(line(j), p, tier, &mut indents) {
            return None;
        }
    }
    // Last line: the start of a file line, up to its end when the pattern's ends with whitespace.
    let (last, pk) = (view(line(k - 1), tier), view(pattern[k - 1], tier));
    let (lb, praw) = (&last.bytes[..], &pk.bytes[..]);
    let base = lines[k - 1].0;
    let end = if praw.is_empty() {
        base
    } else if is_blank(praw) {
        base + last.at(lead_len(lb))
    } else {
        let trailing = trim_end(praw).len() < praw.len();
        let pt = trim_end(praw);
        let (ll, pl) = if tier >= Tier::Indentation {
            (lead_len(lb), lead_len(pt))
        } else {
            (0, 0)
        };
        let (body, content) = (&lb[ll..], &pt[pl..]);
        let fits = if trailing {
            trim_end(body) == content
        } else {
            body.starts_with(content)
        };
        if !fits {
            return None;
        }
        if tier >= Tier::Indentation {
            indents.add(&lb[..ll], &pt[..pl]);
        }
        if trailing {
            lines[k - 1].1
        } else {
            base + last.at(ll + content.len())
        }
    };
    let shift = indents.result()?;
    Some(Found {
        start,
        end,
        shift,
        anchored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seek(lines: &[&str], pattern: &[&str], start: usize, eof: bool) -> Option<(usize, Tier)> {
        seek_lines(lines, pattern, start, eof, Match::Tolerant)
    }

    #[test]
    fn seek_lines_by_tier() {
        let lines = [
            "fn a() {",
            "    let x = 1;  ",
            "    // “quoted” — done",
            "}",
        ];
        assert_eq!(
            seek(&lines, &["fn a() {"], 0, false),
            Some((0, Tier::Exact))
        );
        assert_eq!(
            seek(&lines, &["    let x = 1;"], 0, false),
            Some((1, Tier::TrailingWhitespace))
        );
        assert_eq!(
            seek(&lines, &["let x = 1;", "// “quoted” — done"], 0, false),
            Some((1, Tier::Indentation))
        );
        assert_eq!(
            seek(&lines, &["    // \"quoted\" - done", "}"], 0, false),
            Some((2, Tier::Punctuation))
        );
        assert_eq!(
            seek_lines(&lines, &["    let x = 1;"], 0, false, Match::Exact),
            None
        );
        assert_eq!(seek(&lines, &["}"], 0, true), Some((3, Tier::Exact)));
        assert_eq!(seek(&lines, &[], 2, false), Some((2, Tier::Exact)));
        assert_eq!(seek(&lines, &["a", "b", "c", "d", "e"], 0, false), None);
        // From `start` on only; eof looks at the end first.
        let twice = ["x", "y", "x"];
        assert_eq!(seek(&twice, &["x"], 1, false), Some((2, Tier::Exact)));
        assert_eq!(seek(&twice, &["x"], 0, true), Some((2, Tier::Exact)));
        // Indentation must differ by one prefix on every non-blank line.
        let block = ["\tif x:", "", "\t\treturn 1"];
        assert_eq!(
            seek(&block, &["if x:", "", "\treturn 1"], 0, false),
            Some((0, Tier::Indentation))
        );
        assert_eq!(seek(&block, &["if x:", "", "return 1"], 0, false), None);
        assert_eq!(
            shift_of(&block, &["if x:", "", "\treturn 1"], Tier::Indentation),
            Some(Shift {
                prefix: b"\t".to_vec(),
                added: true
            })
        );
    }

    #[test]
    fn reindents() {
        let add = Shift {
            prefix: b"  ".to_vec(),
            added: true,
        };
        assert_eq!(&*reindent(b"a\n\n b\n", &add, true), b"  a\n\n   b\n");
        assert_eq!(&*reindent(b"a\nb", &add, false), b"a\n  b");
        let remove = Shift {
            prefix: b"  ".to_vec(),
            added: false,
        };
        assert_eq!(&*reindent(b"    a\n b", &remove, true), b"  a\n b");
    }

    fn regions<'a>(text: &'a str, old: &str, tier: Tier) -> Vec<&'a str> {
        locate(text.as_bytes(), old.as_bytes(), tier)
            .iter()
            .map(|f| &text[f.start..f.end])
            .collect()
    }

    #[test]
    fn substrings() {
        let text = "def f():\n    x = 1  \n    return x\n";
        // Trailing whitespace: the first line ends a file line, the last starts one.
        assert_eq!(
            regions(text, "f():\n    x = 1\n    ret", Tier::TrailingWhitespace),
            ["f():\n    x = 1  \n    ret"]
        );
        // A pattern line ending in whitespace reaches the file line's end.
        assert_eq!(
            regions(text, "x = 1 ", Tier::TrailingWhitespace),
            ["x = 1  "]
        );
        assert_eq!(
            regions("a\tb\n", "a ", Tier::TrailingWhitespace),
            Vec::<&str>::new()
        );
        // Indentation: anchored at the line's start, one shift.
        let found = locate(text.as_bytes(), b"x = 1\nreturn x", Tier::Indentation);
        assert_eq!(found.len(), 1);
        assert_eq!(&text[found[0].start..found[0].end], "x = 1  \n    return x");
        let found = locate(text.as_bytes(), b"  x = 1\n  return x\n", Tier::Indentation);
        assert_eq!(
            &text[found[0].start..found[0].end],
            "    x = 1  \n    return x\n"
        );
        assert_eq!(
            found[0].shift,
            Shift {
                prefix: b"  ".to_vec(),
                added: true
            }
        );
        assert!(found[0].anchored);
        // Punctuation: folded both ways, mapped back to the file's bytes.
        assert_eq!(
            regions("say(“hi”) — ok\n", "say(\"hi\") - ok", Tier::Punctuation),
            ["say(“hi”) — ok"]
        );
        assert_eq!(regions("a “b” c\n", "\"b\"", Tier::Punctuation), ["“b”"]);
        assert_eq!(
            regions("x\u{a0}= 1\n", "x = 1", Tier::Punctuation),
            ["x\u{a0}= 1"]
        );
        // CRLF lines: the `\r` is outside the region.
        assert_eq!(
            regions("a  \r\nb\r\n", "a\nb\n", Tier::TrailingWhitespace),
            ["a  \r\nb\r\n"]
        );
        // Bytes that are not UTF-8 compare as themselves.
        assert_eq!(
            locate(
                b"caf\xe9 \xe2\x80\x9cx\xe2\x80\x9d\n",
                b"caf\xe9 \"x\"",
                Tier::Punctuation
            )
            .len(),
            1
        );
    }
}
