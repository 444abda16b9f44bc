//! How the bytes of a text file are read and written back: UTF-8 (with or without a BOM,
//! with or without bytes that are not UTF-8) and UTF-16 (with a BOM, or recognised by its
//! zero bytes). Reads show such files as text with a note; edits keep every byte they do not
//! change, and write UTF-16 back as UTF-16.
//!
//! The reference decodes every file as UTF-8: `read_file` shows a byte that is not UTF-8 as
//! U+FFFD without saying so, `edit_file` refuses the whole file, and UTF-16 text is "binary".

use std::io::Read;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::read::{self, Scan, WindowSpec};

/// The UTF-8 byte order mark.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Largest UTF-16 file decoded for `read_file` and `file_info` (bytes); a larger one reads
/// as binary, as before. 0.62.0 reads no file over 64 MiB at all.
pub const MAX_UTF16_BYTES: u64 = 64 * 1024 * 1024;

/// A UTF-16 file's byte order and whether it starts with a byte order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf16 {
    /// Little-endian (`FF FE`) rather than big-endian (`FE FF`).
    pub little_endian: bool,
    /// Whether the file starts with the byte order mark.
    pub bom: bool,
}

impl Utf16 {
    /// `UTF-16LE` or `UTF-16BE`.
    pub fn name(&self) -> &'static str {
        if self.little_endian {
            "UTF-16LE"
        } else {
            "UTF-16BE"
        }
    }

    fn unit(&self, pair: &[u8]) -> u16 {
        if self.little_endian {
            u16::from_le_bytes([pair[0], pair[1]])
        } else {
            u16::from_be_bytes([pair[0], pair[1]])
        }
    }

    /// The note `read_file` adds to a file it decoded from UTF-16.
    pub fn read_note(&self) -> String {
        format!(
            "[Decoded from {}{}; edit_file writes it back as {}.]\n",
            self.name(),
            if self.bom { " with a BOM" } else { "" },
            self.name()
        )
    }
}

/// Recognises UTF-16 text from a file's first bytes: a UTF-16 BOM (not followed by two zero
/// bytes, which would be UTF-32), or, without one, an even number of bytes whose every second
/// byte is zero (text in the Latin range) and that decodes to text: no NUL, no control
/// character other than tab, newline, form feed and carriage return, no unpaired surrogate.
pub fn sniff_utf16(head: &[u8]) -> Option<Utf16> {
    match head {
        [0xFF, 0xFE, 0, 0, ..] => return None,
        [0xFF, 0xFE, ..] => {
            return Some(Utf16 {
                little_endian: true,
                bom: true,
            })
        }
        [0xFE, 0xFF, ..] => {
            return Some(Utf16 {
                little_endian: false,
                bom: true,
            })
        }
        _ => {}
    }
    let n = head.len() & !1;
    if n < 4 || memchr::memchr(0, head).is_none() {
        return None;
    }
    let pairs = n / 2;
    let zeros_at = |parity: usize| (parity..n).step_by(2).filter(|&i| head[i] == 0).count();
    let (even, odd) = (zeros_at(0), zeros_at(1));
    let little_endian = if odd * 10 >= pairs * 9 && even == 0 {
        true
    } else if even * 10 >= pairs * 9 && odd == 0 {
        false
    } else {
        return None;
    };
    let kind = Utf16 {
        little_endian,
        bom: false,
    };
    let mut units: Vec<u16> = head[..n].chunks_exact(2).map(|p| kind.unit(p)).collect();
    // A surrogate pair cut by the end of the sample is not an error.
    if units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
        units.pop();
    }
    for decoded in char::decode_utf16(units) {
        match decoded {
            Ok(c) if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r' | '\x0c') => return None,
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    Some(kind)
}

/// Where a UTF-16 file stops being UTF-16: the byte offset of an unpaired surrogate or of an
/// odd final byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf16Error {
    /// Byte offset in the file.
    pub offset: usize,
}

/// Decodes UTF-16 `data` (BOM included when `kind.bom`), the BOM dropped: strictly, or with
/// U+FFFD for each unpaired surrogate and an odd final byte (`lossy`).
pub fn decode_utf16(
    data: &[u8],
    kind: Utf16,
    lossy: bool,
) -> std::result::Result<String, Utf16Error> {
    let start = if kind.bom { 2 } else { 0 };
    let body = &data[start.min(data.len())..];
    let mut out = String::with_capacity(body.len() / 2 * 3);
    let mut offset = start;
    for decoded in char::decode_utf16(body.chunks_exact(2).map(|p| kind.unit(p))) {
        match decoded {
            Ok(c) => {
                out.push(c);
                offset += 2 * c.len_utf16();
            }
            Err(_) if lossy => {
                out.push('\u{FFFD}');
                offset += 2;
            }
            Err(_) => return Err(Utf16Error { offset }),
        }
    }
    if body.len() % 2 == 1 {
        if !lossy {
            return Err(Utf16Error {
                offset: data.len() - 1,
            });
        }
        out.push('\u{FFFD}');
    }
    Ok(out)
}

/// Encodes `text` as UTF-16 in `kind`'s byte order, with its BOM when `kind.bom`.
pub fn encode_utf16(text: &str, kind: Utf16) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2 + 2);
    let mut put = |u: u16| {
        out.extend_from_slice(&if kind.little_endian {
            u.to_le_bytes()
        } else {
            u.to_be_bytes()
        })
    };
    if kind.bom {
        put(0xFEFF);
    }
    for u in text.encode_utf16() {
        put(u);
    }
    out
}

