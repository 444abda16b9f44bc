//! One file's `search_files` results, `{label}:{n}:{line}` each, written into one buffer:
//! a search may find tens of thousands of lines, and a `String` for each cost more than
//! the search itself. The caller appends whole files' buffers to the result text.

/// Result lines in one buffer, each followed by `\n` (a label may hold a `\n`, so the line
/// ends are kept apart).
#[derive(Debug, Default)]
pub struct Hits {
    /// The lines, each followed by `\n`.
    text: String,
    /// Where each line's `\n` ends, in `text`.
    ends: Vec<usize>,
}

impl Hits {
    /// The number of lines.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends `{label}:{line_no}:{line}`.
    pub fn push(&mut self, label: &str, line_no: usize, line: &str) {
        let mut buf = [0u8; 20];
        let number =
            std::str::from_utf8(crate::fs::text::decimal(line_no, &mut buf)).unwrap_or_default();
        self.text
            .reserve(label.len() + number.len() + line.len() + 3);
        self.text.push_str(label);
        self.text.push(':');
        self.text.push_str(number);
        self.text.push(':');
        self.text.push_str(line);
        self.text.push('\n');
        self.ends.push(self.text.len());
    }

    /// The first `n` lines (all when fewer), each followed by `\n`.
    pub fn head(&self, n: usize) -> &str {
        match n.min(self.len()) {
            0 => "",
            n => &self.text[..self.ends[n - 1]],
        }
    }

    /// The lines, without their `\n`.
    pub fn into_lines(self) -> Vec<String> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let line = self.text[start..end - 1].to_string();
                start = end;
                line
            })
            .collect()
    }

    /// The same lines, each with `label` put before it: a search finds lines unlabelled,
    /// and only a file with hits pays for its label.
    pub fn labelled(self, label: &str) -> Self {
        let mut out = Hits {
            text: String::with_capacity(self.text.len() + self.len() * label.len()),
            ends: Vec::with_capacity(self.len()),
        };
        let mut start = 0;
        for &end in &self.ends {
            out.text.push_str(label);
            out.text.push_str(&self.text[start..end]);
            out.ends.push(out.text.len());
            start = end;
        }
        out
    }

    /// Lines (without `\n`) as hits.
    pub fn from_lines(lines: Vec<String>) -> Self {
        let mut hits = Hits::default();
        for line in lines {
            hits.text.push_str(&line);
            hits.text.push('\n');
            hits.ends.push(hits.text.len());
        }
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_heads_cut_at_line_ends() {
        let mut h = Hits::default();
        assert!(h.is_empty());
        assert_eq!(h.head(3), "");
        h.push("a\nb.py", 0, "x");
        h.push("c", 1234567890, "");
        h.push("d", 7, "y:z");
        assert_eq!(h.len(), 3);
        assert_eq!(h.head(1), "a\nb.py:0:x\n");
        assert_eq!(h.head(2), "a\nb.py:0:x\nc:1234567890:\n");
        assert_eq!(h.head(9), "a\nb.py:0:x\nc:1234567890:\nd:7:y:z\n");
        let lines = h.into_lines();
        assert_eq!(lines, ["a\nb.py:0:x", "c:1234567890:", "d:7:y:z"]);
        let again = Hits::from_lines(lines.clone());
        assert_eq!(again.head(3), "a\nb.py:0:x\nc:1234567890:\nd:7:y:z\n");
        assert_eq!(again.into_lines(), lines);
        let mut h = Hits::default();
        h.push("", 3, "x");
        h.push("", 10, "y\r");
        let h = h.labelled("a/b.py");
        assert_eq!(h.head(9), "a/b.py:3:x\na/b.py:10:y\r\n");
        assert_eq!(h.head(1), "a/b.py:3:x\n");
        assert_eq!(Hits::default().labelled("z").head(9), "");
    }
}
