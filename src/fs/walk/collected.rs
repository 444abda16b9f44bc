//! What a parallel walk collects, kept compact and put in order once at the end: one byte
//! arena per walking thread holding each entry's sort key and shown name, no `String` or
//! `PathBuf` per entry; each thread's part sorted on its own core, then merged.
//!
//! The order is the one a depth-first walk with each directory's names sorted meets entries
//! in ([`sort_key`](super::sort_key): Python's component-wise `Path` order, `rg --sort path`'s),
//! so a walk in any order, sorted here, gives what the sorted walk gives.

use std::ops::Range;

/// Entries from which [`Collected::merge`] writes its two halves at once.
const PARALLEL_MERGE: usize = 1 << 16;

/// One collected entry: its sort key and shown name, back to back in the arena.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// The key's first 16 bytes, big-endian (zero-padded): most comparisons end here.
    head: u128,
    start: usize,
    key: u32,
    /// The shown bytes' length, with [`NAMED`] set for an entry shown by its path.
    shown: u32,
}

/// The bit of [`Span::shown`] marking an entry pushed by [`Collected::push_named`].
const NAMED: u32 = 1 << 31;

/// Entries collected by one walking thread (or several, merged).
#[derive(Debug, Default)]
pub struct Collected {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

impl Collected {
    /// Adds an entry: `rel`, its path below the walk root (the order is taken from it, `/`
    /// lowest), and `shown`, the line the model sees for it.
    pub fn push(&mut self, rel: &[u8], shown: &str) {
        self.add(rel, shown, 0);
    }

    /// Adds an entry shown as the merge's prefix, `rel` and `suffix` (`/` for a directory,
    /// say): no line is built per entry ([`Collected::into_prefixed_text`]).
    pub fn push_named(&mut self, rel: &[u8], suffix: &str) {
        self.add(rel, suffix, NAMED);
    }

    fn add(&mut self, rel: &[u8], shown: &str, named: u32) {
        let start = self.bytes.len();
        self.bytes
            .extend(rel.iter().map(|&b| if b == b'/' { 0 } else { b }));
        let mut head = [0u8; 16];
        let known = rel.len().min(16);
        head[..known].copy_from_slice(&self.bytes[start..start + known]);
        self.bytes.extend_from_slice(shown.as_bytes());
        self.spans.push(Span {
            head: u128::from_be_bytes(head),
            start,
            key: rel.len() as u32,
            shown: shown.len() as u32 | named,
        });
    }

    /// Entries collected.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether nothing was collected.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    fn key(&self, span: &Span) -> &[u8] {
        &self.bytes[span.start..span.start + span.key as usize]
    }

    fn shown(&self, span: &Span) -> &[u8] {
        let from = span.start + span.key as usize;
        &self.bytes[from..from + (span.shown & !NAMED) as usize]
    }

    /// Walk order of two entries: the keys' bytes (a shorter key that is a prefix of the
    /// other first; zero padding never decides, as a `/` became 0 and sorts lowest too).
    fn order(&self, a: &Span, b: &Span) -> std::cmp::Ordering {
        a.head
            .cmp(&b.head)
            .then_with(|| self.key(a).cmp(self.key(b)))
    }

    fn sort(&mut self) {
        let mut spans = std::mem::take(&mut self.spans);
        spans.sort_unstable_by(|a, b| self.order(a, b));
        self.spans = spans;
    }

    /// The shown names of all `parts`, in walk order, at most `max` of them, written into one
    /// text, each followed by `\n` (no `String` per entry): the text, the names in it, and
    /// the key of the first entry the cap left out, if any. Each part is sorted on its own
    /// thread, then the parts are merged.
    pub fn into_sorted_text(parts: Vec<Collected>, max: usize) -> (String, usize, Option<Vec<u8>>) {
        Self::into_prefixed_text(parts, max, "")
    }

