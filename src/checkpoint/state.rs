//! What a checkpoint knows of one path: its metadata as a walk sees it ([`Meta`]) and its
//! content state ([`State`]: a file's content hash and mode, a directory, a symlink's target,
//! or nothing there), and the text forms both take on disk (`esc`/`unesc` for path bytes).

use std::ffi::CString;
use std::os::fd::RawFd;

/// The kinds of entry a checkpoint tracks (FIFOs, sockets and devices are skipped, as the
/// walkers skip them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
}

/// An entry's metadata from `lstat`: what tells a walk that it may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// File, directory or symlink.
    pub kind: Kind,
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
    /// `st_size` in bytes.
    pub size: u64,
    /// `st_mtime` in nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// `st_ctime` in nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// How long after a change an entry's timestamps may still read the same (the kernel stamps
/// files from a coarse clock, ticking every 1 to 10 ms): an entry changed this recently before
/// a look is "racy", as git calls it, and its metadata cannot vouch for its content.
pub const RACY_NS: i64 = 20_000_000;

/// The wall clock in nanoseconds since the epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Meta {
    /// Whether a file or symlink was changed at or after `since_ns` (a look's start less
    /// [`RACY_NS`]): a later change in the same clock tick would leave the same metadata.
    pub fn is_racy(&self, since_ns: i64) -> bool {
        self.kind != Kind::Dir && (self.mtime_ns >= since_ns || self.ctime_ns >= since_ns)
    }

    /// This metadata as the index keeps it when racy: a modification time no live entry has,
    /// so the next look reads the content again.
    pub fn settled(self, since_ns: i64) -> Meta {
        if self.is_racy(since_ns) {
            Meta {
                mtime_ns: i64::MIN,
                ..self
            }
        } else {
            self
        }
    }

    /// The metadata of `st`, or `None` for an entry kind checkpoints skip.
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    pub fn of(st: &libc::stat) -> Option<Meta> {
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => return None,
        };
        Some(Meta {
            kind,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
            ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
            mode: st.st_mode & 0o7777,
        })
    }

    /// Whether nothing a checkpoint records can differ between the two: a directory by its
    /// kind and mode (its times change with its entries, which are walked themselves), anything
    /// else by every field.
    pub fn same(&self, other: &Meta) -> bool {
        if self.kind == Kind::Dir && other.kind == Kind::Dir {
            self.mode == other.mode
        } else {
            self == other
        }
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`; `None` when there is nothing (or it cannot be
/// stat'ed).
pub fn lstat_at(dir: RawFd, name: &[u8]) -> std::io::Result<libc::stat> {
    let c = CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: st is written by fstatat before it is read; c is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

/// The content state of a path a checkpoint can restore (or knows it cannot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Nothing at the path.
    Absent,
    /// A regular file.
    File {
        /// SHA-256 of its bytes, 64 hex chars (`?` when it could not be read).
        hash: String,
        /// Its size in bytes.
        size: u64,
        /// Its permission bits.
        mode: u32,
        /// Whether its bytes are in the store (false above `max_file_bytes` or unreadable).
        stored: bool,
    },
    /// A directory and its permission bits.
    Dir {
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link and its target (bytes, as `readlink` gives them).
    Symlink {
        /// Where it points, unresolved.
        target: Vec<u8>,
    },
}

impl State {
    /// Whether both name the same content, mode and kind (`stored` aside).
    pub fn same(&self, other: &State) -> bool {
        match (self, other) {
            (
                State::File {
                    hash: a, mode: ma, ..
                },
                State::File {
                    hash: b, mode: mb, ..
                },
            ) => a == b && ma == mb && a != "?",
            _ => self == other,
        }
    }

    /// The state's hash as a plan shows it: the content hash of a file, `dir` for a directory,
    /// `symlink:` and the target for a symlink, `None` for nothing.
    pub fn shown_hash(&self) -> Option<String> {
        match self {
            State::Absent => None,
            State::File { hash, .. } => Some(hash.clone()),
            State::Dir { .. } => Some("dir".to_string()),
            State::Symlink { target } => Some(format!("symlink:{}", esc(target))),
        }
    }

    /// The bytes this state keeps in the store (a stored file's size).
    pub fn kept_bytes(&self) -> u64 {
        match self {
            State::File {
                size, stored: true, ..
            } => *size,
            _ => 0,
        }
    }

    /// The object hash this state needs, if any.
    pub fn object(&self) -> Option<&str> {
        match self {
            State::File {
                hash, stored: true, ..
            } => Some(hash),
            _ => None,
        }
    }

    /// The state as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            State::Absent => json!({"k": "a"}),
            State::File {
                hash,
                size,
                mode,
                stored,
            } => json!({"k": "f", "h": hash, "s": size, "m": mode, "st": stored}),
            State::Dir { mode } => json!({"k": "d", "m": mode}),
            State::Symlink { target } => json!({"k": "l", "t": esc(target)}),
        }
    }

    /// The state [`State::to_json`] wrote, or `None` for anything else.
    pub fn from_json(v: &serde_json::Value) -> Option<State> {
        Some(match v.get("k")?.as_str()? {
            "a" => State::Absent,
            "f" => State::File {
                hash: v.get("h")?.as_str()?.to_string(),
                size: v.get("s")?.as_u64()?,
                mode: v.get("m")?.as_u64()? as u32,
                stored: v.get("st")?.as_bool()?,
            },
            "d" => State::Dir {
                mode: v.get("m")?.as_u64()? as u32,
            },
            "l" => State::Symlink {
                target: unesc(v.get("t")?.as_str()?)?,
            },
            _ => return None,
        })
    }
}

/// `bytes` as text for the store's files: UTF-8 kept, except `%`, control characters and
/// bytes that are not UTF-8, written `%XX`.
pub fn esc(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' || (c as u32) < 0x20 || c == '\u{7f}' {
                out.push_str(&format!("%{:02X}", c as u32));
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The bytes [`esc`] wrote as `text`; `None` for a malformed escape.
pub fn unesc(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        for raw in [
            &b"plain/path.txt"[..],
            b"100%",
            b"tab\there\nnl",
            b"caf\xc3\xa9",
            b"bad\xff\xfeutf8",
        ] {
            let e = esc(raw);
            assert!(!e.contains('\t') && !e.contains('\n'));
            assert_eq!(unesc(&e).unwrap(), raw);
        }
        assert_eq!(esc(b"a%b\xff"), "a%25b%FF");
        assert_eq!(unesc("%zz"), None);
    }

    /// An entry changed within [`RACY_NS`] of a look is kept with metadata no live entry has,
    /// so the next look reads it again (a same-size rewrite in the same clock tick leaves every
    /// field as it was; fine-grained clocks make that unreproducible end to end).
    #[test]
    fn racy_entries_are_looked_at_again() {
        let live = Meta {
            kind: Kind::File,
            dev: 1,
            ino: 2,
            size: 4,
            mtime_ns: 1_000,
            ctime_ns: 1_000,
            mode: 0o644,
        };
        assert!(live.is_racy(1_000));
        assert!(!live.settled(1_000).same(&live));
        assert!(!live.is_racy(1_001));
        assert!(live.settled(1_001).same(&live));
        let dir = Meta {
            kind: Kind::Dir,
            ..live
        };
        assert!(!dir.is_racy(0));
    }

    #[test]
    fn states_round_trip_through_json() {
        for s in [
            State::Absent,
            State::File {
                hash: "ab".into(),
                size: 3,
                mode: 0o644,
                stored: true,
            },
            State::Dir { mode: 0o755 },
            State::Symlink {
                target: b"../x\xff".to_vec(),
            },
        ] {
            assert_eq!(State::from_json(&s.to_json()).unwrap(), s);
        }
    }
}
