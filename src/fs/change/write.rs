//! Changes to the workspace in two steps, so Python can announce them in between:
//! `plan_*` resolves, checks, snapshots and diffs; `commit` re-resolves, opens the target
//! beneath the root descriptor (non-blocking, no symlinks), checks its type and the guard
//! hash under that descriptor, and only then writes.
//!
//! A write or an edit replaces the file atomically (`replace.rs`): the new content is written
//! beside it and renamed over it, keeping its mode and owner, so a process killed at any moment
//! leaves the old content or the new, and a failed write (a full disk) leaves nothing behind.
//! A new file is linked in complete and create-only. A file with other hard links (or one whose
//! owner could not be kept) is written in place, as the reference writes every file, so the links
//! see the change: there the new length is reserved first (`fallocate(FALLOC_FL_KEEP_SIZE)`
//! where supported), the new bytes are written over the old ones from offset 0 and the file is
//! truncated to the new length last; an edit that still fails mid-write puts the old text back.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::change::content::Content;
use crate::fs::change::diff::{event_diff, MAX_DIFF_SOURCE_CHARS};
use crate::fs::change::kernel;
use crate::fs::change::matching;
use crate::fs::change::reap;
use crate::fs::change::replace::{self, Created, Replaced};
use crate::fs::change::shown;
use crate::fs::change::tally;
use crate::fs::change::tiers::Match;
use crate::fs::contract::{Contract, NOT_REGULAR_FILE};
use crate::fs::disclosure::Disclosure;
use crate::fs::read::encoding;
use crate::fs::read::hash::{
    bytes_hash, content_hash, is_binary, text_hash, DiskHasher, BINARY_SAMPLE, CHUNK,
};
use crate::fs::room;
use crate::fs::root::path::{
    fstat, is_dir, is_reg, lstat_at, Beneath, Resolved, READ_FLAGS, STAT_FLAGS,
};
use crate::fs::root::pseudo::on_pseudo_fs;
use crate::fs::text::py_repr;
use crate::fs::{FileSystem, Outcome};

/// Content from this size on is hashed on a second core while it is written.
const PARALLEL_BYTES: usize = 1 << 20;

/// The guard of a write announced against a path with nothing at it. Source: `_ABSENT_HASH`.
pub const ABSENT_HASH: &str = "<absent>";

/// Bytes that can hold `MAX_DIFF_SOURCE_CHARS` chars of UTF-8. Source: `_DIFF_SOURCE_BYTES`.
pub const DIFF_SOURCE_BYTES: usize = 4 * MAX_DIFF_SOURCE_CHARS;

/// What a plan changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `write_file`.
    Write,
    /// `edit_file`.
    Edit,
    /// `create_directory`.
    CreateDirectory,
}

impl Operation {
    /// The event's `operation` value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Operation::Write => "write",
            Operation::Edit => "edit",
            Operation::CreateDirectory => "create_directory",
        }
    }
}

/// The content check a commit makes under its descriptor before truncating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// No check (nothing announced and no `expected_hash`, or an unreadable file).
    None,
    /// The file must still hash to this (`<absent>`: it must still not exist).
    Hash(String),
    /// The file must still hold the plan's `old` bytes (an edit): compared as bytes, their
    /// hash computed only to name a conflict.
    Unchanged,
}

/// A change checked and ready to announce, then commit.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The operation.
    pub operation: Operation,
    /// The path as the model passed it (for messages).
    pub path: String,
    /// The resolved target.
    pub resolved: Resolved,
    /// The unified diff for the announcement.
    pub diff: String,
    /// Whether the diff was cut (or is headers only).
    pub truncated: bool,
    /// Whether the change is announced (commit then re-resolves the path).
    pub announced: bool,
    pub(crate) content: Content,
    /// The bytes to write when they are not `content`'s UTF-8 (an edit of a UTF-16 file or
    /// of one with bytes that are not UTF-8).
    pub(crate) encoded: Option<Vec<u8>>,
    pub(crate) guard: Guard,
    /// The file's bytes before an edit (to put back if the write fails).
    pub(crate) old: Option<Vec<u8>>,
    /// The hash and line count of `content`, when the plan took them: an announced big write
    /// over an existing file, beside the pass over the old file ([`tally::hash_and_lines`]).
    pub(crate) tally: Option<(String, usize)>,
    /// What the result says after its first sentence: the tier notes of `match='tolerant'`
    /// and the changed region of `show_changes` ([`shown`]); empty by default.
    pub(crate) trailer: String,
}

impl Plan {
    /// Event path: resolved, relative to the real root.
    pub fn event_path(&self) -> String {
        self.resolved.event_str()
    }

    /// The content hash the file has once this plan is committed, under `contract` (what
    /// `read_file` then reports, and the result's `[hash:H]`); `None` for a `create_directory`.
    /// A durable commit retried after its first attempt wrote finds the file already holding it.
    pub fn result_hash(&self, contract: Contract) -> Option<String> {
        (self.operation != Operation::CreateDirectory).then(|| written_tally(self, contract).0)
    }

    /// The tool result committing this plan answers (`Wrote N chars (L lines) to p. [hash:H]`,
    /// `Edited p. [hash:H]`, the hash with `content_hashes`); `None` for a `create_directory`.
    pub fn result_text(&self, contract: Contract, content_hashes: bool) -> Option<String> {
        (self.operation != Operation::CreateDirectory)
            .then(|| written_text(self, &self.path, content_hashes, contract).0)
    }

    /// The bytes the commit writes.
    pub fn bytes(&self) -> &[u8] {
        self.encoded.as_deref().unwrap_or(self.content.as_bytes())
    }

    /// Bytes of the buffers the plan owns (its text, when not shared; its encoding; the old bytes).
    fn owned_bytes(&self) -> usize {
        let text = match &self.content {
            Content::Owned(s) => s.len(),
            Content::Shared(..) => 0,
        };
        text + self.encoded.as_ref().map_or(0, Vec::len) + self.old.as_ref().map_or(0, Vec::len)
    }
}

impl Drop for Plan {
    /// A big plan's buffers (an edit's old and new text) are freed off the dropping thread
    /// (Python's, when the plan object goes): see [`reap`].
    fn drop(&mut self) {
        if self.owned_bytes() >= PARALLEL_BYTES {
            let owned = match &mut self.content {
                Content::Owned(s) => std::mem::take(s),
                Content::Shared(..) => String::new(), // a Python str: released where it is
            };
            reap::later((owned, self.encoded.take(), self.old.take()));
        }
    }
}

fn retry(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, message)
}

fn not_regular(path: &str) -> Error {
    retry(
        ErrorKind::NotFound,
        format!("Path {} exists and is not a regular file.", py_repr(path)),
    )
}

pub(crate) fn conflict(path: &str, expected: &str, got: &str) -> Error {
    retry(
        ErrorKind::Conflict,
        format!(
            "Conflict: file {} has changed (expected hash:{expected}, got hash:{got}). Re-read the file and retry.",
            py_repr(path)
        ),
    )
}

/// One `edit_file` replacement: `old` replaced by `new`, at its only match, or at every
/// match with `replace_all` (`FileSystem(replace_all=True)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// The exact text to find; never empty.
    pub old: String,
    /// What replaces it.
    pub new: String,
    /// Replace every (non-overlapping, left to right) occurrence instead of requiring one.
    pub replace_all: bool,
}

impl Replacement {
    /// A replacement of the only match of `old` (the document's `edit_file`).
    pub fn once(old: impl Into<String>, new: impl Into<String>) -> Self {
        Self {
            old: old.into(),
            new: new.into(),
            replace_all: false,
        }
    }
}