    /// [`Collected::into_sorted_text`], entries pushed by [`Collected::push_named`] shown as
    /// `prefix`, their path (non-UTF-8 bytes decoded lossily) and their suffix.
    pub fn into_prefixed_text(
        parts: Vec<Collected>,
        max: usize,
        prefix: &str,
    ) -> (String, usize, Option<Vec<u8>>) {
        let mut text = Prefixed {
            prefix: prefix.as_bytes(),
            text: Vec::new(),
            count: 0,
        };
        let past = Self::merge(parts, max, &mut text);
        let count = text.count;
        // No name holds a 0 byte: every 0 is a key's `/`.
        let mut text = text.text;
        for b in text.iter_mut() {
            if *b == 0 {
                *b = b'/';
            }
        }
        let text = match String::from_utf8(text) {
            Ok(text) => text,
            // Each name decoded alone, as a separate `to_string_lossy` would: `\n` is ASCII,
            // so no invalid sequence spans two names.
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        };
        (text, count, past)
    }

    /// Sorts each part on its own thread, tells `out` how many entries will come and about
    /// how many bytes their keys and shown names take, then hands it at most `max` entries
    /// in walk order; returns the key of the first entry the cap left out. A big uncapped
    /// merge is done in two halves at once (split at a key, joined at the end).
    fn merge<M: Merged>(mut parts: Vec<Collected>, max: usize, out: &mut M) -> Option<Vec<u8>> {
        parts.retain(|p| !p.is_empty());
        std::thread::scope(|scope| {
            for part in parts.iter_mut() {
                scope.spawn(move || part.sort());
            }
        });
        let total: usize = parts.iter().map(Collected::len).sum();
        let (keys, shown) = parts
            .iter()
            .flat_map(|p| p.spans.iter())
            .fold((0, 0), |(k, s), span| {
                (k + span.key as usize, s + (span.shown & !NAMED) as usize)
            });
        let entries = total.min(max);
        let share = |n: usize, bytes: usize| bytes / total.max(1) * n;
        out.reserve(entries, share(entries, keys), share(entries, shown));
        let big = parts.iter().max_by_key(|p| p.len());
        let Some(big) = big.filter(|_| entries == total && total >= PARALLEL_MERGE) else {
            let whole = parts.iter().map(|p| 0..p.len()).collect();
            return Self::emit(&parts, whole, max, out);
        };
        // Every entry is shown: the entries before the biggest part's middle one, and the
        // rest, are merged on two threads.
        let middle = &big.spans[big.len() / 2];
        let pivot = (middle.head, big.key(middle));
        let (low, high): (Vec<_>, Vec<_>) = parts
            .iter()
            .map(|p| {
                let at = p.spans.partition_point(|s| (s.head, p.key(s)) < pivot);
                (0..at, at..p.len())
            })
            .unzip();
        let later_entries = high.iter().map(|r| r.len()).sum();
        let mut later = out.sibling();
        later.reserve(
            later_entries,
            share(later_entries, keys),
            share(later_entries, shown),
        );
        // The later half escapes names for this call too (`EscapeScope`).
        let call = crate::fs::text::names::EscapeScope::current();
        std::thread::scope(|scope| {
            let parts = &parts;
            let later = &mut later;
            scope.spawn(move || call.enter(|| Self::emit(parts, high, usize::MAX, later)));
            Self::emit(parts, low, usize::MAX, out);
        });
        out.append(later);
        None
    }

    /// Hands `out` the entries of `ranges` of the sorted `parts` (one range per part), in
    /// walk order, at most `max`; returns the key of the first entry past `max`.
    fn emit(
        parts: &[Collected],
        mut ranges: Vec<Range<usize>>,
        max: usize,
        out: &mut impl Merged,
    ) -> Option<Vec<u8>> {
        let mut emitted = 0;
        loop {
            // The part whose next entry comes first (few parts: one per walking thread).
            let mut best: Option<(usize, u128, &[u8])> = None;
            for (i, part) in parts.iter().enumerate() {
                let Some(span) = ranges[i].clone().next().map(|n| &part.spans[n]) else {
                    continue;
                };
                let key = part.key(span);
                let first = best
                    .is_none_or(|(_, head, b)| span.head < head || (span.head == head && key < b));
                if first {
                    best = Some((i, span.head, key));
                }
            }
            let (b, _, key) = best?;
            if emitted == max {
                return Some(key.to_vec());
            }
            let span = &parts[b].spans[ranges[b].start];
            let (key, shown) = (parts[b].key(span), parts[b].shown(span));
            out.push(key, shown, span.shown & NAMED != 0);
            emitted += 1;
            ranges[b].start += 1;
        }
    }

