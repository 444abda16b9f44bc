//! The text a diff of one path shows: a whole unified diff (`fs/change/diff.rs`'s
//! `whole_diff`, neither bounded nor cut as the event diff is) of two stored text versions,
//! else a one-line note (created, deleted, binary, symlink, mode only, too big to keep, no
//! longer kept).

use std::io::Read;

use super::state::State;
use super::store::Objects;
use crate::fs::change::diff::whole_diff;
use crate::fs::read::hash::is_binary;

/// Text versions larger than this are described, not diffed.
const MAX_DIFF_BYTES: u64 = 1 << 20;

/// The stored text of a file state: `Err(note)` when it is not text or not at hand.
fn text_of(objects: &Objects, state: &State) -> Result<String, &'static str> {
    let State::File {
        hash, size, stored, ..
    } = state
    else {
        return Err("not a file");
    };
    if !*stored {
        return Err("too big to keep");
    }
    if *size > MAX_DIFF_BYTES {
        return Err("too big to diff");
    }
    let mut data = Vec::new();
    objects
        .open_object(hash)
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|_| "no longer kept")?;
    if is_binary(&data) {
        return Err("binary");
    }
    String::from_utf8(data).map_err(|_| "binary")
}

fn describe(state: &State) -> String {
    match state {
        State::Absent => "nothing".into(),
        State::File { size, .. } => format!("file ({size} bytes)"),
        State::Dir { .. } => "directory".into(),
        State::Symlink { target } => {
            format!("symlink -> {}", String::from_utf8_lossy(target))
        }
    }
}

/// The diff text of `path` going from `before` to `after`.
pub fn change_text(objects: &Objects, path: &[u8], before: &State, after: &State) -> String {
    let shown_path = String::from_utf8_lossy(path);
    match (before, after) {
        (State::Absent, State::File { size, .. }) => format!("created file ({size} bytes)"),
        (State::File { size, .. }, State::Absent) => format!("deleted file ({size} bytes)"),
        (State::Absent, State::Dir { .. }) => "created directory".into(),
        (State::Dir { .. }, State::Absent) => "deleted directory".into(),
        (State::Dir { mode: a }, State::Dir { mode: b }) => format!("mode {a:o} -> {b:o}"),
        (
            State::File {
                hash: ha, mode: ma, ..
            },
            State::File {
                hash: hb, mode: mb, ..
            },
        ) => {
            let mode = (ma != mb).then(|| format!("mode {ma:o} -> {mb:o}"));
            if ha == hb && ha != "?" {
                return mode.unwrap_or_default();
            }
            let body = match (text_of(objects, before), text_of(objects, after)) {
                (Ok(a), Ok(b)) => whole_diff(&a, &b, &shown_path),
                (Err(note), _) | (_, Err(note)) => format!("{note}: content changed"),
            };
            match mode {
                Some(m) => format!("{m}\n{body}"),
                None => body,
            }
        }
        _ => format!("{} -> {}", describe(before), describe(after)),
    }
}
