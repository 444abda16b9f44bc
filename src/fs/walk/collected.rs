//! What a parallel walk collects, kept compact and put in order once at the end: one byte
//! arena per walking thread holding each entry's sort key and shown name, no `String` or
//! `PathBuf` per entry; each thread's part sorted on its own core, then merged.
//!
//! The order is the one a depth-first walk with each directory's names sorted meets entries
//! in ([`sort_key`](super::sort_key): Python's component-wise `Path` order, `rg --sort path`'s),
//! so a walk in any order, sorted here, gives what the sorted walk gives.

/// One collected entry: its sort key and shown name, back to back in the arena.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// The key's first 16 bytes, big-endian (zero-padded): most comparisons end here.
    head: u128,
    start: usize,
    key: u32,
    shown: u32,
}

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
            shown: shown.len() as u32,
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

    fn shown(&self, span: &Span) -> &str {
        let from = span.start + span.key as usize;
        // Pushed from a `&str`, so the bytes are UTF-8.
        std::str::from_utf8(&self.bytes[from..from + span.shown as usize]).unwrap_or_default()
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

    /// The shown names of all `parts`, in walk order, at most `max` of them; with the key of
    /// the first entry the cap left out, if any. Each part is sorted on its own thread, then
    /// the parts are merged.
    pub fn into_sorted_lines(parts: Vec<Collected>, max: usize) -> (Vec<String>, Option<Vec<u8>>) {
        let mut lines = Vec::new();
        let past = Self::merge(parts, max, &mut lines);
        (lines, past)
    }

    /// [`Collected::into_sorted_lines`] written straight into one text, each name followed by
    /// `\n` (no `String` per entry): the text, the names in it, and the key past the cap.
    pub fn into_sorted_text(parts: Vec<Collected>, max: usize) -> (String, usize, Option<Vec<u8>>) {
        let mut text = Joined::default();
        let past = Self::merge(parts, max, &mut text);
        (text.text, text.count, past)
    }

    /// Sorts each part on its own thread, tells `out` how many entries will come and about
    /// how many bytes they take (names and one separator each), then hands it at most `max`
    /// shown names in walk order; returns the key of the first entry the cap left out.
    fn merge(mut parts: Vec<Collected>, max: usize, out: &mut impl Merged) -> Option<Vec<u8>> {
        parts.retain(|p| !p.is_empty());
        std::thread::scope(|scope| {
            for part in parts.iter_mut() {
                scope.spawn(move || part.sort());
            }
        });
        let total: usize = parts.iter().map(Collected::len).sum();
        let bytes: usize = parts
            .iter()
            .flat_map(|p| p.spans.iter().map(|s| s.shown as usize + 1))
            .sum();
        let entries = total.min(max);
        out.reserve(entries, bytes / total.max(1) * entries + entries);
        let mut emitted = 0;
        let mut next = vec![0usize; parts.len()];
        loop {
            // The part whose next entry comes first (few parts: one per walking thread).
            let mut best: Option<(usize, u128, &[u8])> = None;
            for (i, part) in parts.iter().enumerate() {
                let Some(span) = part.spans.get(next[i]) else {
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
            out.push(parts[b].shown(&parts[b].spans[next[b]]));
            emitted += 1;
            next[b] += 1;
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
trait Merged {
    /// `entries` will come, taking about `bytes`.
    fn reserve(&mut self, entries: usize, bytes: usize);
    fn push(&mut self, shown: &str);
}

impl Merged for Vec<String> {
    fn reserve(&mut self, entries: usize, _: usize) {
        Vec::reserve(self, entries);
    }

    fn push(&mut self, shown: &str) {
        Vec::push(self, shown.to_owned());
    }
}

/// Names joined into one text, each followed by `\n`.
#[derive(Default)]
struct Joined {
    text: String,
    count: usize,
}

impl Merged for Joined {
    fn reserve(&mut self, _: usize, bytes: usize) {
        self.text.reserve(bytes);
    }

    fn push(&mut self, shown: &str) {
        self.text.push_str(shown);
        self.text.push('\n');
        self.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts collected in any order come out in component order (`a/b` before `a-b`),
    /// capped, with whether the cap dropped something.
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
            parts
        };
        let (lines, past) = Collected::into_sorted_lines(parts(), 10);
        assert_eq!(lines, ["./a", "./a/a/c", "./a/b", "./a-b", "./z"]);
        assert_eq!(past, None);
        let (text, count, whole) = Collected::into_sorted_text(parts(), 10);
        assert_eq!(
            (text.as_str(), count, whole),
            ("./a\n./a/a/c\n./a/b\n./a-b\n./z\n", 5, None)
        );
        let (text, count, past) = Collected::into_sorted_text(parts(), 2);
        assert_eq!((text.as_str(), count), ("./a\n./a/a/c\n", 2));
        assert_eq!(past.as_deref(), Some(&b"a\0b"[..]));
        let (lines, past) = Collected::into_sorted_lines(parts(), 2);
        assert_eq!(lines, ["./a", "./a/a/c"]);
        assert_eq!(past.as_deref(), Some(&b"a\0b"[..]));
        assert_eq!(Collected::count_before(&parts(), past.as_deref()), 2);
        assert_eq!(Collected::count_before(&parts(), None), 5);
        let (lines, past) = Collected::into_sorted_lines(parts(), 5);
        assert_eq!((lines.len(), past), (5, None));
        let (lines, past) = Collected::into_sorted_lines(parts(), 0);
        assert_eq!((lines.len(), past.as_deref()), (0, Some(&b"a"[..])));
    }
}
