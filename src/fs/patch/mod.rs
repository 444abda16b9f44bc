//! `apply_patch`: a multi-file patch in Codex's format, planned whole, then committed all or
//! nothing.
//!
//! - [`parse`]: the patch text into typed operations, with the patch line each starts on.
//! - [`hunks`]: where an update's hunks land in a file's bytes (the match tiers' one line
//!   search, [`crate::fs::change::tiers::seek_lines`]) and the bytes they make, every other
//!   byte kept.
//! - [`plan`]: the operations run in order on a picture of the tree (an add then an update
//!   of one path, two updates of one file), every path resolved, contained and access-checked
//!   and every file read before anything is written; the `FileSystem` methods.
//! - [`journal`]: the crash-safe commit across files.
//!
//! A plan lists each path once, with its bytes before and after the whole patch (the net change
//! of the tree, however the operations chain); a path the patch leaves as it was is left out.

pub mod hunks;
pub mod journal;
pub mod parse;
pub mod plan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::fs::change::diff::unified_diff;
use crate::fs::change::shown;
use crate::fs::change::tiers::Tier;
use crate::fs::change::write::disk_hash;
use crate::fs::contract::Contract;
use crate::fs::disclosure::Disclosure;
use crate::fs::read::encoding;
use crate::fs::text::py_repr;
use parse::Op;

/// One file a patch changes.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The path as the patch names it (a move's destination).
    pub path: String,
    /// Event path: resolved, relative to the root.
    pub event_path: String,
    /// The path beneath the root (a workspace path on a remote backend).
    pub rel: PathBuf,
    /// For a new file grown from a file the patch removed (through any chain of moves): that
    /// file's path as the patch first named it (its result line is `R from -> path`).
    pub moved_from: Option<String>,
    /// A file removed because it moved: listed in the move's result line, not its own.
    pub moved_away: bool,
    /// The bytes before (`None`: no file).
    pub old: Option<Vec<u8>>,
    /// The bytes after (`None`: removed).
    pub new: Option<Vec<u8>>,
    /// The content hash before (what `read_file` showed), `None` for no file.
    pub old_hash: Option<String>,
    /// The content hash after, `None` when removed.
    pub new_hash: Option<String>,
    /// The event diff from the old content to the new.
    pub diff: String,
    /// Whether the diff was cut.
    pub truncated: bool,
    /// What its result line ends with under `match='tolerant'`: the hunks found past the exact
    /// tier (`[matched ignoring trailing whitespace on lines 12-14]`), space-separated.
    pub notes: String,
    /// With `show_changes`: the changed regions shown after its result line ([`shown::render`]).
    pub shown: String,
    /// The last operation of the patch that named it, as its messages start
    /// (`Add File 'n/x.txt' (patch line 7)`, a move's destination `Update File 'a' (patch line
    /// 2): Move to 'b'`).
    pub at: String,
}

impl FileChange {
    /// The `FileChangeRequestEvent` operation: `write` (a new file), `edit`, or `delete`.
    pub fn operation(&self) -> &'static str {
        match (&self.old, &self.new) {
            (None, _) => "write",
            (_, None) => "delete",
            _ => "edit",
        }
    }
}

/// A patch checked and planned: its files, sorted by event path (the order turns are taken in).
#[derive(Debug, Clone, Default)]
pub struct PatchPlan {
    /// The files, sorted by event path.
    pub files: Vec<FileChange>,
    /// Result lines, in the order the patch names the files.
    order: Vec<usize>,
}