/// Applies `replacements` to `text` in order, each matching exactly once (overlapping
/// matches count), or with `replace_all` at least once (every occurrence replaced); see
/// [`matching::apply`] for line endings and the hints a miss carries.
///
/// Errors: `InvalidArgument` (empty old_text), `NoMatch`, `AmbiguousMatch`, with the
/// reference's messages and labels (`old_text`, or `replacement N` in a batch). The
/// reference counts non-overlapping matches (Python's `str.count`), so it edits the first
/// of two overlapping matches; the document says each must match exactly once.
/// Source: `_apply_replacements`, _toolset.py.
pub fn apply_replacements(text: &str, replacements: &[Replacement], path: &str) -> Result<String> {
    Ok(spliced_utf8(matching::apply(
        text.as_bytes(),
        replacements,
        path,
    )?))
}

/// The result of [`matching::apply`] on valid UTF-8, as a `String` without a second pass over
/// a file that may be large.
fn spliced_utf8(bytes: Vec<u8>) -> String {
    debug_assert!(std::str::from_utf8(&bytes).is_ok());
    // SAFETY: `matching::apply` only cuts its input where a match of a UTF-8 needle starts or
    // ends (character boundaries of valid UTF-8), and inserts UTF-8 `new_text`, its line breaks
    // re-spelled with ASCII `\r`/`\n` between characters; the input here is valid UTF-8.
    unsafe { String::from_utf8_unchecked(bytes) }
}

/// The content hash of bytes `contract` defines (what `read_file` and the guard report).
pub(crate) fn disk_hash(data: &[u8], contract: Contract) -> String {
    match contract {
        Contract::Workspace => bytes_hash(data),
        Contract::Document => content_hash(data),
    }
}

/// A leading U+FEFF dropped from each `old_text` (copied from `read_file`'s first line of a
/// file with a BOM) and then from its `new_text`: the BOM stays out of reach of matching.
fn without_bom(replacements: &[Replacement]) -> Vec<Replacement> {
    replacements
        .iter()
        .map(|r| match r.old.strip_prefix('\u{feff}') {
            Some(old) => Replacement {
                old: old.to_string(),
                new: r.new.strip_prefix('\u{feff}').unwrap_or(&r.new).to_string(),
                replace_all: r.replace_all,
            },
            None => r.clone(),
        })
        .collect()
}

/// A file `edit_file` can edit, decoded, and the content hash of its bytes (the guard).
#[derive(Debug)]
pub(crate) enum Source {
    /// Valid UTF-8, the BOM (when `bom`) included in the text.
    Utf8 { text: String, bom: bool },
    /// UTF-8 with bytes that are not UTF-8: edited as bytes, those bytes kept.
    Bytes { raw: Vec<u8>, bom: bool },
    /// UTF-16, decoded (BOM dropped); written back in the same form.
    Utf16 {
        raw: Vec<u8>,
        text: String,
        kind: encoding::Utf16,
    },
}

/// An edit computed in memory: the text before and after (for the diff; U+FFFD shown for
/// bytes that are not UTF-8), the bytes to write when they are not the new text's UTF-8, and
/// the file's bytes before.
#[derive(Debug)]
pub(crate) struct Edited {
    pub old_text: String,
    pub new_text: String,
    pub encoded: Option<Vec<u8>>,
    pub old_raw: Option<Vec<u8>>,
    /// A note per replacement matched past the exact tier ([`matching::apply_matched`]).
    pub notes: Vec<String>,
    /// The byte ranges the replacements wrote, in `encoded` when `changed_in_encoded`, else in
    /// `new_text` (numbered into lines only when a result shows them).
    pub changed: Vec<(usize, usize)>,
    pub changed_in_encoded: bool,
}

impl Edited {
    /// The file's bytes before the edit.
    pub fn into_old(self) -> Vec<u8> {
        self.old_raw.unwrap_or_else(|| self.old_text.into_bytes())
    }
}

impl Source {
    /// Refuses a binary file for `edit_file` by its first bytes (at least the first 8192,
    /// or all of them): a NUL there, unless they read as UTF-16.
    ///
    /// Errors: `p is a binary file; edit_file only edits text files.`
    pub fn sniff(path: &str, raw: &[u8]) -> Result<()> {
        let path = &*crate::fs::text::names::shown_path(path);
        let head = &raw[..raw.len().min(BINARY_SAMPLE)];
        if encoding::sniff_utf16(head).is_none() && is_binary(head) {
            return Err(retry(
                ErrorKind::InvalidArgument,
                format!("{path} is a binary file; edit_file only edits text files."),
            ));
        }
        Ok(())
    }

    /// Decodes a file for `edit_file`: UTF-16 (recognised by [`encoding::sniff_utf16`]) to
    /// text, anything else as UTF-8, whose bytes that are not UTF-8 are kept.
    ///
    /// Errors: `p is a binary file; edit_file only edits text files.` (NUL in the first 8192
    /// bytes, as the reference); UTF-16 that does not decode (an unpaired surrogate, an odd
    /// final byte), naming the byte offset and line.
    pub fn decode(path: &str, raw: Vec<u8>) -> Result<Source> {
        let path = &*crate::fs::text::names::shown_path(path);
        Source::sniff(path, &raw)?;
        let head = &raw[..raw.len().min(BINARY_SAMPLE)];
        if let Some(kind) = encoding::sniff_utf16(head) {
            let text = encoding::decode_utf16(&raw, kind, false).map_err(|e| {
                let before = encoding::decode_utf16(&raw[..e.offset], kind, true);
                let line = before.unwrap_or_default().matches('\n').count() + 1;
                retry(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{path} is {name} text, but byte {} (line {line}) does not decode as {name}, so \
                         edit_file cannot write the file back unchanged. No changes were written. To \
                         replace the whole file, use write_file (it writes UTF-8).",
                        e.offset,
                        name = kind.name(),
                    ),
                )
            })?;
            return Ok(Source::Utf16 { raw, text, kind });
        }
        let bom = raw.starts_with(encoding::UTF8_BOM);
        Ok(match String::from_utf8(raw) {
            Ok(text) => Source::Utf8 { text, bom },
            Err(e) => Source::Bytes {
                raw: e.into_bytes(),
                bom,
            },
        })
    }

    /// The file's content hash under `contract` (what `read_file` reported; the guard).
    /// Equal to [`disk_hash`] of its bytes: valid UTF-8 decodes to itself.
    pub fn hash(&self, contract: Contract) -> String {
        match self {
            Source::Utf8 { text, .. } => text_hash(text),
            Source::Bytes { raw, .. } | Source::Utf16 { raw, .. } => disk_hash(raw, contract),
        }
    }

    /// Applies `replacements` ([`matching::apply_matched`], with `mode`'s tiers; changed lines
    /// numbered under `contract`) and encodes the result as the file was.
    pub fn edit(
        self,
        replacements: &[Replacement],
        path: &str,
        mode: Match,
        contract: Contract,
    ) -> Result<Edited> {
        let bom = matches!(
            self,
            Source::Utf8 { bom: true, .. } | Source::Bytes { bom: true, .. } | Source::Utf16 { .. }
        );
        let stripped;
        let replacements = if bom {
            stripped = without_bom(replacements);
            &stripped[..]
        } else {
            replacements
        };
        let skip = if bom { encoding::UTF8_BOM.len() } else { 0 };
        type Made = (Vec<u8>, Vec<String>, Vec<(usize, usize)>);
        let apply = |text: &[u8], skip: usize| -> Result<Made> {
            let applied =
                matching::apply_matched(&text[skip..], replacements, path, mode, contract)?;
            let mut new = applied.bytes;
            if skip > 0 {
                new.splice(0..0, text[..skip].iter().copied());
            }
            let changed = applied
                .changed
                .iter()
                .map(|&(a, b)| (a + skip, b + skip))
                .collect();
            Ok((new, applied.notes, changed))
        };
        Ok(match self {
            Source::Utf8 { text, .. } => {
                let (new, notes, changed) = apply(text.as_bytes(), skip)?;
                Edited {
                    new_text: spliced_utf8(new),
                    old_text: text,
                    encoded: None,
                    old_raw: None,
                    notes,
                    changed,
                    changed_in_encoded: false,
                }
            }
            Source::Bytes { raw, .. } => {
                let (new, notes, changed) = apply(&raw, skip)?;
                Edited {
                    old_text: String::from_utf8_lossy(&raw).into_owned(),
                    new_text: String::from_utf8_lossy(&new).into_owned(),
                    encoded: Some(new),
                    old_raw: Some(raw),
                    notes,
                    changed,
                    changed_in_encoded: true,
                }
            }
            Source::Utf16 { raw, text, kind } => {
                let (new, notes, changed) = apply(text.as_bytes(), 0)?;
                let new_text = spliced_utf8(new);
                Edited {
                    encoded: Some(encoding::encode_utf16(&new_text, kind)),
                    old_raw: Some(raw),
                    old_text: text,
                    new_text,
                    notes,
                    changed,
                    changed_in_encoded: false,
                }
            }
        })
    }
}