/// The bytes of a file that are not UTF-8, as `read_file` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidUtf8 {
    /// The first byte that is not UTF-8.
    pub byte: u8,
    /// Its 1-based line, counted as `read_file` counts lines.
    pub line: usize,
    /// Undecodable sequences in the file (each shown as one U+FFFD).
    pub count: usize,
}

impl InvalidUtf8 {
    /// The note `read_file` adds to a file that is not valid UTF-8.
    pub fn read_note(&self) -> String {
        let what = if self.count == 1 {
            "1 byte sequence".to_string()
        } else {
            format!("{} byte sequences", self.count)
        };
        format!(
            "[Not valid UTF-8: {what} shown as \u{FFFD}, the first (0x{:02x}) on line {}; \
             edit_file keeps such bytes as they are.]\n",
            self.byte, self.line
        )
    }
}

/// The first byte of `data` that is not UTF-8 and its 1-based line (`\n` lines); `None`
/// when `data` is valid UTF-8.
pub fn first_invalid(data: &[u8]) -> Option<(u8, usize)> {
    let err = std::str::from_utf8(data).err()?;
    let at = err.valid_up_to();
    let line = memchr::memchr_iter(b'\n', &data[..at]).count() + 1;
    Some((data[at], line))
}

/// The note `read_file` appends for how it decoded the file: UTF-16, or bytes that are not
/// UTF-8; empty for plain UTF-8.
pub fn read_note(scan: &Scan) -> String {
    match (scan.decoded_from, scan.invalid_utf8) {
        (Some(kind), _) => kind.read_note(),
        (None, Some(invalid)) => invalid.read_note(),
        (None, None) => String::new(),
    }
}

/// Replaces a scan of UTF-16 bytes with a scan of their decoded text (U+FFFD for what does
/// not decode), keeping the size and content hash of the bytes on disk. `reader` yields the
/// whole file from its start; a file over [`MAX_UTF16_BYTES`] keeps its first scan.
pub fn rescan_utf16(
    reader: &mut impl Read,
    first: Scan,
    kind: Utf16,
    window: WindowSpec,
    cancel: &CancelFlag,
) -> std::io::Result<Result<Scan>> {
    if first.size > MAX_UTF16_BYTES {
        return Ok(Ok(first));
    }
    let mut data = Vec::with_capacity(first.size as usize);
    reader.read_to_end(&mut data)?;
    Ok(scan_utf16(&data, kind, first, window, cancel))
}

/// [`rescan_utf16`] of bytes in memory.
pub fn scan_utf16(
    data: &[u8],
    kind: Utf16,
    first: Scan,
    window: WindowSpec,
    cancel: &CancelFlag,
) -> Result<Scan> {
    let text = decode_utf16(data, kind, true).unwrap_or_default();
    let mut reader = text.as_bytes();
    let mut scan = read::scan(&mut reader, window, cancel)
        .map_err(|e| Error::new(ErrorKind::Io(e.kind()), e.to_string()))??;
    scan.size = first.size;
    scan.hash = first.hash;
    scan.decoded_from = Some(kind);
    scan.invalid_utf8 = None;
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LE: Utf16 = Utf16 {
        little_endian: true,
        bom: true,
    };

    #[test]
    fn sniffs_utf16() {
        assert_eq!(sniff_utf16(b"\xff\xfea\x00"), Some(LE));
        assert_eq!(
            sniff_utf16(b"\xfe\xff\x00a"),
            Some(Utf16 {
                little_endian: false,
                bom: true
            })
        );
        assert_eq!(sniff_utf16(b"\xff\xfe\x00\x00a\x00\x00\x00"), None);
        assert_eq!(
            sniff_utf16(&encode_utf16(
                "hello\r\nworld\n",
                Utf16 { bom: false, ..LE }
            )),
            Some(Utf16 { bom: false, ..LE })
        );
        // Zero bytes that do not decode to text stay binary.
        assert_eq!(sniff_utf16(b"\x01\x00\x02\x00\x03\x00"), None);
        assert_eq!(sniff_utf16(b"a\x00\x00\x00b\x00"), None);
        assert_eq!(sniff_utf16(b"plain text"), None);
    }

    #[test]
    fn utf16_round_trips() {
        let bytes = encode_utf16("h\u{e9}\u{1F642}\n", LE);
        assert_eq!(&bytes[..4], b"\xff\xfeh\x00");
        assert_eq!(
            decode_utf16(&bytes, LE, false).unwrap(),
            "h\u{e9}\u{1F642}\n"
        );
        // An unpaired surrogate at byte 4; an odd final byte.
        let bad = b"\xff\xfea\x00\x00\xd8b\x00";
        assert_eq!(decode_utf16(bad, LE, false), Err(Utf16Error { offset: 4 }));
        assert_eq!(decode_utf16(bad, LE, true).unwrap(), "a\u{FFFD}b");
        assert_eq!(
            decode_utf16(b"\xff\xfea\x00b", LE, false),
            Err(Utf16Error { offset: 4 })
        );
    }

    #[test]
    fn invalid_utf8_is_located() {
        assert_eq!(first_invalid(b"ok\nfine\ncaf\xe9\n"), Some((0xe9, 3)));
        assert_eq!(first_invalid("caf\u{e9}".as_bytes()), None);
    }
}
