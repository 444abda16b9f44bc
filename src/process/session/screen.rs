//! What a person would see of a session: a terminal emulator (`vt100`) keeps the screen, and the
//! bytes a line program printed since the last read are kept apart, bounded, for its transcript.
//!
//! A line program's output is its scrolled text (the bytes, cleaned later with `clean_output`'s
//! rules); a full-screen program (one on the alternate screen) is shown as its screen. Bytes
//! printed while the alternate screen was up never reach the transcript, so a pager's redraws
//! do not show up once it has ended.

use std::num::NonZeroU16;

use crate::process::tail::HeadTail;

/// Rows of scrollback the emulator keeps (bounded memory whatever the program prints).
pub const SCROLLBACK_ROWS: usize = 200;

/// The output since the last read.
#[derive(Debug)]
pub struct Output {
    /// The transcript's first bytes (all of it unless `truncated`).
    pub head: Vec<u8>,
    /// The transcript's last bytes (empty unless `truncated`).
    pub tail: Vec<u8>,
    /// Bytes the transcript held in total.
    pub total: u64,
    /// Newlines the transcript held in total.
    pub lines: u64,
    /// Whether bytes between `head` and `tail` were dropped.
    pub truncated: bool,
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
    pending: HeadTail,
    head_bytes: usize,
    tail_bytes: usize,
}

/// Where in `chunk` a private mode sequence (`ESC [ ?`) starts: the alternate screen can only
/// switch at one of these.
fn private_modes(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memmem::find_iter(chunk, b"\x1b[?")
}

impl Terminal {
    /// A `cols` x `rows` screen; the transcript keeps its first `head_bytes` and last
    /// `tail_bytes` between two reads.
    pub fn new(cols: u16, rows: u16, head_bytes: usize, tail_bytes: usize) -> Terminal {
        let cols = NonZeroU16::new(cols.max(1)).unwrap_or(NonZeroU16::MIN);
        let rows = NonZeroU16::new(rows.max(1)).unwrap_or(NonZeroU16::MIN);
        Terminal {
            parser: vt100::Parser::new(rows, cols, SCROLLBACK_ROWS),
            pending: HeadTail::new(head_bytes, tail_bytes, None),
            head_bytes,
            tail_bytes,
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
                self.pending.push(segment);
            } else if before && !after {
                // Leaving the alternate screen: what follows the switch is line output again.
                self.pending.push(segment);
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

    /// Whether a full-screen program has the alternate screen up.
    pub fn is_full_screen(&self) -> bool {
        self.parser.screen().alternate_screen()
    }

    /// The output since the last read, which starts a new transcript.
    pub fn take(&mut self) -> Output {
        let pending = std::mem::replace(
            &mut self.pending,
            HeadTail::new(self.head_bytes, self.tail_bytes, None),
        );
        let (total, lines, truncated) = (pending.total(), pending.lines(), pending.is_truncated());
        let (head, tail) = pending.into_parts();
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let (row, col) = screen.cursor_position();
        let text = screen.alternate_screen().then(|| self.screen_text());
        Output {
            head,
            tail,
            total,
            lines,
            truncated,
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
        let mut t = Terminal::new(80, 24, 1024, 1024);
        t.feed(b"hello\r\nworld\r\n");
        let out = t.take();
        assert_eq!(out.head, b"hello\r\nworld\r\n");
        assert_eq!((out.total, out.lines, out.truncated), (14, 2, false));
        assert!(out.screen.is_none());
        assert_eq!(out.cursor, (3, 1));
        assert_eq!(t.take().total, 0);
    }

    #[test]
    fn the_alternate_screen_is_shown_as_a_screen_and_kept_out_of_the_transcript() {
        let mut t = Terminal::new(20, 5, 1024, 1024);
        t.feed(b"before\r\n\x1b[?1049h\x1b[H\x1b[2Jpage one\r\npage two");
        let out = t.take();
        assert_eq!(out.head, b"before\r\n");
        assert_eq!(out.screen.as_deref(), Some("page one\npage two"));
        assert_eq!((out.cursor, out.size), ((2, 9), (20, 5)));
        t.feed(b"\x1b[Hredraw\x1b[?1049lafter\r\n");
        let out = t.take();
        assert_eq!(out.head, b"\x1b[?1049lafter\r\n");
        assert!(out.screen.is_none());
    }

    #[test]
    fn a_flood_shows_the_same_screen_as_feeding_every_line() {
        let flood: Vec<u8> = (0..5000)
            .flat_map(|i| format!("line {i} with some text\r\n").into_bytes())
            .chain(b"\x1b[2Aup two\r\nlast".iter().copied())
            .collect();
        let mut fast = Terminal::new(40, 6, 64, 64);
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
        assert_eq!(fast.take().total, flood.len() as u64);
    }

    #[test]
    fn a_long_transcript_keeps_its_head_and_tail() {
        let mut t = Terminal::new(80, 24, 8, 8);
        for _ in 0..1000 {
            t.feed(b"0123456789\n");
        }
        let out = t.take();
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
            let mut t = super::Terminal::new(120, rows, 200_000, 200_000);
            let start = std::time::Instant::now();
            for _ in 0..(64 << 20) / 4096 {
                t.feed(&chunk);
            }
            eprintln!("{name}: 64 MiB in {:?}", start.elapsed());
        }
    }
}