    /// Entries of `parts` that come before `cutoff` in walk order (all of them for `None`).
    pub fn count_before(parts: &[Collected], cutoff: Option<&[u8]>) -> usize {
        parts
            .iter()
            .map(|part| match cutoff {
                Some(cutoff) => part.spans.iter().filter(|s| part.key(s) < cutoff).count(),
                None => part.len(),
            })
            .sum()
    }
}

/// Where [`Collected::merge`] puts the shown names.
trait Merged: Send + Sized {
    /// `entries` will come, their keys taking about `keys` bytes, their shown names `shown`.
    fn reserve(&mut self, entries: usize, keys: usize, shown: usize);
    /// The next entry in walk order: its sort key (`/` as 0) and shown bytes, `named` when
    /// pushed by [`Collected::push_named`].
    fn push(&mut self, key: &[u8], shown: &[u8], named: bool);
    /// An empty sink made as this one was, for the entries that come after.
    fn sibling(&self) -> Self;
    /// Adds what `later` holds after what this one holds.
    fn append(&mut self, later: Self);
}

/// Lines as bytes, each followed by `\n`: a named entry's as a prefix, its key (its `/`
/// still 0) and suffix, another's as pushed.
struct Prefixed<'a> {
    prefix: &'a [u8],
    text: Vec<u8>,
    count: usize,
}

