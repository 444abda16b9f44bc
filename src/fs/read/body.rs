//! A `read_file` window kept already rendered: each kept line written once, as
//! `{number:>6}\t{text}`, into one buffer while the file is read, instead of one `String` per
//! line rendered again afterwards. Sixty-four concurrent reads of 1 MiB files (one model
//! response) then hold one buffer per read in flight, not two, make no allocation per line,
//! and the result is that buffer with the header put in front ([`Body::into_text`]).

/// The kept window lines, rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body {
    /// The rendered lines one after the other (valid UTF-8: only whole decoded pieces are
    /// appended).
    text: Vec<u8>,
    /// Per kept line: where its rendering ends in `text`, and its length in chars (the line
    /// alone, as `WindowLine::chars`).
    lines: Vec<(usize, usize)>,
}

impl Body {
    /// Lines kept.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether no line is kept.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The length in chars of kept line `i` (0-based in the window).
    pub fn chars(&self, i: usize) -> Option<usize> {
        self.lines.get(i).map(|&(_, chars)| chars)
    }

    /// Where the rendered text in progress ends: a line started here is dropped by
    /// [`Body::truncate`] to it.
    pub(crate) fn mark(&self) -> usize {
        self.text.len()
    }

    /// Starts the rendering of line `number` (1-based): `{number:>6}\t`; `false` (nothing
    /// written) when memory ran out.
    pub(crate) fn start_line(&mut self, number: usize) -> bool {
        if self.text.try_reserve(32).is_err() {
            return false;
        }
        let mut buf = [0u8; 20];
        let digits = crate::fs::text::decimal(number, &mut buf);
        self.text.extend(std::iter::repeat_n(
            b' ',
            6usize.saturating_sub(digits.len()),
        ));
        self.text.extend_from_slice(digits);
        self.text.push(b'\t');
        true
    }

    /// Appends a piece of the line in progress (valid UTF-8 ending on a char boundary);
    /// `false` (nothing appended) when memory ran out: the buffer grows fallibly, since a
    /// Rust allocation failure would abort the interpreter.
    pub(crate) fn push(&mut self, piece: &[u8]) -> bool {
        if self.text.try_reserve(piece.len()).is_err() {
            return false;
        }
        self.text.extend_from_slice(piece);
        true
    }

    /// Keeps the line in progress, `chars` long.
    pub(crate) fn finish_line(&mut self, chars: usize) {
        self.lines.push((self.text.len(), chars));
    }

    /// Drops the rendering of the line in progress, started at `mark`.
    pub(crate) fn truncate(&mut self, mark: usize) {
        self.text.truncate(mark);
    }

    /// The first `shown` kept lines, rendered.
    pub fn rendered(&self, shown: usize) -> &str {
        let end = self.end_of(shown);
        std::str::from_utf8(&self.text[..end]).unwrap_or_default()
    }

    /// `head` followed by the first `shown` kept lines, in this body's buffer (no copy of the
    /// lines; the buffer is reused); `None` when the room for `head` could not be had.
    pub fn into_text(self, head: &str, shown: usize) -> Option<String> {
        let end = self.end_of(shown);
        let mut text = self.text;
        text.truncate(end);
        text.try_reserve_exact(head.len()).ok()?;
        let mut text = String::from_utf8(text).unwrap_or_default();
        text.insert_str(0, head);
        Some(text)
    }

    fn end_of(&self, shown: usize) -> usize {
        match shown {
            0 => 0,
            n => self.lines[n.min(self.lines.len()) - 1].0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_padded_to_six() {
        let mut b = Body::default();
        for (number, line) in [(7, "a\n"), (1_234_567, "bé\n")] {
            let mark = b.mark();
            assert_eq!(mark, b.text.len());
            assert!(b.start_line(number));
            assert!(b.push(line.as_bytes()));
            b.finish_line(line.chars().count());
        }
        let m = b.mark();
        b.start_line(8);
        b.push(b"dropped");
        b.truncate(m);
        assert_eq!(b.rendered(2), "     7\ta\n1234567\tbé\n");
        assert_eq!(b.rendered(1), "     7\ta\n");
        assert_eq!(b.chars(1), Some(3));
        assert_eq!(b.len(), 2);
        assert_eq!(b.into_text("[h]\n", 1).as_deref(), Some("[h]\n     7\ta\n"));
    }
}
