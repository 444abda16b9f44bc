//! `read_file` and `file_info` on bytes handed in: text windows, media sniffing and hex previews
//! through [`crate::fs::read`], so every text exists once.

use super::lookalike::with_lookalike;
use super::*;
use crate::cancel::CancelFlag;
use crate::fs::read::encoding;
use crate::fs::read::hash::{bytes_hash, is_binary, BINARY_SAMPLE};
use crate::fs::read::{self, hex_preview, sniff_media_type, ReadSpec, NOTICE_CHARS};
use crate::fs::text::names::shown_path;

/// A `read_file` result: the text, and the media type when the bytes go back as a file.
#[derive(Debug)]
pub struct Read {
    /// Text and event data.
    pub outcome: Outcome,
    /// `image/png` ... `application/pdf`: the caller appends the bytes as `BinaryContent`.
    pub media_type: Option<&'static str>,
}

impl Remote {
    /// The `limit` a read uses: capped at `max_read_lines`.
    ///
    /// Errors: `offset must be non-negative.`, `limit must be at least 1.`.
    pub fn read_limit(&self, offset: i64, limit: Option<i64>) -> Result<(usize, usize)> {
        if offset < 0 {
            return Err(retry(
                ErrorKind::InvalidArgument,
                "offset must be non-negative.".into(),
            ));
        }
        let max = self.limits.max_read_lines;
        let limit = match limit {
            Some(l) if l < 1 => {
                return Err(retry(
                    ErrorKind::InvalidArgument,
                    "limit must be at least 1.".into(),
                ))
            }
            Some(l) => (l as u64).min(max as u64) as usize,
            None => max,
        };
        Ok((offset as usize, limit))
    }

    fn path_label(&self, path: &str) -> String {
        read::label_of(path, self.limits.max_read_chars)
    }

    fn body_budget(&self, head: &str) -> Option<usize> {
        self.limits
            .max_read_chars
            .map(|m| m.saturating_sub(head.chars().count() + NOTICE_CHARS))
    }

