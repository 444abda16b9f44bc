//! The index: every tracked path's metadata and content state as last seen (the baseline a
//! snapshot compares with), persisted as `index`, a versioned line format (one entry a line,
//! tab-separated) replaced whole through a temporary file and a rename, so a kill leaves the
//! old index or the new one. A missing or unreadable index is an empty one: the next
//! snapshot then keeps the whole tree again (the objects are there, so nothing is copied twice).

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use super::state::{esc, unesc, Kind, Meta, State};

const HEADER: &str = "pydantic-ai-harness checkpoint index 1";

/// Path (root-relative bytes) to its metadata and state as last seen.
pub type Index = BTreeMap<Vec<u8>, (Meta, State)>;

fn kind_char(k: Kind) -> char {
    match k {
        Kind::File => 'f',
        Kind::Dir => 'd',
        Kind::Symlink => 'l',
    }
}

fn line(out: &mut String, path: &[u8], meta: &Meta, state: &State) {
    use std::fmt::Write as _;
    let (hash, stored, target) = match state {
        State::File { hash, stored, .. } => (hash.as_str(), *stored, String::new()),
        State::Symlink { target } => ("-", false, esc(target)),
        _ => ("-", false, String::new()),
    };
    let _ = writeln!(
        out,
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:o}\t{}\t{}\t{}",
        esc(path),
        kind_char(meta.kind),
        meta.dev,
        meta.ino,
        meta.size,
        meta.mtime_ns,
        meta.ctime_ns,
        meta.mode,
        hash,
        u8::from(stored),
        target
    );
}

fn parse(l: &str) -> Option<(Vec<u8>, Meta, State)> {
    let f: Vec<&str> = l.split('\t').collect();
    if f.len() != 11 {
        return None;
    }
    let kind = match f[1] {
        "f" => Kind::File,
        "d" => Kind::Dir,
        "l" => Kind::Symlink,
        _ => return None,
    };
    let meta = Meta {
        kind,
        dev: f[2].parse().ok()?,
        ino: f[3].parse().ok()?,
        size: f[4].parse().ok()?,
        mtime_ns: f[5].parse().ok()?,
        ctime_ns: f[6].parse().ok()?,
        mode: u32::from_str_radix(f[7], 8).ok()?,
    };
    let state = match kind {
        Kind::File => State::File {
            hash: f[8].to_string(),
            size: meta.size,
            mode: meta.mode,
            stored: f[9] == "1",
        },
        Kind::Dir => State::Dir { mode: meta.mode },
        Kind::Symlink => State::Symlink {
            target: unesc(f[10])?,
        },
    };
    Some((unesc(f[0])?, meta, state))
}

/// The index stored at `path`; empty when there is none or it is not one this version wrote.
pub fn load(path: &Path) -> Index {
    load_marked(path).0
}

/// The index at `path` and the log's sequence number when it was written (see
/// [`save_marked`]; `None`: written without one, or no index).
pub fn load_marked(path: &Path) -> (Index, Option<u64>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Index::new(), None);
    };
    let mut lines = text.lines();
    let logged = match lines.next().and_then(|h| h.strip_prefix(HEADER)) {
        Some("") => None,
        Some(rest) => match rest.strip_prefix(LOGGED).and_then(|n| n.parse().ok()) {
            Some(n) => Some(n),
            None => return (Index::new(), None),
        },
        None => return (Index::new(), None),
    };
    let mut index = Index::new();
    for l in lines {
        match parse(l) {
            Some((p, m, s)) => {
                index.insert(p, (m, s));
            }
            None => return (Index::new(), None), // torn or foreign: start over
        }
    }
    (index, logged)
}

/// How the header names the log's sequence number (`... index 1 logged=17`). A version that
/// predates it reads such an index as none (its header is not the one it knows): a cache lost.
const LOGGED: &str = " logged=";

/// Writes `content` to `path` whole: a temporary file beside it, then a rename.
pub fn write_whole(path: &Path, content: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(content)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// Persists `index` at `path` (crash-safe: old or new after a kill).
pub fn save(path: &Path, index: &Index) -> io::Result<()> {
    save_marked(path, index, None)
}

/// [`save`], with `logged`: the log's sequence number (its `next`) as of this index, so that a
/// load can bring the index up to the checkpoints appended after it without writing it (see
/// `load_state`'s replay).
pub fn save_marked(path: &Path, index: &Index, logged: Option<u64>) -> io::Result<()> {
    let mut out = String::with_capacity(64 * index.len() + 64);
    out.push_str(HEADER);
    if let Some(n) = logged {
        use std::fmt::Write as _;
        let _ = write!(out, "{LOGGED}{n}");
    }
    out.push('\n');
    for (p, (m, s)) in index {
        line(&mut out, p, m, s);
    }
    write_whole(path, out.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let meta = |kind, mode| Meta {
            kind,
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: -4,
            ctime_ns: 5,
            mode,
        };
        let mut index = Index::new();
        index.insert(
            b"a\tb".to_vec(),
            (
                meta(Kind::File, 0o755),
                State::File {
                    hash: "h".into(),
                    size: 3,
                    mode: 0o755,
                    stored: true,
                },
            ),
        );
        index.insert(
            b"d".to_vec(),
            (meta(Kind::Dir, 0o700), State::Dir { mode: 0o700 }),
        );
        index.insert(
            b"l\xff".to_vec(),
            (
                meta(Kind::Symlink, 0o777),
                State::Symlink {
                    target: b"x\ny".to_vec(),
                },
            ),
        );
        save(&path, &index).unwrap();
        assert_eq!(load_marked(&path), (index.clone(), None));
        save_marked(&path, &index, Some(17)).unwrap();
        assert_eq!(load_marked(&path), (index.clone(), Some(17)));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("logged=17", "logged=x")).unwrap();
        assert_eq!(load_marked(&path), (Index::new(), None)); // a header not understood: none
        std::fs::write(&path, format!("{HEADER}\ntorn")).unwrap();
        assert!(load(&path).is_empty());
        assert!(load(&dir.path().join("none")).is_empty());
    }
}