impl PatchPlan {
    /// The result: `Applied patch to N files:` then a line per path, in the order the patch
    /// first names them: `A p [hash:H]`, `M p [hash:H]`, `D p`, `R old -> new [hash:H]` (no
    /// hashes without `content_hashes`), each followed by its tier notes and shown changes
    /// ([`FileChange`]); `Applied patch to 0 files.` for an empty plan.
    pub fn result_text(&self, content_hashes: bool) -> String {
        let shown = |p: &str| crate::fs::text::names::shown_path(p).into_owned();
        let lines: Vec<String> = self
            .order
            .iter()
            .map(|&i| &self.files[i])
            .filter(|f| !f.moved_away)
            .map(|f| {
                let hash = match (&f.new_hash, content_hashes) {
                    (Some(h), true) => format!(" [hash:{h}]"),
                    _ => String::new(),
                };
                let line = match (&f.moved_from, &f.old, &f.new) {
                    (Some(from), _, _) => format!("R {} -> {}{hash}", shown(from), shown(&f.path)),
                    (None, None, _) => format!("A {}{hash}", shown(&f.path)),
                    (None, _, None) => format!("D {}", shown(&f.path)),
                    _ => format!("M {}{hash}", shown(&f.path)),
                };
                format!("{line}{}{}", f.notes, f.shown)
            })
            .collect();
        if lines.is_empty() {
            return "Applied patch to 0 files.".to_string();
        }
        let noun = if lines.len() == 1 { "file" } else { "files" };
        format!(
            "Applied patch to {} {noun}:\n{}",
            lines.len(),
            lines.join("\n")
        )
    }
}

/// Every path `input` names (files and move destinations), in patch order, repeats included:
/// what a workspace backend must resolve and read before [`plan_ops`] runs on its bytes.
///
/// Errors: the parse errors ([`parse::parse`]).
pub fn patch_paths(input: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for op in parse::parse(input)? {
        out.push(op.path().to_string());
        if let Op::Update {
            move_to: Some(dest),
            ..
        } = &op
        {
            out.push(dest.clone());
        }
    }
    Ok(out)
}

/// A file a workspace backend handed in for [`plan_handed_in`].
#[derive(Debug, Clone)]
pub struct HandedIn {
    /// Its resolved workspace path.
    pub resolved: String,
    /// Its event path.
    pub event_path: String,
    /// Its bytes, `None` when nothing is there.
    pub bytes: Option<Vec<u8>>,
    /// Whether a directory is there.
    pub is_dir: bool,
}

/// [`plan_ops`] on files a workspace backend handed in: `files` maps each path of
/// [`patch_paths`] to what is there.
///
/// Errors: a directory named as a file, and [`plan_ops`]'s.
pub fn plan_handed_in(
    input: &str,
    contract: Contract,
    disclosure: &Disclosure,
    files: &std::collections::HashMap<String, HandedIn>,
) -> Result<PatchPlan> {
    let ops = parse::parse(input)?;
    plan_ops(&ops, contract, disclosure, |path| {
        let Some(file) = files.get(path) else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} was not handed in.", py_repr(path)),
            ));
        };
        if file.is_dir {
            return Err(refusal(
                ErrorKind::NotFound,
                format!(
                    "'{}' is a directory, not a file.",
                    crate::fs::text::names::inline(path)
                ),
            ));
        }
        Ok(Loaded {
            rel: PathBuf::from(&file.resolved),
            event_path: file.event_path.clone(),
            bytes: file.bytes.clone(),
            id: None,
            link: None,
        })
    })
}

/// A file as the planner first meets it.
#[derive(Debug)]
pub struct Loaded {
    /// What identifies the file (two spellings of one file load once).
    pub rel: PathBuf,
    /// Event path.
    pub event_path: String,
    /// Its bytes, `None` when nothing is there.
    pub bytes: Option<Vec<u8>>,
    /// The file's device and inode, when known: two names with one identity (hard links) are
    /// one file, so an update through either changes what both hold.
    pub id: Option<(u64, u64)>,
    /// When the path as named is a symbolic link: its target as the root names it (`rel`).
    pub link: Option<String>,
}

/// One path of the picture: first met as `path`, its bytes then and now.
struct Entry {
    path: String,
    event_path: String,
    original: Option<Vec<u8>>,
    current: Option<Vec<u8>>,
    /// Where `current` came from: the key of the file whose bytes before the patch it grew
    /// from (itself, or a move's source, through any chain of moves); `None` for bytes an
    /// `Add File` wrote, or no file.
    origin: Option<PathBuf>,
    /// Whether `current` still holds its origin's bytes before the patch (no update since).
    pristine: bool,
    first: usize,
    /// Tier notes of its updates.
    notes: Vec<String>,
    /// Changed byte ranges of `current` when one update made it from its origin's bytes (else
    /// the span from the first to the last difference is shown).
    changed: Option<Vec<(usize, usize)>>,
    /// The file's identity while this name still holds the file it named before the patch
    /// (cleared by an add, a delete or a move): names sharing it are hard links of one file.
    id: Option<(u64, u64)>,
    /// The last operation that named it, as its messages start: `Update File 'p' (patch line 5)`.
    at: String,
}