/// `edit_file` on a file's bytes, as the reference orders its checks: decode (binary and
/// undecodable files refused), then `expected_hash`, then the replacements; an edit that would
/// leave the bytes as they are is refused ([`unchanged`]). Returns the
/// edit and the commit's guard: the content hash the file had ([`Guard::Hash`]), or with
/// `lazy`, [`Guard::Unchanged`] (the file is hashed only to check an `expected_hash`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn edit_plan(
    path: &str,
    raw: Vec<u8>,
    replacements: &[Replacement],
    expected_hash: Option<String>,
    contract: Contract,
    lazy: bool,
    mode: Match,
) -> Result<(Edited, Guard)> {
    let source = Source::decode(path, raw)?;
    let current = (expected_hash.is_some() || !lazy).then(|| source.hash(contract));
    if let (Some(expected), Some(current)) = (&expected_hash, &current) {
        if expected != current {
            return Err(conflict(path, expected, current));
        }
    }
    let guard = match current {
        Some(current) if !lazy => Guard::Hash(current),
        _ => Guard::Unchanged,
    };
    let edited = source.edit(replacements, path, mode, contract)?;
    let before = edited
        .old_raw
        .as_deref()
        .unwrap_or(edited.old_text.as_bytes());
    let after = edited
        .encoded
        .as_deref()
        .unwrap_or(edited.new_text.as_bytes());
    if before == after {
        return Err(unchanged(path));
    }
    Ok((edited, guard))
}

/// What an edit's result says after `Edited p.`: its tier notes, one a line, then with
/// `show_changes` the changed region ([`shown::render`]).
pub(crate) fn edit_trailer(
    path: &str,
    edited: &Edited,
    opts: &Disclosure,
    contract: Contract,
) -> String {
    let mut trailer = String::new();
    for note in &edited.notes {
        trailer.push('\n');
        trailer.push_str(note);
    }
    if opts.show_changes > 0 {
        let written = match (&edited.encoded, edited.changed_in_encoded) {
            (Some(encoded), true) => &encoded[..],
            _ => edited.new_text.as_bytes(),
        };
        let changed = shown::changed_lines(written, &edited.changed, contract);
        trailer.push_str(&shown::render(
            path,
            &edited.new_text,
            &changed,
            opts.show_changes,
            contract,
            opts.max_line_chars,
        ));
    }
    trailer
}

/// What a write over an existing file says after its first sentence with `show_changes`: the
/// lines that differ from `old` ([`shown::differing`]) (the whole content when `old` is not known: too big to
/// diff, or not read), shown by [`shown::render`]; empty when it is off or the file is new.
pub(crate) fn write_trailer(
    path: &str,
    old: Option<&str>,
    content: &str,
    opts: &Disclosure,
    contract: Contract,
) -> String {
    if opts.show_changes == 0 {
        return String::new();
    }
    let ranges = match old {
        Some(old) => shown::differing(old, content),
        None => vec![(0, content.len())],
    };
    if ranges.is_empty() {
        return String::new();
    }
    let changed = shown::changed_lines(content.as_bytes(), &ranges, contract);
    shown::render(
        path,
        content,
        &changed,
        opts.show_changes,
        contract,
        opts.max_line_chars,
    )
}

/// The retry of an edit whose result is the file's bytes as they are (a `new_text` equal to
/// what it replaces, once line endings are kept): nothing is written, no change is announced,
/// and the model is not told it edited.
fn unchanged(path: &str) -> Error {
    let path = &*crate::fs::text::names::shown_path(path);
    retry(
        ErrorKind::NoMatch,
        format!(
            "The edit leaves {path} exactly as it is (new_text is what it replaces once the file's \
             line endings and byte order mark are kept). No changes were written."
        ),
    )
}

/// The result of a committed write or edit and the new content's hash:
/// `Wrote N chars (L lines) to p. [hash:H]` or `Edited p. [hash:H]`.
pub(crate) fn written_text(
    plan: &Plan,
    path: &str,
    content_hashes: bool,
    contract: Contract,
) -> (String, String) {
    let (hash, counts) = written_tally(plan, contract);
    (
        written_summary(path, content_hashes, counts, &hash) + &plan.trailer,
        hash,
    )
}

/// The content hash of what a plan writes and, for a write, the chars and lines its result
/// counts (`None` for an edit, whose result has none): hashed and counted in one pass.
fn written_tally(plan: &Plan, contract: Contract) -> (String, Option<(usize, usize)>) {
    let (hash, counts, _) = written_digest(plan, contract);
    (hash, counts)
}

/// [`written_tally`], and the whole SHA-256 (64 hex chars) of the bytes written when the hash
/// is theirs (an edit that keeps UTF-8): a checkpoint's object name, not computed twice.
fn written_digest(
    plan: &Plan,
    contract: Contract,
) -> (String, Option<(usize, usize)>, Option<String>) {
    if plan.operation == Operation::Edit && plan.encoded.is_none() {
        use sha2::{Digest, Sha256};
        let full = crate::checkpoint::store::hex(&Sha256::digest(plan.content.as_bytes()));
        return (full[..12].to_string(), None, Some(full));
    }
    let (hash, counts) = written_tally_of(plan, contract);
    (hash, counts, None)
}

fn written_tally_of(plan: &Plan, contract: Contract) -> (String, Option<(usize, usize)>) {
    if plan.operation == Operation::Edit {
        let hash = match &plan.encoded {
            Some(bytes) => disk_hash(bytes, contract),
            None => text_hash(&plan.content),
        };
        return (hash, None);
    }
    // A write's bytes are its text's UTF-8 (only an edit keeps a file's own encoding).
    debug_assert!(plan.encoded.is_none());
    if let Some((hash, lines)) = &plan.tally {
        return (hash.clone(), Some((plan.content.chars(), *lines)));
    }
    let (hash, lines) = tally::hash_and_lines(&plan.content, contract);
    (hash, Some((plan.content.chars(), lines)))
}

/// [`written_text`]'s text, given the write's [`written_counts`] and the new content's `hash`.
fn written_summary(
    path: &str,
    content_hashes: bool,
    counts: Option<(usize, usize)>,
    hash: &str,
) -> String {
    let path = &*crate::fs::text::names::shown_path(path);
    let suffix = if content_hashes {
        format!(" [hash:{hash}]")
    } else {
        String::new()
    };
    match counts {
        None => format!("Edited {path}.{suffix}"),
        Some((chars, lines)) => format!("Wrote {chars} chars ({lines} lines) to {path}.{suffix}"),
    }
}

/// Working room an edit needs beyond the file's bytes, in multiples of its size: the new
/// bytes, and a copy on the way (line endings unified to match, or the lossy text of bytes
/// that are not UTF-8 for the diff and the result).
const EDIT_ROOM: u64 = 3;

