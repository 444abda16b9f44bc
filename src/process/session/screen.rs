//! What a person would see of a session: a terminal emulator (`vt100`) keeps the screen, and the
//! text a line program printed since the last read is kept apart, bounded, as its transcript.
//!
//! A line program's output is its scrolled text (cleaned as it arrives, see
//! [`transcript`](super::transcript)); a full-screen program (one on the alternate screen) is
//! shown as its screen. Bytes printed while the alternate screen was up never reach the
//! transcript, so a pager's redraws do not show up once it has ended.

use std::num::NonZeroU16;

use super::transcript::{SpillSpec, Spilled, Transcript};

/// Rows of scrollback the emulator keeps (bounded memory whatever the program prints).
pub const SCROLLBACK_ROWS: usize = 200;

/// The output since the last read.
#[derive(Debug)]
pub struct Output {
    /// The transcript's first bytes, cleaned text (all of it unless `truncated`).
    pub head: Vec<u8>,
    /// The transcript's last bytes (empty unless `truncated`).
    pub tail: Vec<u8>,
    /// Bytes the transcript held in total.
    pub total: u64,
    /// Newlines the transcript held in total.
    pub lines: u64,
    /// Whether bytes between `head` and `tail` were dropped.
    pub truncated: bool,
    /// The file holding the whole transcript when a result cannot show all of it.
    pub spill: Option<Spilled>,
    /// The screen as text when the alternate screen is up: rows with trailing blanks removed,
    /// trailing blank rows dropped.
    pub screen: Option<String>,
    /// The cursor, 1-based `(row, column)`.
    pub cursor: (u16, u16),
    /// The screen's size, `(cols, rows)`.
    pub size: (u16, u16),
}

/// The emulator and the transcript since the last read.
pub struct Terminal {
    parser: vt100::Parser,
    transcript: Transcript,
}

/// Where in `chunk` a private mode sequence (`ESC [ ?`) starts: the alternate screen can only
/// switch at one of these.
fn private_modes(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memmem::find_iter(chunk, b"\x1b[?")
}

impl Terminal {
    /// A `cols` x `rows` screen; the transcript keeps its first `head_bytes` and last
    /// `tail_bytes` between two reads, and spills long ones as `spill` says.
    pub fn new(
        cols: u16,
        rows: u16,
        head_bytes: usize,
        tail_bytes: usize,
        spill: Option<SpillSpec>,
    ) -> Terminal {
        let cols = NonZeroU16::new(cols.max(1)).unwrap_or(NonZeroU16::MIN);
        let rows = NonZeroU16::new(rows.max(1)).unwrap_or(NonZeroU16::MIN);
        Terminal {
            parser: vt100::Parser::new(rows, cols, SCROLLBACK_ROWS),
            transcript: Transcript::new(head_bytes, tail_bytes, spill),
        }
    }