/// `error` as a message of the operation `at` (`Update File 'p' (patch line 5): ...`), ending
/// `No changes were written.`; an OS error or a cancellation is left as it is.
pub fn within(at: &str, error: Error) -> Error {
    if matches!(error.kind, ErrorKind::Io(_) | ErrorKind::Cancelled)
        || error.message.starts_with(at)
    {
        return error;
    }
    let message = error
        .message
        .strip_suffix(" No changes were written.")
        .unwrap_or(&error.message);
    Error::new(
        error.kind,
        format!("{at}: {message} No changes were written."),
    )
}

/// `Delete File` or `Move to` of a path that is a symbolic link: refused (a link is not the
/// file it points to, and the journal moves and removes regular files only).
fn link_refusal(op: &str, path: &str, line: usize, target: &str) -> Error {
    let what = if op == "Delete File" {
        format!(
            "Delete File removes regular files only: Delete File {} to delete the file, or remove the link another way",
            py_repr(target)
        )
    } else {
        format!(
            "Move to moves regular files only: move {} instead",
            py_repr(target)
        )
    };
    refusal(
        ErrorKind::InvalidArgument,
        format!(
            "{op} {} (patch line {line}): {} is a symbolic link (to {}); {what}.",
            py_repr(path),
            py_repr(path),
            py_repr(target)
        ),
    )
}

/// After an update of the file `id` names: every other name of it (a hard link whose entry
/// still holds that file) holds the same bytes.
fn share_with_links(tree: &mut BTreeMap<PathBuf, Entry>, k: &Path, id: Option<(u64, u64)>) {
    let Some(id) = id else { return };
    let Some(now) = tree[k].current.clone() else {
        return;
    };
    for (rel, e) in tree.iter_mut() {
        if rel != k && e.id == Some(id) {
            e.current = Some(now.clone());
            (e.pristine, e.changed) = (false, None);
        }
    }
}

fn refusal(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, format!("{message} No changes were written."))
}

/// Text for the event diff: UTF-16 decoded, anything else as UTF-8 with U+FFFD.
fn shown_text(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(crate::fs::read::hash::BINARY_SAMPLE)];
    match encoding::sniff_utf16(head) {
        Some(kind) => encoding::decode_utf16(bytes, kind, true).unwrap_or_default(),
        None => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// `[matched ignoring indentation on lines 3-4]` (`[hunk 2 matched ...]` when the update has
/// more than one hunk), lines numbered in the file the update was applied to, as `read_file`
/// numbers them (`starts`, [`shown::line_starts`]).
fn tier_note(
    m: &hunks::TierMatch,
    hunks: usize,
    starts: &[usize],
    text: &[u8],
    contract: Contract,
) -> String {
    // The hunks count lines as they split them; `read_file` may split them finer (the
    // document's contract: at `\x0c`, `\x85`, ...).
    let nl = self::hunks::line_starts(text, contract);
    let shown_line =
        |n: usize| shown::line_of(starts, nl.get(n - 1).copied().unwrap_or(text.len())) + 1;
    let (first, last) = (shown_line(m.lines.0), shown_line(m.lines.1));
    let who = if hunks > 1 {
        format!("hunk {} matched", m.hunk)
    } else {
        "matched".to_string()
    };
    let place = if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    };
    debug_assert!(m.tier != Tier::Exact);
    format!("[{who} {} on {place}]", m.tier.describe())
}