/// Reads a file for `edit_file`, `size` bytes by its `stat`: its head first, so a binary
/// file is refused without reading the rest (as the reference sniffs first), then the whole
/// into a buffer allocated fallibly once the room the edit needs is known to be there.
///
/// Errors: `p is a binary file; ...`, [`room::too_big_to_edit`], `Cancelled`.
fn read_for_edit(
    file: &mut File,
    path: &str,
    size: u64,
    cancel: &CancelFlag,
) -> std::io::Result<Result<Vec<u8>>> {
    let mut raw = Vec::with_capacity(BINARY_SAMPLE);
    Read::by_ref(file)
        .take(BINARY_SAMPLE as u64)
        .read_to_end(&mut raw)?;
    if let Err(e) = Source::sniff(path, &raw) {
        return Ok(Err(e));
    }
    if raw.len() < BINARY_SAMPLE {
        return Ok(Ok(raw));
    }
    // Sized up front: no regrowth (and copy) of a big file's buffer while it is read.
    let whole = usize::try_from(size.saturating_add(1)).unwrap_or(usize::MAX);
    let room = usize::try_from(size.saturating_mul(EDIT_ROOM)).unwrap_or(usize::MAX);
    if !room::grow(&mut raw, whole.saturating_sub(BINARY_SAMPLE)) || !room::available(room) {
        return Ok(Err(room::too_big_to_edit(path, size)));
    }
    match read_all(file, &mut raw, cancel) {
        // The file grew past the room reserved for it, and no more could be had.
        Err(e) if e.kind() == std::io::ErrorKind::OutOfMemory => {
            Ok(Err(room::too_big_to_edit(path, size)))
        }
        Err(e) => Err(e),
        Ok(read) => Ok(read.map(|()| raw)),
    }
}