    /// Feeds what the program printed; segments printed outside the alternate screen join the
    /// transcript.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut start = 0;
        let cuts = private_modes(chunk).filter(|&i| i > 0).chain([chunk.len()]);
        for end in cuts {
            let segment = &chunk[start..end];
            let before = self.parser.screen().alternate_screen();
            self.parser.process(self.visible_part(segment, before));
            let after = self.parser.screen().alternate_screen();
            if !before && !after {
                self.transcript.push(segment);
            } else if before && !after {
                // Leaving the alternate screen: what follows the switch is line output again.
                self.transcript.push(segment);
            }
            start = end;
        }
    }

    /// The part of `segment` the emulator must see: on the normal screen, text that more than a
    /// screenful of newlines (before any escape sequence) scrolls away is skipped, so a program
    /// flooding its terminal costs the emulator a screen per chunk, not every line. (The skipped
    /// lines would only reach the scrollback, which no read shows.)
    fn visible_part<'a>(&self, segment: &'a [u8], alternate: bool) -> &'a [u8] {
        if alternate {
            return segment;
        }
        let plain = memchr::memchr(0x1b, segment).unwrap_or(segment.len());
        let (rows, _) = self.parser.screen().size();
        let keep = usize::from(rows.get()) + 1;
        match memchr::memrchr_iter(b'\n', &segment[..plain]).nth(keep) {
            Some(cut) => &segment[cut..],
            None => segment,
        }
    }

    /// Removes the spill files reads kept; returns how many.
    pub fn remove_files(&mut self) -> usize {
        self.transcript.remove_files()
    }

    /// Whether a full-screen program has the alternate screen up.
    pub fn is_full_screen(&self) -> bool {
        self.parser.screen().alternate_screen()
    }

    /// The output since the last read, which starts a new transcript; its spill file is kept
    /// when the text is longer than `room` chars (see [`Transcript::take`]).
    pub fn take(&mut self, room: Option<usize>) -> Output {
        let taken = self.transcript.take(room);
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let (row, col) = screen.cursor_position();
        let text = screen.alternate_screen().then(|| self.screen_text());
        Output {
            head: taken.head,
            tail: taken.tail,
            total: taken.total,
            lines: taken.lines,
            truncated: taken.truncated,
            spill: taken.spill,
            screen: text,
            cursor: (row + 1, col + 1),
            size: (cols.get(), rows.get()),
        }
    }

    /// The visible screen as text: trailing blanks of each row and trailing blank rows removed.
    pub fn screen_text(&self) -> String {
        let screen = self.parser.screen();
        let (_, cols) = screen.size();
        let rows: Vec<String> = screen
            .rows(0, cols.get())
            .map(|r| r.trim_end().to_string())
            .collect();
        let used = rows
            .iter()
            .rposition(|r| !r.is_empty())
            .map_or(0, |i| i + 1);
        rows[..used].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_output_is_kept_and_a_read_starts_anew() {
        let mut t = Terminal::new(80, 24, 1024, 1024, None);
        t.feed(b"hello\r\nworld\r\n");
        let out = t.take(None);
        assert_eq!(out.head, b"hello\nworld\n");
        assert_eq!((out.total, out.lines, out.truncated), (12, 2, false));
        assert!(out.screen.is_none());
        assert_eq!(out.cursor, (3, 1));
        assert_eq!(t.take(None).total, 0);
    }

    #[test]
    fn the_alternate_screen_is_shown_as_a_screen_and_kept_out_of_the_transcript() {
        let mut t = Terminal::new(20, 5, 1024, 1024, None);
        t.feed(b"before\r\n\x1b[?1049h\x1b[H\x1b[2Jpage one\r\npage two");
        let out = t.take(None);
        assert_eq!(out.head, b"before\n");
        assert_eq!(out.screen.as_deref(), Some("page one\npage two"));
        assert_eq!((out.cursor, out.size), ((2, 9), (20, 5)));
        t.feed(b"\x1b[Hredraw\x1b[?1049lafter\r\n");
        let out = t.take(None);
        assert_eq!(out.head, b"after\n");
        assert!(out.screen.is_none());
    }

    #[test]
    fn a_flood_shows_the_same_screen_as_feeding_every_line() {
        let flood: Vec<u8> = (0..5000)
            .flat_map(|i| format!("line {i} with some text\r\n").into_bytes())
            .chain(b"\x1b[2Aup two\r\nlast".iter().copied())
            .collect();
        let mut fast = Terminal::new(40, 6, 64, 64, None);
        fast.feed(&flood);
        let mut slow =
            vt100::Parser::new(NonZeroU16::new(6).unwrap(), NonZeroU16::new(40).unwrap(), 0);
        for line in flood.split_inclusive(|&b| b == b'\n') {
            slow.process(line);
        }
        assert_eq!(fast.parser.screen().contents(), slow.screen().contents());
        assert_eq!(
            fast.parser.screen().cursor_position(),
            slow.screen().cursor_position()
        );
        // The transcript is the cleaned text: no carriage returns, no escape sequence.
        let cleaned = flood.len() - 5001 - b"\x1b[2A".len();
        assert_eq!(fast.take(None).total, cleaned as u64);
    }

    #[test]
    fn a_long_transcript_keeps_its_head_and_tail() {
        let mut t = Terminal::new(80, 24, 8, 8, None);
        for _ in 0..1000 {
            t.feed(b"0123456789\n");
        }
        let out = t.take(None);
        assert!(out.truncated);
        assert_eq!((out.total, out.lines), (11_000, 1000));
        assert_eq!((out.head.len(), out.tail.len()), (8, 8));
    }
}

#[cfg(test)]
mod speed {
    /// `cargo test --release --lib feed_speed -- --ignored --nocapture`: emulator cost per MiB.
    #[test]
    #[ignore]
    fn feed_speed() {
        let line = b"line of forty characters, over and over\r\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(4096).collect();
        for (name, rows) in [("40 rows", 40u16)] {
            let mut t = super::Terminal::new(120, rows, 200_000, 200_000, None);
            let start = std::time::Instant::now();
            for _ in 0..(64 << 20) / 4096 {
                t.feed(&chunk);
            }
            eprintln!("{name}: 64 MiB in {:?}", start.elapsed());
        }
    }
}