/// The changed regions of a file the patch updated, for its result (`show_changes`):
/// `changed` byte ranges of `new` when known, else the lines that differ ([`shown::differing`]); shown with [`shown::render_within`] from the result's `budget` of chars.
fn shown_changes(
    path: &str,
    old: &[u8],
    new: &[u8],
    changed: Option<Vec<(usize, usize)>>,
    disclosure: &Disclosure,
    contract: Contract,
    budget: &mut usize,
) -> String {
    let (old_text, new_text) = (shown_text(old), shown_text(new));
    let ranges = match changed {
        Some(ranges) => shown::changed_lines(new, &ranges, contract),
        None => shown::changed_lines(
            new_text.as_bytes(),
            &shown::differing(&old_text, &new_text),
            contract,
        ),
    };
    shown::render_within(
        path,
        &new_text,
        &ranges,
        disclosure.show_changes,
        contract,
        disclosure.max_line_chars,
        budget,
    )
}

/// Runs `ops` in order on a picture of the tree whose files `load` reads (each once), and
/// returns the plan: every file changed, its bytes before and after, hashes and diffs.
///
/// Errors: `load`'s (containment, access, I/O); `Add File` of an existing file, `Delete File`
/// or `Update File` of a missing one, `Move to` an existing file, the hunks' misses; a patch
/// that changes nothing. Each names the operation, its patch line and the path.
pub fn plan_ops(
    ops: &[Op],
    contract: Contract,
    disclosure: &Disclosure,
    mut load: impl FnMut(&str) -> Result<Loaded>,
) -> Result<PatchPlan> {
    let mut tree: BTreeMap<PathBuf, Entry> = BTreeMap::new();
    let mut met = 0usize;
    let mut key = |path: &str,
                   at: &str,
                   tree: &mut BTreeMap<PathBuf, Entry>|
     -> Result<(PathBuf, Option<String>)> {
        let loaded = load(path).map_err(|e| within(at, e))?;
        if !tree.contains_key(&loaded.rel) {
            met += 1;
            // A hard link of a file met before holds what that name holds now.
            let linked = loaded.id.and_then(|id| {
                tree.values()
                    .find(|e| e.id == Some(id))
                    .map(|e| e.current.clone())
            });
            let pristine = loaded.bytes.is_some() && linked.is_none();
            let current = linked.unwrap_or_else(|| loaded.bytes.clone());
            tree.insert(
                loaded.rel.clone(),
                Entry {
                    path: path.to_string(),
                    event_path: loaded.event_path,
                    origin: loaded.bytes.is_some().then(|| loaded.rel.clone()),
                    pristine,
                    current,
                    id: loaded.bytes.is_some().then_some(loaded.id).flatten(),
                    original: loaded.bytes,
                    first: met,
                    notes: Vec::new(),
                    changed: None,
                    at: at.to_string(),
                },
            );
        }
        tree.get_mut(&loaded.rel).expect("loaded").at = at.to_string();
        Ok((loaded.rel, loaded.link))
    };
    for op in ops {
        match op {
            Op::Add { path, lines, line } => {
                let at = format!("Add File {} (patch line {line})", py_repr(path));
                let (k, _) = key(path, &at, &mut tree)?;
                let e = tree.get_mut(&k).expect("loaded");
                if e.current.is_some() {
                    return Err(refusal(
                        ErrorKind::Conflict,
                        format!(
                            "Add File {} (patch line {line}): the file already exists. Use Update File to change it, \
                             or Delete File before Add File to replace it.",
                            py_repr(path)
                        ),
                    ));
                }
                let mut content = Vec::new();
                for l in lines {
                    content.extend_from_slice(l.as_bytes());
                    content.push(b'\n');
                }
                e.current = Some(content);
                (e.origin, e.pristine, e.changed, e.id) = (None, false, None, None);
                e.notes.clear();
            }
            Op::Delete { path, line } => {
                let at = format!("Delete File {} (patch line {line})", py_repr(path));
                let (k, link) = key(path, &at, &mut tree)?;
                if let Some(target) = link {
                    return Err(link_refusal("Delete File", path, *line, &target));
                }
                let e = tree.get_mut(&k).expect("loaded");
                // Its line names the file deleted, not another name it was met by first.
                e.path = path.clone();
                (e.origin, e.pristine, e.changed, e.id) = (None, false, None, None);
                e.notes.clear();
                if e.current.take().is_none() {
                    return Err(refusal(
                        ErrorKind::NotFound,
                        format!(
                            "Delete File {} (patch line {line}): File not found: {path}.",
                            py_repr(path)
                        ),
                    ));
                }
            }
            Op::Update {
                path,
                move_to,
                hunks: hs,
                line,
            } => {
                let at = format!("Update File {} (patch line {line})", py_repr(path));
                let (k, link) = key(path, &at, &mut tree)?;
                if let (Some(target), Some(_)) = (&link, move_to) {
                    return Err(link_refusal("Update File", path, *line, target));
                }
                let e = tree.get_mut(&k).expect("loaded");
                let Some(current) = &e.current else {
                    return Err(refusal(
                        ErrorKind::NotFound,
                        format!(
                            "Update File {} (patch line {line}): File not found: {path}.",
                            py_repr(path)
                        ),
                    ));
                };
                let first_change = e.pristine;
                let (new, changed) = if hs.is_empty() {
                    (current.clone(), e.changed.take())
                } else {
                    e.pristine = false;
                    let patched = hunks::apply(current, hs, path, disclosure.matching, contract)?;
                    let starts = shown::line_starts(current, contract);
                    for m in &patched.matched {
                        e.notes
                            .push(tier_note(m, hs.len(), &starts, current, contract));
                    }
                    (patched.bytes, patched.changed.filter(|_| first_change))
                };
                e.changed = changed;
                let id = e.id;
                match move_to {
                    None => {
                        e.current = Some(new);
                        share_with_links(&mut tree, &k, id);
                    }
                    Some(dest) => {
                        let (d, _) =
                            key(dest, &format!("{at}: Move to {}", py_repr(dest)), &mut tree)?;
                        if d == k {
                            tree.get_mut(&k).expect("loaded").current = Some(new);
                            share_with_links(&mut tree, &k, id);
                            continue;
                        }
                        if tree[&d].current.is_some() {
                            return Err(refusal(
                                ErrorKind::Conflict,
                                format!(
                                    "Update File {} (patch line {line}): Move to {}: the file already exists. \
                                     Delete it first, or move to another path.",
                                    py_repr(path),
                                    py_repr(dest)
                                ),
                            ));
                        }
                        // A moved file is a new file at its destination: its other hard links
                        // keep the bytes they had.
                        let src = tree.get_mut(&k).expect("loaded");
                        src.current = None;
                        src.id = None;
                        let origin = src.origin.take();
                        let pristine = std::mem::replace(&mut src.pristine, false);
                        let notes = std::mem::take(&mut src.notes);
                        let changed = src.changed.take();
                        let dst = tree.get_mut(&d).expect("loaded");
                        dst.notes = notes;
                        dst.changed = changed;
                        dst.current = Some(new);
                        dst.id = None;
                        dst.path = dest.clone();
                        (dst.origin, dst.pristine) = (origin, pristine);
                    }
                }
            }
        }
    }
    // The net change of the tree, one line per final path: a file now at a path that had none,
    // grown from a file whose path the patch left empty (through any chain of moves), is a move
    // of that file (`R from -> to`, listed where the earlier of the two was first named); any
    // other file new to its path is an add, one whose path had a file a change, one gone a
    // deletion; a path the patch leaves as it was has no line.
    let moves: BTreeMap<PathBuf, PathBuf> = tree
        .iter()
        .filter_map(|(rel, e)| {
            let from = e.origin.as_ref().filter(|o| *o != rel)?;
            let gone = tree[from].current.is_none();
            (e.original.is_none() && e.current.is_some() && gone)
                .then(|| (from.clone(), rel.clone()))
        })
        .collect();
    let moved_from: BTreeMap<PathBuf, (String, usize, Option<Vec<u8>>)> = moves
        .iter()
        .map(|(from, to)| {
            let src = &tree[from];
            (
                to.clone(),
                (src.path.clone(), src.first, src.original.clone()),
            )
        })
        .collect();
    // (listed at, the change, its changed byte ranges when known, the bytes its shown changes
    // are counted from)
    type Planned = (
        usize,
        FileChange,
        Option<Vec<(usize, usize)>>,
        Option<Vec<u8>>,
    );
    let mut files: Vec<Planned> = Vec::new();
    for (rel, e) in tree {
        if e.original == e.current {
            continue;
        }
        let old_hash = e.original.as_deref().map(|b| disk_hash(b, contract));
        let new_hash = e.current.as_deref().map(|b| disk_hash(b, contract));
        let (diff, truncated) = unified_diff(
            // A new file diffs from an empty one, as an announced `write_file` does.
            Some(
                e.original
                    .as_deref()
                    .map(shown_text)
                    .unwrap_or_default()
                    .as_str(),
            ),
            &e.current.as_deref().map(shown_text).unwrap_or_default(),
            &e.event_path,
        );
        let notes: String = e.notes.iter().map(|n| format!(" {n}")).collect();
        let moved_away = moves.contains_key(&rel);
        let (moved_from, at, before) = match moved_from.get(&rel) {
            Some((from, first, before)) => {
                (Some(from.clone()), e.first.min(*first), before.clone())
            }
            None => (None, e.first, e.original.clone()),
        };
        // Changed ranges count from the origin's bytes: only where those are the bytes shown from.
        let changed = e.changed.filter(|_| {
            e.origin.is_some() && (moved_from.is_some() || e.origin.as_ref() == Some(&rel))
        });
        files.push((
            at,
            FileChange {
                path: e.path,
                event_path: e.event_path,
                rel,
                moved_from,
                moved_away,
                old: e.original,
                new: e.current,
                old_hash,
                new_hash,
                diff,
                truncated,
                notes,
                shown: String::new(),
                at: e.at,
            },
            changed,
            before,
        ));
    }
    if files.is_empty() {
        return Err(refusal(
            ErrorKind::NoMatch,
            "The patch leaves every file exactly as it is.".to_string(),
        ));
    }
    files.sort_by(|a, b| a.1.event_path.cmp(&b.1.event_path));
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| files[i].0);
    if disclosure.show_changes > 0 {
        // One cap for the whole result, spent in result order.
        let mut budget = shown::MAX_SHOWN_CHARS;
        for &i in &order {
            let (_, f, changed, before) = &mut files[i];
            if let (Some(old), Some(new)) = (before.as_deref(), &f.new) {
                f.shown = shown_changes(
                    &f.path,
                    old,
                    new,
                    changed.take(),
                    disclosure,
                    contract,
                    &mut budget,
                );
            }
        }
    }
    let files = files.into_iter().map(|(_, f, _, _)| f).collect();
    Ok(PatchPlan { files, order })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_plan_on_files_handed_in() {
        let file = |resolved: &str, bytes: Option<&[u8]>, is_dir: bool| HandedIn {
            resolved: resolved.to_string(),
            event_path: resolved.trim_start_matches("/ws/").to_string(),
            bytes: bytes.map(<[u8]>::to_vec),
            is_dir,
        };
        let files: HashMap<String, HandedIn> = [
            (
                "a.txt".to_string(),
                file("/ws/a.txt", Some(b"one\r\ntwo\r\n"), false),
            ),
            ("b".to_string(), file("/ws/b", None, false)),
            ("d".to_string(), file("/ws/d", None, true)),
        ]
        .into();
        let input =
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b\n-two\n+2\n*** End Patch";
        let plan =
            plan_handed_in(input, Contract::Workspace, &Disclosure::default(), &files).unwrap();
        assert_eq!(
            plan.result_text(false),
            "Applied patch to 1 file:\nR a.txt -> b"
        );
        let moved: Vec<_> = plan
            .files
            .iter()
            .map(|f| (f.event_path.as_str(), f.operation(), f.new.clone()))
            .collect();
        assert_eq!(
            moved,
            vec![
                ("a.txt", "delete", None),
                ("b", "write", Some(b"one\r\n2\r\n".to_vec()))
            ]
        );
        let err = plan_handed_in(
            "*** Begin Patch\n*** Delete File: d\n*** End Patch",
            Contract::Workspace,
            &Disclosure::default(),
            &files,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "Delete File 'd' (patch line 2): 'd' is a directory, not a file. No changes were written."
        );
    }
}