    /// `read_file` of the bytes the backend returned for `resolved`.
    ///
    /// `size`: what `stat` reported (`None` with no `data`: nothing readable is there, the
    /// result is `Path not found: p`, followed by the look-alike sentence when `lookalike`
    /// names one, [`Remote::lookalike`]). `guessed_type`: `mimetypes.guess_type(path)[0]`.
    /// `column`: with `max_line_chars`, the 0-based char each line starts from; long lines
    /// are clipped as on a host directory ([`crate::fs::read::clip`]).
    /// Errors: `Offset K exceeds file length (N lines).`. Source: `_read_file`, `_read_binary`.
    #[allow(clippy::too_many_arguments)]
    pub fn read_file(
        &self,
        path: &str,
        resolved: &str,
        size: Option<u64>,
        data: Option<&[u8]>,
        offset: usize,
        limit: usize,
        guessed_type: Option<&str>,
        column: usize,
        lookalike: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Read> {
        let event = self.event_path(resolved);
        let plain = |text: String, emit: bool| Read {
            outcome: found(text, event.clone(), emit),
            media_type: None,
        };
        let too_large = |n: u64| {
            format!(
                "[{} | {n} bytes]\nToo large to read: the limit is {MAX_READ_FILE_BYTES} bytes. Find the lines you need with a search tool, or read a byte range with a shell tool if you have one.\n",
                self.path_label(path)
            )
        };
        let data = match (data, size) {
            (Some(d), _) if d.len() as u64 > MAX_READ_FILE_BYTES => {
                return Ok(plain(too_large(d.len() as u64), false))
            }
            (Some(d), _) => d,
            (None, Some(n)) if n > MAX_READ_FILE_BYTES => return Ok(plain(too_large(n), false)),
            (None, _) => {
                let message = format!("Path not found: {}", shown_path(path));
                return Ok(plain(with_lookalike(message, lookalike), false));
            }
        };
        let hash = bytes_hash(data);
        let media_type = sniff_media_type(data);
        let utf16 = encoding::sniff_utf16(&data[..data.len().min(BINARY_SAMPLE)]);
        if utf16.is_none() && (media_type.is_some() || is_binary(data)) {
            let suffix = if self.limits.content_hashes {
                format!(" | hash:{hash}")
            } else {
                String::new()
            };
            let shown = media_type
                .or(guessed_type)
                .unwrap_or("application/octet-stream");
            let head = format!(
                "[{} | {shown} | {} bytes{suffix}]\n",
                self.path_label(path),
                data.len()
            );
            let (text, media) = match media_type {
                None => {
                    let intro = "Binary file; the first bytes in hex:\n";
                    let budget = self.body_budget(&format!("{head}{intro}"));
                    (
                        format!(
                            "{head}{intro}{}",
                            hex_preview(data, data.len() as u64, budget)
                        ),
                        None,
                    )
                }
                Some(m) if data.len() <= MAX_MEDIA_BYTES => (head, Some(m)),
                Some(_) => (
                    format!("{head}Too large to view: the limit is {MAX_MEDIA_BYTES} bytes.\n"),
                    None,
                ),
            };
            let mut outcome = found(text, event, true);
            outcome.content_hash = Some(hash);
            return Ok(Read {
                outcome,
                media_type: media,
            });
        }
        let spec = ReadSpec {
            offset,
            limit,
            max_read_chars: self.limits.max_read_chars,
            content_hashes: self.limits.content_hashes,
            contract: crate::fs::contract::Contract::Workspace,
        };
        let mut window = spec.window(path);
        let clip = self.disclosure.max_line_chars;
        if clip.is_some() {
            // Long lines are kept whole, then clipped to what the result shows.
            window.cap = None;
            window.rendered = false;
        }
        let mut reader = data;
        let mut scan = read::scan(&mut reader, window, cancel)
            .map_err(|e| Error::new(ErrorKind::Io(e.kind()), e.to_string()))??;
        scan.hash = hash.clone();
        if let Some(kind) = utf16 {
            scan = encoding::scan_utf16(data, kind, scan, window, cancel)?;
        }
        if let Some(max) = clip {
            crate::fs::read::clip::clip_window(&mut scan, path, offset, column, max);
        }
        let text = read::render(path, &scan, &spec)?;
        let mut outcome = found(text, event, true);
        outcome.content_hash = Some(hash);
        Ok(Read {
            outcome,
            media_type: None,
        })
    }

    /// `file_info` from a `stat` (`None`: nothing there) and, for a file up to
    /// [`MAX_READ_FILE_BYTES`], its bytes; `lookalike` as [`Remote::read_file`]'s.
    /// Source: `_file_info`.
    pub fn file_info(
        &self,
        path: &str,
        resolved: &str,
        entry: Option<&Entry>,
        data: Option<&[u8]>,
        lookalike: Option<&str>,
    ) -> Outcome {
        let event = self.event_path(resolved);
        let missing = || {
            let message = format!("Path not found: {}", shown_path(path));
            found(with_lookalike(message, lookalike), event.clone(), false)
        };
        let Some(entry) = entry else {
            return missing();
        };
        let kind = if entry.is_dir { "directory" } else { "file" };
        let mut parts = vec![
            format!("path: {}", shown_path(path)),
            format!("type: {kind}"),
        ];
        if let Some(size) = entry.size {
            parts.push(format!("size: {size} bytes"));
        }
        if !entry.is_dir && entry.size.is_some_and(|s| s > MAX_READ_FILE_BYTES) {
            parts.push(format!(
                "contents: not read (over {MAX_READ_FILE_BYTES} bytes)"
            ));
        } else if !entry.is_dir {
            let Some(data) = data else {
                return missing();
            };
            let utf16 = encoding::sniff_utf16(&data[..data.len().min(BINARY_SAMPLE)]);
            let binary = utf16.is_none() && is_binary(data);
            parts.push(format!("binary: {}", if binary { "True" } else { "False" }));
            if !binary {
                let lines = match utf16 {
                    Some(kind) => line_count(
                        encoding::decode_utf16(data, kind, true)
                            .unwrap_or_default()
                            .as_bytes(),
                    ),
                    None => line_count(data),
                };
                parts.push(format!("lines: {lines}"));
                let hash = bytes_hash(data);
                parts.push(format!("hash: {hash}"));
                // The hash shown, for `ReadBeforeWrite` (a text file's `file_info` counts as a read).
                let mut outcome = found(parts.join("\n"), event, false);
                outcome.content_hash = Some(hash);
                return outcome;
            }
        }
        found(parts.join("\n"), event, false)
    }
}

/// Lines split on `\n` only, a final unterminated line counted. Source: `split_lines`.
fn line_count(data: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', data).count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}