impl Merged for Prefixed<'_> {
    fn reserve(&mut self, entries: usize, keys: usize, shown: usize) {
        self.text
            .reserve(keys + shown + entries * (self.prefix.len() + 1));
    }

    fn push(&mut self, key: &[u8], shown: &[u8], named: bool) {
        if named && key.iter().any(|&b| (b != 0 && b < 0x20) || b >= 0x7f) {
            // A name that may hold a control character or a byte that is not UTF-8: shown as
            // `escape_name` shows it.
            let mut path = self.prefix.to_vec();
            path.extend(key.iter().map(|&b| if b == 0 { b'/' } else { b }));
            let path = crate::fs::text::names::lossless(&path);
            let escaped = crate::fs::text::escape_name(&path);
            if let std::borrow::Cow::Owned(escaped) = escaped {
                self.text.extend_from_slice(escaped.as_bytes());
                self.text.extend_from_slice(shown);
                self.text.push(b'\n');
                self.count += 1;
                return;
            }
        }
        if named {
            self.text.extend_from_slice(self.prefix);
            self.text.extend_from_slice(key);
        }
        self.text.extend_from_slice(shown);
        self.text.push(b'\n');
        self.count += 1;
    }

    fn sibling(&self) -> Self {
        Prefixed {
            prefix: self.prefix,
            text: Vec::new(),
            count: 0,
        }
    }

    fn append(&mut self, later: Self) {
        self.text.extend_from_slice(&later.text);
        self.count += later.count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts collected in any order come out in component order (`a/b` before `a-b`),
    /// capped, with whether the cap dropped something; named entries as the prefix, their
    /// path and suffix.
    #[test]
    fn parts_merge_in_component_order() {
        // Two threads' parts, and an empty one.
        let parts = || {
            let mut parts = vec![
                Collected::default(),
                Collected::default(),
                Collected::default(),
            ];
            for (i, rel) in [(0, "a-b"), (2, "a/b"), (0, "z"), (2, "a/a/c"), (0, "a")] {
                parts[i].push(rel.as_bytes(), &format!("./{rel}"));
            }
            parts[2].push_named(b"a/b0", "/");
            parts[0].push_named("\u{e9}/x".as_bytes(), "");
            parts
        };
        let all = "./a\n./a/a/c\n./a/b\np/a/b0/\n./a-b\n./z\np/\u{e9}/x\n";
        let (text, count, whole) = Collected::into_prefixed_text(parts(), 10, "p/");
        assert_eq!((text.as_str(), count, whole), (all, 7, None));
        let (text, _, _) = Collected::into_sorted_text(parts(), 10);
        assert_eq!(text, all.replace("p/", ""));
        let (text, count, past) = Collected::into_sorted_text(parts(), 2);
        assert_eq!((text.as_str(), count), ("./a\n./a/a/c\n", 2));
        assert_eq!(past.as_deref(), Some(&b"a\0b"[..]));
        assert_eq!(Collected::count_before(&parts(), past.as_deref()), 2);
        assert_eq!(Collected::count_before(&parts(), None), 7);
        let (text, count, past) = Collected::into_prefixed_text(parts(), 4, "p/");
        assert_eq!((text.as_str(), count), (&all[..26], 4));
        assert_eq!(past.as_deref(), Some(&b"a-b"[..]));
        let (text, count, past) = Collected::into_sorted_text(parts(), 0);
        assert_eq!(
            (text.as_str(), count, past.as_deref()),
            ("", 0, Some(&b"a"[..]))
        );
        // A name that is not UTF-8 is shown as `repr()` shows its `surrogateescape` text.
        let mut odd = Collected::default();
        odd.push_named(b"q/\xff\xfe", "");
        odd.push_named(b"q/ok", "");
        let (text, _, _) = Collected::into_prefixed_text(vec![odd], 10, "");
        assert_eq!(text, "q/ok\n'q/\\udcff\\udcfe'\n");
        // A name holding a control character is one line, as `repr()` writes it (issue 19).
        let mut forged = Collected::default();
        forged.push_named(b"q/a\nb.txt:1:x", "");
        forged.push_named(b"q/ok", "/");
        let (text, count, _) = Collected::into_prefixed_text(vec![forged], 10, "p/");
        assert_eq!(
            (text.as_str(), count),
            ("'p/q/a\\nb.txt:1:x'\np/q/ok/\n", 2)
        );
    }

    /// A merge big enough to be written in two halves at once gives the order one sort of
    /// all entries gives, named entries and others alike; capped, it stops at the cap.
    #[test]
    fn big_merges_split_in_halves_keep_the_order() {
        let n = PARALLEL_MERGE + 1000;
        // Spread over three parts in a scrambled order; names of several lengths and depths.
        let rel = |i: usize| match i % 3 {
            0 => format!("d{:03}/f{i}", i % 997),
            1 => format!("d{:03}-x/{i}.txt", i % 13),
            _ => format!("z{i}"),
        };
        let suffix = |i: usize| if i.is_multiple_of(5) { "/" } else { "" };
        let parts = || {
            let mut parts = vec![
                Collected::default(),
                Collected::default(),
                Collected::default(),
            ];
            for j in 0..n {
                let i = j * 7919 % n;
                if i.is_multiple_of(2) {
                    parts[i % 3].push_named(rel(i).as_bytes(), suffix(i));
                } else {
                    parts[i % 3].push(rel(i).as_bytes(), &format!("./{}", rel(i)));
                }
            }
            parts
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| rel(i).replace('/', "\0"));
        let line = |i: usize| {
            format!(
                "./{}{}\n",
                rel(i),
                if i.is_multiple_of(2) { suffix(i) } else { "" }
            )
        };
        let lines: Vec<_> = order.iter().map(|&i| line(i)).collect();
        let (text, count, past) = Collected::into_prefixed_text(parts(), usize::MAX, "./");
        assert_eq!((text, count, past), (lines.concat(), n, None));
        let (text, count, past) = Collected::into_prefixed_text(parts(), n - 1, "./");
        assert_eq!((text, count), (lines[..n - 1].concat(), n - 1));
        assert_eq!(
            past,
            Some(rel(order[n - 1]).replace('/', "\0").into_bytes())
        );
    }
}
