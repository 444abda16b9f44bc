//! The sink that turns one file's search into the lines the reference shows: what `rg`'s
//! standard printer writes for `--null --line-number --with-filename --color=never
//! --max-columns 4096 --max-columns-preview`, after the reference's `_match_line`.
//!
//! Matches become `{display}:{line}:{text}`, context lines `{display}-{line}-{text}`; the
//! `--` group separators `rg` prints are dropped (the reference drops them), and `rg`'s
//! binary-file notices (`{display}: WARNING: stopped searching binary file after match
//! (found "\0" byte around offset N)`, `{display}: binary file matches (...)`) are kept, as
//! the reference shows them too. Text is decoded lossily, as the reference's
//! `decode('utf-8', errors='replace')` does.
//!
//! Source: `StandardSink` in ripgrep's `crates/printer/src/standard.rs`.

use std::io;
use std::path::Path;

use grep_searcher::{Searcher, Sink, SinkContext, SinkFinish, SinkMatch};

use super::preview::render_line;
use super::{Authorize, Collector};
use crate::cancel::CancelFlag;

/// How binary data in this file is handled, mirroring the searcher mode `rg` would use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binary {
    /// A walked file (`BinaryDetection::quit`): the searcher stops at the first NUL.
    Quit,
    /// An explicit file read by `rg` through a reader (a BOM was found):
    /// `BinaryDetection::convert`, detected by the searcher.
    Convert,
    /// An explicit file `rg` searches as a memory-mapped slice: the first 64 KiB were
    /// checked by the caller (`preset`), and every line sunk is checked here, as the
    /// searcher's slice strategy does; the searcher itself runs without detection.
    Slice { preset: Option<u64> },
}

/// Collects one file's lines into the shared [`Collector`].
pub(crate) struct FileSink<'a> {
    walked: &'a Path,
    auth: &'a dyn Authorize,
    /// `None` until the first record needs it; then the display path or `None` (dropped).
    display: Option<Option<String>>,
    out: &'a mut Collector,
    cancel: &'a CancelFlag,
    binary: Binary,
    binary_offset: Option<u64>,
    match_count: u64,
    /// The collector refused a record (cap exceeded) or the call was cancelled.
    stopped: bool,
    /// `max_line_chars`: long lines clipped (see [`FileSink::clipping`]).
    clip: Option<&'a crate::fs::read::clip::GrepClip>,
}

impl<'a> FileSink<'a> {
    pub(crate) fn new(
        walked: &'a Path,
        auth: &'a dyn Authorize,
        out: &'a mut Collector,
        cancel: &'a CancelFlag,
        binary: Binary,
    ) -> Self {
        let binary_offset = match binary {
            Binary::Slice { preset } => preset,
            _ => None,
        };
        FileSink {
            walked,
            auth,
            display: None,
            out,
            cancel,
            binary,
            binary_offset,
            match_count: 0,
            stopped: false,
            clip: None,
        }
    }

    /// Clips lines longer than `max_line_chars` ([`crate::fs::read::clip::GrepClip`]).
    pub(crate) fn clipping(mut self, clip: Option<&'a crate::fs::read::clip::GrepClip>) -> Self {
        self.clip = clip;
        self
    }

    /// Whether the search stopped because the cap was exceeded or the call cancelled.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    fn display(&mut self) -> Option<&str> {
        let (walked, auth) = (self.walked, self.auth);
        self.display
            .get_or_insert_with(|| auth.authorize(walked))
            .as_deref()
    }

    /// `rg` in convert mode stops at the first line reported after binary data was seen.
    fn converted_binary_seen(&self) -> bool {
        self.binary != Binary::Quit && self.binary_offset.is_some()
    }

    /// The slice strategy checks each sunk line for a NUL byte before reporting it.
    fn detect_in_line(&mut self, bytes: &[u8], absolute_offset: u64) {
        if let Binary::Slice { .. } = self.binary {
            if self.binary_offset.is_none() {
                if let Some(i) = memchr::memchr(0, bytes) {
                    self.binary_offset = Some(absolute_offset + i as u64);
                }
            }
        }
    }

    /// Offers one record; `false` stops the search.
    fn offer(&mut self, sep: char, line_number: u64, bytes: &[u8]) -> bool {
        if self.cancel.is_cancelled() {
            self.stopped = true;
            return false;
        }
        let clip = self.clip;
        let Some(display) = self.display() else {
            // Every record of a file the model may not see is dropped: stop reading it.
            return false;
        };
        let text = clip
            .and_then(|c| c.render(display, line_number, sep == ':', bytes))
            .unwrap_or_else(|| render_line(bytes));
        let line = format!("{display}{sep}{line_number}{sep}{text}");
        if !self.out.push(line) {
            self.stopped = true;
            return false;
        }
        true
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.detect_in_line(mat.bytes(), mat.absolute_byte_offset());
        self.match_count += 1;
        if self.converted_binary_seen() {
            return Ok(false);
        }
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            if !self.offer(':', first + i as u64, line) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.detect_in_line(ctx.bytes(), ctx.absolute_byte_offset());
        if self.converted_binary_seen() {
            return Ok(false);
        }
        Ok(self.offer('-', ctx.line_number().unwrap_or(0), ctx.bytes()))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        // `rg` prints `--`; the reference drops it.
        Ok(true)
    }

    fn binary_data(
        &mut self,
        _searcher: &Searcher,
        binary_byte_offset: u64,
    ) -> Result<bool, io::Error> {
        self.binary_offset = Some(binary_byte_offset);
        Ok(true)
    }

    fn finish(&mut self, _searcher: &Searcher, _finish: &SinkFinish) -> Result<(), io::Error> {
        let Some(offset) = self.binary_offset else {
            return Ok(());
        };
        if self.match_count == 0 && !self.stopped && self.display().is_some() {
            self.out.binary_skipped += 1;
        }
        if self.stopped || self.match_count == 0 {
            return Ok(());
        }
        let notice = match self.binary {
            Binary::Quit => "WARNING: stopped searching binary file after match",
            Binary::Convert | Binary::Slice { .. } => "binary file matches",
        };
        let Some(display) = self.display() else {
            return Ok(());
        };
        let line = format!("{display}: {notice} (found \"\\0\" byte around offset {offset})");
        if !self.out.push(line) {
            self.stopped = true;
        }
        Ok(())
    }
}