/// Reads the rest of `file` into `buf` (straight into its spare capacity), 8 MiB at a time
/// between cancellation checks.
fn read_all(
    file: &mut File,
    buf: &mut Vec<u8>,
    cancel: &CancelFlag,
) -> std::io::Result<Result<()>> {
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(Error::cancelled()));
        }
        match Read::by_ref(file).take(8 << 20).read_to_end(buf) {
            Ok(0) => return Ok(Ok(())),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Feeds the rest of `file` to `f`, at most [`CHUNK`] bytes at a time between cancellation
/// checks, until `f` says stop (`false`). Returns whether the end was reached. `expected`: the
/// bytes the caller expects to read; the buffer is sized for them (plus one page), so a small
/// file does not cost a zeroed 1 MiB buffer (glibc serves it from the heap, with a `memset`,
/// once a freed one has raised its mmap threshold).
fn each_chunk(
    file: &mut File,
    expected: usize,
    cancel: &CancelFlag,
    mut f: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<Result<bool>> {
    let mut chunk = vec![0u8; expected.saturating_add(4096).min(CHUNK)];
    loop {
        if cancel.is_cancelled() {
            return Ok(Err(Error::cancelled()));
        }
        let n = match file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(Ok(true));
        }
        if !f(&chunk[..n]) {
            return Ok(Ok(false));
        }
    }
}

/// Whether the rest of `file` is exactly `old`, compared a chunk at a time (no copy of the
/// whole file).
fn holds(file: &mut File, old: &[u8], cancel: &CancelFlag) -> std::io::Result<Result<bool>> {
    let mut at = 0;
    let ended = each_chunk(file, old.len(), cancel, |chunk| {
        let same = old.len() - at >= chunk.len() && *chunk == old[at..at + chunk.len()];
        at += chunk.len();
        same
    })?;
    Ok(ended.map(|ended| ended && at == old.len()))
}

/// Hashes a file from its current position to the end (`_disk_hash(_chunks(...))`),
/// keeping the first `keep` bytes (and one more, to tell whether there were more).
fn hash_keep(
    file: &mut File,
    keep: usize,
    contract: Contract,
    cancel: &CancelFlag,
) -> std::io::Result<Result<(String, Vec<u8>)>> {
    let mut h = DiskHasher::for_contract(contract);
    let mut head = Vec::new();
    let expected = file.metadata().map_or(CHUNK, |m| m.len() as usize);
    let ended = each_chunk(file, expected, cancel, |chunk| {
        if head.len() <= keep {
            let take = (keep + 1 - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
        }
        h.update(chunk);
        true
    })?;
    Ok(ended.map(|_| (h.finish(), head)))
}

/// `fallocate` with `FALLOC_FL_KEEP_SIZE`; `Ok` when unsupported.
fn reserve(fd: &OwnedFd, len: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: fd is a valid open descriptor.
        let rc = unsafe {
            libc::fallocate(
                fd.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                0,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => Err(err),
                _ => Ok(()),
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (fd, len);
    Ok(())
}

/// Most bytes one `pwrite` call passes (progress stays visible in `/proc/<pid>/io`).
const WRITE_CHUNK: usize = 4 << 20;

/// Writes all of `data` at offset 0, in chunks of at most [`WRITE_CHUNK`] bytes.
pub(crate) fn pwrite_all(fd: &OwnedFd, mut data: &[u8]) -> std::io::Result<()> {
    let mut offset: libc::off_t = 0;
    while !data.is_empty() {
        let len = data.len().min(WRITE_CHUNK);
        // SAFETY: data points to at least len readable bytes.
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), data.as_ptr().cast(), len, offset) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        data = &data[n as usize..];
        offset += n as libc::off_t;
    }
    Ok(())
}

fn set_len(fd: &OwnedFd, len: usize) -> std::io::Result<()> {
    // SAFETY: fd is a valid open descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes the file a failed write created (a full disk, say), so no empty or partial new
/// file is left: only while `rel` still names the file `fd` holds. Best effort.
fn remove_created(beneath: &Beneath, rel: &Path, fd: &OwnedFd) {
    let (Some(name), Ok(ours)) = (rel.file_name(), fstat(fd.as_raw_fd())) else {
        return;
    };
    let parent = rel.parent().unwrap_or(Path::new(""));
    let Ok(dir) = beneath.open(parent, libc::O_RDONLY | libc::O_DIRECTORY, 0) else {
        return;
    };
    let Some(st) = lstat_at(dir.as_raw_fd(), name) else {
        return;
    };
    if (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino) {
        let _ = nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
}

/// Replaces the file's content in place; see the module doc for the failure handling.
fn write_in_place(fd: &OwnedFd, content: &[u8], rollback: Option<&[u8]>) -> std::io::Result<()> {
    reserve(fd, content.len())?;
    let result = pwrite_all(fd, content).and_then(|_| set_len(fd, content.len()));
    if let (Err(_), Some(old)) = (&result, rollback) {
        let _ = pwrite_all(fd, old).and_then(|_| set_len(fd, old.len()));
    }
    result
}

impl FileSystem {
    fn io_error(&self, err: &std::io::Error, rel: &Path) -> Error {
        self.root.os_error(err, Some(rel))
    }

    /// A failed in-place write: the kernel's refusal of a value ([`kernel::refused`]) is a
    /// retry; a permission or full-disk error is the usual OS error.
    fn kernel_error(&self, err: &std::io::Error, path: &str, rel: &Path) -> Error {
        kernel::refused(err, path).unwrap_or_else(|| self.io_error(err, rel))
    }

    /// `stat` of a resolved relative path beneath the root: `None` when it does not exist
    /// (ENOENT, ENOTDIR), as `Path.exists()` reports.
    fn stat_beneath(
        &self,
        beneath: Option<&Beneath>,
        rel: &Path,
        path: &str,
    ) -> Result<Option<libc::stat>> {
        let Some(beneath) = beneath else {
            return Ok(None);
        };
        match beneath.open(rel, STAT_FLAGS, 0) {
            Ok(fd) => fstat(fd.as_raw_fd())
                .map(Some)
                .map_err(|e| self.io_error(&e, rel)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                Ok(None)
            }
            Err(e) => Err(self.root.open_error(&e, path, rel)),
        }
    }

    /// Plans a `write_file`: checks access (protected, denied, allowed), the target type and
    /// the parent; with `announce`, snapshots the current content for the diff and the guard
    /// (rejecting a stale `expected_hash` first).
    ///
    /// Errors: access errors, `Path 'p' exists and is not a regular file.`, `Parent directory
    /// 'd' does not exist. Use create_directory first.` (workspace contract: `... Create the
    /// parent directory first.`), `Path 'p' has a parent that is not a directory.`, the
    /// conflict message, OS errors; on a workspace a FIFO, socket or device is
    /// [`NOT_REGULAR_FILE`].
    /// Source: `_write_file`, `_announced_state`, _toolset.py.
    pub fn plan_write(
        &self,
        path: &str,
        content: Content,
        expected_hash: Option<String>,
        announce: bool,
        cancel: &CancelFlag,
    ) -> Result<Plan> {
        let resolved = self.safe_resolve(path, true, true)?;
        let beneath = self.root.open_root_if_exists()?;
        let st = self.stat_beneath(beneath.as_ref(), &resolved.rel, path)?;
        let workspace = self.limits.contract.is_workspace();
        if let Some(st) = &st {
            if workspace && !is_reg(st.st_mode) && !is_dir(st.st_mode) {
                return Err(retry(
                    ErrorKind::InvalidArgument,
                    NOT_REGULAR_FILE.to_string(),
                ));
            }
            if !is_reg(st.st_mode) {
                return Err(not_regular(path));
            }
        }
        let parent_rel = resolved.rel.parent().unwrap_or(Path::new("")).to_path_buf();
        match self.stat_beneath(beneath.as_ref(), &parent_rel, path)? {
            None => {
                let advice = if workspace {
                    "Create the parent directory first."
                } else {
                    "Use create_directory first."
                };
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Parent directory '{}' does not exist. {advice}",
                        crate::fs::root::path::rel_display(&parent_rel)
                    ),
                ));
            }
            Some(p) if !is_dir(p.st_mode) => {
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Path {} has a parent that is not a directory.",
                        py_repr(path)
                    ),
                ))
            }
            Some(_) => {}
        }
        if st.is_none() {
            self.refuse_lookalike(&resolved, path)?;
        }
        let mut guard = match &expected_hash {
            Some(h) => Guard::Hash(h.clone()),
            None => Guard::None,
        };
        let (mut diff, mut truncated, mut tally) = (String::new(), false, None);
        let mut trailer = String::new();
        if announce {
            let state = || {
                self.announced_state(
                    beneath.as_ref(),
                    &resolved,
                    path,
                    st.is_some(),
                    expected_hash.as_deref(),
                    cancel,
                )
            };
            let old_size = st.as_ref().map_or(0, |st| st.st_size as usize);
            let (old, g) = if content.len() >= PARALLEL_BYTES && old_size >= content.len() {
                // The new content is hashed and counted on a second core while the old file
                // (as big or bigger) is read and hashed: the commit then only writes and checks
                // the guard, two passes on two cores instead of three.
                let (text, contract) = (&content, self.limits.contract);
                std::thread::scope(|s| {
                    let new = s.spawn(move || tally::hash_and_lines(text, contract));
                    let state = state();
                    tally = Some(new.join().expect("hashing does not panic"));
                    state
                })?
            } else {
                state()?
            };
            guard = g;
            (diff, truncated) = event_diff(
                old.as_deref(),
                &content,
                &resolved.event_str(),
                self.limits.big_diffs,
            );
            if st.is_some() {
                trailer = write_trailer(
                    path,
                    old.as_deref(),
                    &content,
                    &self.disclosure,
                    self.limits.contract,
                );
            }
        } else if st.is_some() {
            trailer = write_trailer(path, None, &content, &self.disclosure, self.limits.contract);
        }
        Ok(Plan {
            operation: Operation::Write,
            path: path.to_string(),
            resolved,
            diff,
            truncated,
            announced: announce,
            content,
            encoded: None,
            guard,
            old: None,
            tally,
            trailer,
        })
    }

    fn announced_state(
        &self,
        beneath: Option<&Beneath>,
        resolved: &Resolved,
        path: &str,
        exists: bool,
        expected_hash: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<(Option<String>, Guard)> {
        let Some(beneath) = beneath.filter(|_| exists) else {
            return Ok((Some(String::new()), Guard::Hash(ABSENT_HASH.to_string())));
        };
        let read = beneath
            .open(&resolved.rel, READ_FLAGS, 0)
            .and_then(|fd| {
                let st = fstat(fd.as_raw_fd())?;
                if !is_reg(st.st_mode) {
                    return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
                }
                Ok(File::from(fd))
            })
            .and_then(|mut f| {
                hash_keep(
                    &mut f,
                    self.limits.diff_source_bytes(),
                    self.limits.contract,
                    cancel,
                )
            });
        let (current, head) = match read {
            Ok(r) => r?,
            Err(e) => {
                if expected_hash.is_some() {
                    return Err(self.root.open_error(&e, path, &resolved.rel));
                }
                return Ok((None, Guard::None));
            }
        };
        if let Some(expected) = expected_hash {
            if current != expected {
                return Err(conflict(path, expected, &current));
            }
        }
        let old = (head.len() <= self.limits.diff_source_bytes())
            .then(|| String::from_utf8_lossy(&head).into_owned());
        Ok((old, Guard::Hash(current)))
    }

    /// Plans an `edit_file`: reads the file (strict UTF-8, text only), checks
    /// `expected_hash`, applies the replacements in memory and diffs.
    ///
    /// Errors: access errors, `File not found: p`, `p is a binary file; edit_file only edits
    /// text files.`, the UTF-8 decode error, the conflict message, replacement errors.
    /// Source: `_edit_file`, `_apply_replacements`, _toolset.py.
    pub fn plan_edit(
        &self,
        path: &str,
        replacements: &[Replacement],
        expected_hash: Option<String>,
        cancel: &CancelFlag,
    ) -> Result<Plan> {
        let resolved = self.safe_resolve(path, true, true)?;
        let mut file = self.open_regular(
            &resolved,
            path,
            || {
                self.with_lookalike(
                    format!(
                        "File not found: {}",
                        crate::fs::text::names::shown_path(path)
                    ),
                    &resolved,
                    path,
                )
            },
            true, // a directory is named one, not `File not found` (issue 19)
        )?;
        let size = file.metadata().map_or(0, |m| m.len());
        let raw = read_for_edit(&mut file, path, size, cancel)
            .map_err(|e| self.io_error(&e, &resolved.rel))??;
        let (mut edited, guard) = edit_plan(
            path,
            raw,
            replacements,
            expected_hash,
            self.limits.contract,
            true,
            self.disclosure.matching,
        )?;
        let trailer = edit_trailer(path, &edited, &self.disclosure, self.limits.contract);
        let (diff, truncated) = event_diff(
            Some(&edited.old_text),
            &edited.new_text,
            &resolved.event_str(),
            self.limits.big_diffs,
        );
        let content = std::mem::take(&mut edited.new_text).into();
        let encoded = edited.encoded.take();
        Ok(Plan {
            operation: Operation::Edit,
            path: path.to_string(),
            resolved,
            diff,
            truncated,
            announced: true,
            content,
            encoded,
            guard,
            old: Some(edited.into_old()),
            tally: None,
            trailer,
        })
    }

    /// Plans a `create_directory`; `None` when the directory already exists.
    ///
    /// Errors: access errors, `Path 'p' exists and is not a directory.`, `Path 'p' has a
    /// parent that is not a directory.`. Source: `_create_directory`, _toolset.py.
    pub fn plan_create_directory(&self, path: &str) -> Result<Option<Plan>> {
        let resolved = self.safe_resolve(path, true, true)?;
        let beneath = self.root.open_root_if_exists()?;
        if let Some(st) = self.stat_beneath(beneath.as_ref(), &resolved.rel, path)? {
            if is_dir(st.st_mode) {
                return Ok(None);
            }
            return Err(retry(
                ErrorKind::NotFound,
                format!("Path {} exists and is not a directory.", py_repr(path)),
            ));
        }
        // The nearest existing ancestor must be a directory.
        let mut ancestor = resolved.rel.parent().map(Path::to_path_buf);
        while let Some(a) = ancestor {
            if let Some(st) = self.stat_beneath(beneath.as_ref(), &a, path)? {
                if !is_dir(st.st_mode) {
                    return Err(retry(
                        ErrorKind::NotFound,
                        format!(
                            "Path {} has a parent that is not a directory.",
                            py_repr(path)
                        ),
                    ));
                }
                break;
            }
            ancestor = a.parent().map(Path::to_path_buf);
        }
        Ok(Some(Plan {
            operation: Operation::CreateDirectory,
            path: path.to_string(),
            resolved,
            diff: String::new(),
            truncated: false,
            announced: true,
            content: Content::default(),
            encoded: None,
            guard: Guard::None,
            old: None,
            tally: None,
            trailer: String::new(),
        }))
    }

    /// Applies a plan: re-resolves the path (a path now naming something else is a
    /// retryable `Path 'p' was replaced while the change was announced. Retry.`), then
    /// writes beneath the root under the descriptor guard, or creates the directory.
    ///
    /// Results: `Wrote N chars (L lines) to p. [hash:H]`, `Edited p. [hash:H]`,
    /// `Created directory: p`. Source: `_request`, `_open_for_write`, `_write_content`.
    pub fn commit(&self, plan: &Plan, cancel: &CancelFlag) -> Result<Outcome> {
        self.commit_hashed(plan, cancel).map(|(outcome, _)| outcome)
    }

    /// [`FileSystem::commit`], and the SHA-256 (64 hex chars) of the bytes written when the
    /// commit hashed them whole (an edit that keeps UTF-8; else `None`).
    pub fn commit_hashed(
        &self,
        plan: &Plan,
        cancel: &CancelFlag,
    ) -> Result<(Outcome, Option<String>)> {
        self.commit_hashed_in(plan, cancel, None)
    }

    /// [`FileSystem::commit_hashed`] beneath `root`, a descriptor of this file system's root
    /// the caller holds already (a checkpoint's store of the same root), instead of opening
    /// one; `None`: opened here.
    pub fn commit_hashed_in(
        &self,
        plan: &Plan,
        cancel: &CancelFlag,
        root: Option<&Beneath>,
    ) -> Result<(Outcome, Option<String>)> {
        let path = plan.path.as_str();
        if plan.announced {
            let again = self.safe_resolve(path, true, true)?;
            if again != plan.resolved {
                return Err(retry(
                    ErrorKind::Conflict,
                    format!(
                        "Path {} was replaced while the change was announced. Retry.",
                        py_repr(path)
                    ),
                ));
            }
        }
        cancel.check()?;
        let rel = &plan.resolved.rel;
        if plan.operation == Operation::CreateDirectory {
            let text = format!(
                "Created directory: {}",
                crate::fs::text::names::shown_path(path)
            );
            let (beneath, root_created) = self.root.create_root(path)?;
            return match beneath.mkdir_all(rel).map(|made| made || root_created) {
                Ok(made) => Ok((
                    Outcome {
                        text,
                        path: plan.event_path(),
                        emit: made,
                        ..Default::default()
                    },
                    None,
                )),
                Err(e) => Err(match e.raw_os_error() {
                    Some(libc::EEXIST) => retry(
                        ErrorKind::NotFound,
                        format!("Path {} exists and is not a directory.", py_repr(path)),
                    ),
                    Some(libc::ENOTDIR) | Some(libc::ELOOP) | Some(libc::EXDEV) => retry(
                        ErrorKind::NotFound,
                        format!(
                            "Path {} has a parent that is not a directory.",
                            py_repr(path)
                        ),
                    ),
                    _ => self.io_error(&e, rel),
                }),
            };
        }
        let opened;
        let beneath = match root {
            Some(b) => b,
            None => {
                opened = self.root.open_root()?;
                &opened
            }
        };
        let contract = self.limits.contract;
        let (hash, counts, digest) = if plan.bytes().len() < PARALLEL_BYTES || plan.tally.is_some()
        {
            self.write_content(beneath, plan, cancel)?;
            written_digest(plan, contract)
        } else if plan.operation == Operation::Write {
            // A big content is hashed on a second core while it is written; both count it.
            let write = || self.write_content(beneath, plan, cancel);
            let (written, hash, lines) = tally::beside(&plan.content, contract, write);
            written?;
            (hash, Some((plan.content.chars(), lines)), None)
        } else {
            // A big edit's content is hashed on a second core while it is written.
            std::thread::scope(|s| {
                let tally = s.spawn(|| written_digest(plan, contract));
                let written = self.write_content(beneath, plan, cancel);
                let tally = tally.join().expect("hashing does not panic");
                written.map(|()| tally)
            })?
        };
        let text = written_summary(path, self.limits.content_hashes, counts, &hash) + &plan.trailer;
        let outcome = Outcome {
            text,
            path: plan.event_path(),
            content_hash: Some(hash),
            emit: true,
            ..Default::default()
        };
        Ok((outcome, digest))
    }

    /// Writes a plan's content: a new file is created complete and create-only, an existing
    /// one is checked against the guard, then replaced atomically, or written in place where
    /// it has other hard links or cannot be replaced keeping its owner (`replace.rs`).
    fn write_content(&self, beneath: &Beneath, plan: &Plan, cancel: &CancelFlag) -> Result<()> {
        let (path, rel) = (plan.path.as_str(), &plan.resolved.rel);
        let content = plan.bytes();
        let read_back = plan.guard != Guard::None;
        let create = plan.operation == Operation::Write;
        for _ in 0..3 {
            let fd = match self.open_for_write(beneath, rel, path, read_back, false) {
                Ok((fd, _)) => fd,
                Err(e) if create && e.errno == Some(libc::ENOENT) => {
                    let (dir, name) = replace::parent_of(beneath, rel)
                        .map_err(|e| self.root.open_error(&e, path, rel))?;
                    match replace::create(&dir, name, content)
                        .map_err(|e| self.io_error(&e, rel))?
                    {
                        Created::Done => return Ok(()),
                        Created::Appeared => continue,
                        Created::InPlace => {}
                    }
                    let (fd, created) = self.open_for_write(beneath, rel, path, false, true)?;
                    if !created {
                        continue; // appeared: checked as an existing file
                    }
                    if let Err(e) = write_in_place(&fd, content, None) {
                        remove_created(beneath, rel, &fd);
                        return Err(self.io_error(&e, rel));
                    }
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let st = fstat(fd.as_raw_fd()).map_err(|e| self.io_error(&e, rel))?;
            if !is_reg(st.st_mode) {
                return Err(not_regular(path));
            }
            // The guard: the file must still hash to what the plan saw (hashed while the new
            // content is written beside it, when both are big: the check stays before the rename).
            let check = || -> Result<()> {
                if plan.guard == Guard::None {
                    return Ok(());
                }
                let contract = self.limits.contract;
                let io = |e: std::io::Error| self.io_error(&e, rel);
                let mut file = File::from(fd.try_clone().map_err(io)?);
                file.seek(SeekFrom::Start(0)).map_err(io)?;
                let expected = match (&plan.guard, &plan.old) {
                    (_, Some(old)) => {
                        // An edit holds the bytes its guard stands for: comparing them is the
                        // check, without hashing the file (the hashes only name a conflict).
                        if holds(&mut file, old, cancel).map_err(io)?? {
                            return Ok(());
                        }
                        file.seek(SeekFrom::Start(0)).map_err(io)?;
                        match &plan.guard {
                            Guard::Hash(expected) => expected.clone(),
                            _ => disk_hash(old, contract),
                        }
                    }
                    (Guard::Hash(expected), None) => expected.clone(),
                    _ => return Ok(()),
                };
                let (current, _) = hash_keep(&mut file, 0, contract, cancel).map_err(io)??;
                if current != expected {
                    return Err(conflict(path, &expected, &current));
                }
                Ok(())
            };
            if on_pseudo_fs(&fd) {
                // A kernel pseudo-file (procfs, sysfs ...): written in place with `write(2)`,
                // as the references do; it cannot be replaced, reserved or `pwrite`n.
                match check() {
                    Err(e) if e.errno == Some(libc::ESPIPE) => {}
                    other => other?,
                }
                return kernel::write_sequential(&fd, content)
                    .map_err(|e| self.kernel_error(&e, path, rel));
            }
            let overlap = st.st_nlink <= 1
                && content.len().min(st.st_size as usize) >= PARALLEL_BYTES
                && plan.guard != Guard::None;
            if !overlap {
                check()?;
            }
            if st.st_nlink <= 1 {
                let (dir, name) = replace::parent_of(beneath, rel)
                    .map_err(|e| self.root.open_error(&e, path, rel))?;
                let replaced = if overlap {
                    std::thread::scope(|s| {
                        let checked = s.spawn(check);
                        let mut verdict = None;
                        let replaced = replace::replace(&dir, name, &st, content, || {
                            let result = checked.join().expect("the guard check does not panic");
                            let ok = result.is_ok();
                            verdict = Some(result);
                            ok
                        });
                        match verdict {
                            Some(Err(e)) => Err(e),
                            _ => replaced.map_err(|e| self.io_error(&e, rel)),
                        }
                    })?
                } else {
                    replace::replace(&dir, name, &st, content, || true)
                        .map_err(|e| self.io_error(&e, rel))?
                };
                if replaced == Replaced::InPlace && overlap {
                    check()?; // not checked yet when the temporary file could not be made
                }
                match replaced {
                    Replaced::Done => {
                        // The old file's last descriptor: closing it frees a big file's pages
                        // and blocks, off this path.
                        if st.st_size as usize >= PARALLEL_BYTES {
                            reap::later(fd);
                        }
                        return Ok(());
                    }
                    Replaced::Refused => return check(), // (the failed check returned above)
                    Replaced::Swapped => {
                        return Err(retry(
                            ErrorKind::Conflict,
                            format!(
                                "Path {} was replaced while it was written. Retry.",
                                py_repr(path)
                            ),
                        ))
                    }
                    Replaced::InPlace => {}
                }
            }
            // Other hard links must see the change: in place, the old text put back on failure.
            return match write_in_place(&fd, content, plan.old.as_deref()) {
                // Not writable at an offset (a FUSE or device-backed file): from its start.
                Err(e) if e.raw_os_error() == Some(libc::ESPIPE) => {
                    kernel::write_sequential(&fd, content)
                        .map_err(|e| self.kernel_error(&e, path, rel))
                }
                written => written.map_err(|e| self.io_error(&e, rel)),
            };
        }
        Err(retry(
            ErrorKind::Conflict,
            format!(
                "Path {} changed repeatedly while opening. Retry the write.",
                py_repr(path)
            ),
        ))
    }

    /// `_open_for_write` beneath the root: exclusive create first (retried 3 times), else
    /// an open without truncation; non-blocking and symlink-refusing.
    fn open_for_write(
        &self,
        beneath: &Beneath,
        rel: &Path,
        path: &str,
        read_back: bool,
        create: bool,
    ) -> Result<(OwnedFd, bool)> {
        let access = if read_back {
            libc::O_RDWR
        } else {
            libc::O_WRONLY
        };
        let flags = access | libc::O_NONBLOCK | libc::O_NOFOLLOW;
        let map = |e: std::io::Error| -> Error {
            match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::EXDEV) => retry(
                    ErrorKind::Conflict,
                    format!("Path {} encountered a symlink loop or changed to a symlink before opening.", py_repr(path)),
                ),
                Some(libc::EISDIR) | Some(libc::ENODEV) | Some(libc::ENXIO) => not_regular(path),
                _ => self.io_error(&e, rel),
            }
        };
        if !create {
            return beneath
                .open(rel, flags, 0)
                .map(|fd| (fd, false))
                .map_err(map);
        }
        for _ in 0..3 {
            match beneath.open(rel, flags | libc::O_CREAT | libc::O_EXCL, 0o666) {
                Ok(fd) => return Ok((fd, true)),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    match beneath.open(rel, flags, 0) {
                        Ok(fd) => return Ok((fd, false)),
                        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                        Err(e) => return Err(map(e)),
                    }
                }
                Err(e) => return Err(map(e)),
            }
        }
        Err(retry(
            ErrorKind::Conflict,
            format!(
                "Path {} changed repeatedly while opening. Retry the write.",
                py_repr(path)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::setup;
    use std::fs;

    fn msg<T>(r: Result<T>) -> String {
        match r {
            Ok(_) => "OK".to_string(),
            Err(e) => e.message,
        }
    }

    #[test]
    fn write_plan_errors_match_reference() {
        let (_d, f) = setup();
        let c = CancelFlag::new();
        let w = |p: &str| msg(f.plan_write(p, "x".into(), None, true, &c));
        assert_eq!(
            w(".GIT/config"),
            "Path '.GIT/config' is protected (matches '.git/*')."
        );
        assert_eq!(
            w(".git/config"),
            "Path '.git/config' is protected (matches '.git/*')."
        );
        assert_eq!(
            w("nodir/x"),
            "Parent directory 'nodir' does not exist. Use create_directory first."
        );
        assert_eq!(
            w("a.txt/x"),
            "Path 'a.txt/x' has a parent that is not a directory."
        );
        assert_eq!(w("d"), "Path 'd' exists and is not a regular file.");
        assert_eq!(
            msg(f.plan_write("a.txt", "x".into(), Some("abc".into()), true, &c)),
            "Conflict: file 'a.txt' has changed (expected hash:abc, got hash:09834d488008). Re-read the file and retry."
        );
    }

    #[test]
    fn a_plan_knows_the_result_its_commit_answers() {
        let (_d, f) = setup();
        let c = CancelFlag::new();
        let contract = f.limits.contract;
        for plan in [
            f.plan_write("new.txt", "a\nb".into(), None, true, &c)
                .unwrap(),
            f.plan_edit("a.txt", &[Replacement::once("x", "z")], None, &c)
                .unwrap(),
        ] {
            let (hash, text) = (plan.result_hash(contract), plan.result_text(contract, true));
            let out = f.commit(&plan, &c).unwrap();
            assert_eq!((hash, text), (out.content_hash.clone(), Some(out.text)));
        }
        let dir = f.plan_create_directory("newdir").unwrap().unwrap();
        assert_eq!(
            (dir.result_hash(contract), dir.result_text(contract, true)),
            (None, None)
        );
    }

    #[test]
    fn write_commit_and_guards() {
        let (d, f) = setup();
        let c = CancelFlag::new();
        let plan = f
            .plan_write("new.txt", "a\nb".into(), None, true, &c)
            .unwrap();
        assert_eq!(
            plan.diff,
            "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file"
        );
        let out = f.commit(&plan, &c).unwrap();
        assert_eq!(
            out.text,
            format!(
                "Wrote 3 chars (2 lines) to new.txt. [hash:{}]",
                text_hash("a\nb")
            )
        );
        assert_eq!(
            fs::read_to_string(d.path().join("new.txt")).unwrap(),
            "a\nb"
        );
        // A file that appears while a create is announced is a conflict.
        let plan = f
            .plan_write("new2.txt", "x".into(), None, true, &c)
            .unwrap();
        fs::write(d.path().join("new2.txt"), "").unwrap();
        assert_eq!(
            msg(f.commit(&plan, &c)),
            "Conflict: file 'new2.txt' has changed (expected hash:<absent>, got hash:e3b0c44298fc). Re-read the file and retry."
        );
        // Overwrite shrinks the file.
        let plan = f
            .plan_write("a.txt", "z".into(), Some("09834d488008".into()), false, &c)
            .unwrap();
        f.commit(&plan, &c).unwrap();
        assert_eq!(fs::read_to_string(d.path().join("a.txt")).unwrap(), "z");
        // A path replaced by a symlink while announced.
        let plan = f.plan_write("new.txt", "q".into(), None, true, &c).unwrap();
        fs::remove_file(d.path().join("new.txt")).unwrap();
        std::os::unix::fs::symlink("a.txt", d.path().join("new.txt")).unwrap();
        assert_eq!(
            msg(f.commit(&plan, &c)),
            "Path 'new.txt' was replaced while the change was announced. Retry."
        );
    }

    #[test]
    fn edits() {
        let (d, f) = setup();
        let c = CancelFlag::new();
        let r = |pairs: &[(&str, &str)]| -> Vec<Replacement> {
            pairs
                .iter()
                .map(|(a, b)| Replacement::once(*a, *b))
                .collect()
        };
        assert_eq!(
            msg(f.plan_edit("a.txt", &r(&[("q", "z")]), None, &c)),
            "old_text not found in a.txt. No changes were written."
        );
        assert_eq!(
            msg(f.plan_edit("a.txt", &r(&[("x", "y"), ("y", "z")]), None, &c)),
            "replacement 2 found 2 times in a.txt. Include more surrounding context to make the match unique. No changes were written."
        );
        assert_eq!(
            msg(f.plan_edit("a.txt", &r(&[("", "z")]), None, &c)),
            "old_text is empty; old_text must be the exact text to replace."
        );
        assert_eq!(
            msg(f.plan_edit("d", &r(&[("a", "z")]), None, &c)),
            "'d' is a directory, not a file." // issue 19 (0.36.0: `File not found: d`)
        );
        // Bytes that are not UTF-8 are kept; only the matched text changes.
        fs::write(d.path().join("bad.txt"), b"ok \xe2\x82 x").unwrap();
        let plan = f.plan_edit("bad.txt", &r(&[("x", "y")]), None, &c).unwrap();
        assert_eq!(plan.bytes(), b"ok \xe2\x82 y");
        assert_eq!(&*plan.content, "ok \u{FFFD} y");
        let out = f.commit(&plan, &c).unwrap();
        assert_eq!(
            fs::read(d.path().join("bad.txt")).unwrap(),
            b"ok \xe2\x82 y"
        );
        assert_eq!(
            out.text,
            format!("Edited bad.txt. [hash:{}]", text_hash("ok \u{FFFD} y"))
        );
        fs::write(d.path().join("bin"), b"a\0").unwrap();
        assert_eq!(
            msg(f.plan_edit("bin", &r(&[("a", "z")]), None, &c)),
            "bin is a binary file; edit_file only edits text files."
        );
        let plan = f.plan_edit("a.txt", &r(&[("x", "X")]), None, &c).unwrap();
        assert_eq!(
            plan.diff,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-x\n+X\n y"
        );
        let out = f.commit(&plan, &c).unwrap();
        assert_eq!(
            out.text,
            format!("Edited a.txt. [hash:{}]", text_hash("X\ny\n"))
        );
        // An edit does not recreate a file deleted meanwhile.
        let plan = f.plan_edit("a.txt", &r(&[("X", "x")]), None, &c).unwrap();
        fs::remove_file(d.path().join("a.txt")).unwrap();
        assert_eq!(
            msg(f.commit(&plan, &c)),
            "No such file or directory: 'a.txt'"
        );
        assert!(!d.path().join("a.txt").exists());
    }

    #[test]
    fn overlapping_matches_and_replace_all() {
        let once = |old: &str| vec![Replacement::once(old, "X")];
        let all = |old: &str| {
            vec![Replacement {
                old: old.into(),
                new: "X".into(),
                replace_all: true,
            }]
        };
        let ambiguous = "old_text found 2 times in f. Include more surrounding context to make the match unique. \
                         No changes were written.";
        // Overlapping occurrences count: Python's str.count would say 1 and edit the first.
        assert_eq!(
            msg(apply_replacements(
                "foo\nfoo\nfoo\n",
                &once("foo\nfoo\n"),
                "f"
            )),
            ambiguous
        );
        assert_eq!(msg(apply_replacements("aaa", &once("aa"), "f")), ambiguous);
        assert_eq!(
            msg(apply_replacements("é-é-é", &once("é-é"), "f")),
            ambiguous
        );
        assert_eq!(apply_replacements("ab-a", &once("ab"), "f").unwrap(), "X-a");
        assert_eq!(
            msg(apply_replacements("abc", &once(""), "f")),
            "old_text is empty; old_text must be the exact text to replace."
        );
        // replace_all: every non-overlapping occurrence, left to right; a miss is the same retry.
        assert_eq!(
            apply_replacements("a.a.a", &all("a"), "f").unwrap(),
            "X.X.X"
        );
        assert_eq!(apply_replacements("aaa", &all("aa"), "f").unwrap(), "Xa");
        assert_eq!(
            msg(apply_replacements("abc", &all("z"), "f")),
            "old_text not found in f. No changes were written."
        );
        assert_eq!(
            msg(apply_replacements("abc", &all(""), "f")),
            "old_text is empty; old_text must be the exact text to replace."
        );
        // In a batch each replacement has its own flag and sees the previous one's result.
        let batch = [
            Replacement {
                old: "x".into(),
                new: "y".into(),
                replace_all: true,
            },
            Replacement::once("y-y-z", "done"),
        ];
        assert_eq!(apply_replacements("x-x-z", &batch, "f").unwrap(), "done");
    }

    #[test]
    fn create_directory() {
        let (d, f) = setup();
        let c = CancelFlag::new();
        assert!(f.plan_create_directory("d").unwrap().is_none());
        assert_eq!(
            msg(f.plan_create_directory("a.txt")),
            "Path 'a.txt' exists and is not a directory."
        );
        assert_eq!(
            msg(f.plan_create_directory("a.txt/x/y")),
            "Path 'a.txt/x/y' has a parent that is not a directory."
        );
        assert_eq!(
            msg(f.plan_create_directory(".git/x")),
            "Path '.git/x' is protected (matches '.git/*')."
        );
        let plan = f.plan_create_directory("n/m").unwrap().unwrap();
        assert_eq!(plan.event_path(), "n/m");
        let out = f.commit(&plan, &c).unwrap();
        assert_eq!(
            (out.text.as_str(), out.emit),
            ("Created directory: n/m", true)
        );
        assert!(d.path().join("n/m").is_dir());
        let out = f.commit(&plan, &c).unwrap();
        assert!(!out.emit);
    }

    #[test]
    fn holds_compares_the_whole_file_in_chunks() {
        let old: Vec<u8> = (0..CHUNK * 2 + 7).map(|i| (i % 251) as u8).collect();
        let c = CancelFlag::new();
        let holds_now = |now: &[u8]| {
            let mut file = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut file, now).unwrap();
            file.seek(SeekFrom::Start(0)).unwrap();
            holds(&mut file, &old, &c).unwrap().unwrap()
        };
        assert!(holds_now(&old));
        let mut changed = old.clone();
        changed[CHUNK + 3] ^= 1;
        assert!(!holds_now(&changed));
        assert!(!holds_now(&old[..old.len() - 1]));
        assert!(!holds_now(&[&old[..], b"x"].concat()));
        assert!(!holds_now(b""));
        // A small `old` reads through a small buffer: a longer file still differs.
        let small = |now: &[u8], old: &[u8]| {
            let mut file = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut file, now).unwrap();
            file.seek(SeekFrom::Start(0)).unwrap();
            holds(&mut file, old, &c).unwrap().unwrap()
        };
        assert!(small(b"abc", b"abc"));
        assert!(!small(b"abcd", b"abc"));
        assert!(!small(b"ab", b"abc"));
        assert!(!small(&[&b"abc"[..], &[b'x'; 10_000]].concat(), b"abc"));
        assert!(small(b"", b""));
        assert!(!small(b"a", b""));
    }
}
