//! Background jobs followed on disk. A job a checkpointed call left running has its changes
//! counted against that call's checkpoint by the process that follows it (Python's
//! `RootState.sweep_jobs`), for as long as it runs. That process may end first (it exits or is
//! killed) while the job goes on writing. So each followed job has a file in `<store>/jobs/`,
//! named by its call, holding what following it takes ([`JobRecord`]), and the follower holds
//! an exclusive `flock` on that file for as long as it follows. A process that can take the
//! lock of such a file ([`Followed::orphans`]) knows its follower is gone and follows the job
//! from then on, the lock kept: what changed since the index on disk is then the job's, not the
//! baseline's.
//!
//! A record is never seen unlocked while its follower lives: it is written under a temporary
//! name, locked, then renamed into place; an update is a new file, locked, renamed over the old
//! one. The kernel drops a dead process's locks, so no liveness guess (a pid) is involved.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::calls;
use super::CallInfo;

/// A followed background job: whose call it is and what following it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The call that started the job (its checkpoints get the job's changes).
    pub call: CallInfo,
    /// The job's directory on this host (`.pydantic-ai-harness/shell/<id>`), where its status
    /// is published.
    pub directory: String,
    /// The latest checkpoint of its call the follower knows of; `None` before the job changed
    /// anything.
    pub checkpoint_id: Option<String>,
}

impl JobRecord {
    fn to_json(&self) -> Value {
        json!({
            "run_id": self.call.run_id,
            "tool_call_id": self.call.tool_call_id,
            "tool_name": self.call.tool_name,
            "created_at": self.call.created_at,
            "directory": self.directory,
            "checkpoint_id": self.checkpoint_id,
        })
    }

    fn from_json(v: &Value) -> Option<JobRecord> {
        Some(JobRecord {
            call: CallInfo {
                run_id: v.get("run_id")?.as_str().map(str::to_string),
                tool_call_id: Some(v.get("tool_call_id")?.as_str()?.to_string()),
                tool_name: v.get("tool_name")?.as_str()?.to_string(),
                created_at: v.get("created_at")?.as_f64()?,
            },
            directory: v.get("directory")?.as_str()?.to_string(),
            checkpoint_id: v.get("checkpoint_id")?.as_str().map(str::to_string),
        })
    }
}

/// How old a temporary record must be before [`Followed::orphans`] removes it (a follower
/// writes and renames one within milliseconds; an older one is a write a kill cut short).
const TEMPORARY_LEFT_AFTER: Duration = Duration::from_secs(60);

/// The jobs this store follows, each with the locked descriptor of its record.
pub struct Followed {
    /// `<store>/jobs`.
    dir: PathBuf,
    /// `dir` for [`Followed::none_at`].
    dir_c: CString,
    held: Mutex<HashMap<String, (File, JobRecord)>>,
}

fn try_lock(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: the descriptor is open for the life of `file`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// Whether `file` is still the file at `path` (not unlinked or replaced since it was opened).
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Followed {
    /// The followed jobs of the store in `store_dir` (none yet).
    pub fn new(store_dir: &Path) -> Followed {
        let dir = store_dir.join("jobs");
        // A path the file system gave holds no NUL byte; an empty one then never exists.
        let dir_c = CString::new(dir.as_os_str().as_bytes()).unwrap_or_default();
        Followed {
            dir,
            dir_c,
            held: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (File, JobRecord)>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether no job is followed by anyone: there is no `jobs/` directory (it goes with its
    /// last record). One `lstat`: a file tool's checkpoint asks on every call.
    pub fn none_at(&self) -> bool {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a NUL-terminated path and a buffer of the size `lstat` writes.
        let failed = unsafe { libc::lstat(self.dir_c.as_ptr(), st.as_mut_ptr()) } != 0;
        failed && io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
    }

    /// Follows `record`'s job (or notes its new `checkpoint_id` when followed already): its
    /// record written, locked, and renamed into place.
    ///
    /// Errors: `InvalidInput` for a call without a tool call id; the file system's (a full or
    /// read-only disk), nothing followed then.
    pub fn follow(&self, record: JobRecord) -> io::Result<()> {
        let Some(name) = calls::name_of(&record.call) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a job's call has no tool call id",
            ));
        };
        // Held throughout: two follows in this process never share the temporary file.
        let mut held = self.lock();
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!("{name}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC)
                .open(&tmp)?;
            if !try_lock(&file)? {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "a job record being written is locked",
                ));
            }
            file.write_all(record.to_json().to_string().as_bytes())?;
            std::fs::rename(&tmp, self.dir.join(&name))?;
            Ok(file)
        })();
        match result {
            Ok(file) => {
                // The previous record's descriptor (if any) goes: its file was just replaced.
                held.insert(name, (file, record));
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Stops following `call`'s job: its record removed (then `jobs/`, when it was the last).
    /// Not followed: nothing done.
    pub fn unfollow(&self, call: &CallInfo) {
        let Some(name) = calls::name_of(call) else {
            return;
        };
        let Some((file, _)) = self.lock().remove(&name) else {
            return;
        };
        let path = self.dir.join(&name);
        if still_at(&file, &path) {
            let _ = std::fs::remove_file(&path);
        }
        drop(file); // after the unlink: a process waiting for the lock finds no record
        let _ = std::fs::remove_dir(&self.dir); // refused while another record is there
    }

    /// The jobs whose follower is gone (its lock on their record could be taken), followed by
    /// this store from now on (the locks kept), oldest call first. A record that cannot be read
    /// is removed; so is a temporary one a kill left (older than a minute).
    ///
    /// Errors: none; a file that cannot be opened or locked is left for the next look.
    pub fn orphans(&self) -> Vec<JobRecord> {
        if self.none_at() {
            return Vec::new();
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut held = self.lock();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if name.ends_with(".tmp") {
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .is_some_and(|age| age > TEMPORARY_LEFT_AFTER);
                if old {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            if held.contains_key(&name) {
                continue;
            }
            let Ok(mut file) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(&path)
            else {
                continue;
            };
            if !try_lock(&file).unwrap_or(false) || !still_at(&file, &path) {
                continue; // followed by a live process, or gone (unfollowed) meanwhile
            }
            let mut text = Vec::new();
            let record = file
                .read_to_end(&mut text)
                .ok()
                .and_then(|_| serde_json::from_slice::<Value>(&text).ok())
                .and_then(|v| JobRecord::from_json(&v));
            match record {
                Some(record) if calls::name_of(&record.call).as_deref() == Some(&name) => {
                    held.insert(name, (file, record.clone()));
                    out.push(record);
                }
                _ => {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        drop(held);
        let _ = std::fs::remove_dir(&self.dir); // only unreadable records were there
        out.sort_by(|a, b| a.call.created_at.total_cmp(&b.call.created_at));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, created_at: f64) -> JobRecord {
        JobRecord {
            call: CallInfo {
                run_id: Some("r".into()),
                tool_call_id: Some(id.into()),
                tool_name: "start_command".into(),
                created_at,
            },
            directory: format!("/w/.pydantic-ai-harness/shell/{id}"),
            checkpoint_id: None,
        }
    }

    /// A followed job's record is locked for as long as its store lives: another store (another
    /// process, as far as `flock` goes) does not take it; once the first is gone, the second
    /// takes the job over, its latest checkpoint id with it, and no third store takes it then.
    #[test]
    fn a_job_is_taken_over_only_when_its_follower_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let first = Followed::new(dir.path());
        assert!(first.none_at());
        let (old, new) = (record("old", 1.0), record("new", 2.0));
        first.follow(new.clone()).unwrap();
        first.follow(old.clone()).unwrap();
        let moved = JobRecord {
            checkpoint_id: Some("cp-7".into()),
            ..old.clone()
        };
        first.follow(moved.clone()).unwrap(); // an update: the same job's record replaced
        let second = Followed::new(dir.path());
        assert!(!second.none_at());
        assert!(second.orphans().is_empty());
        drop(first);
        assert_eq!(second.orphans(), vec![moved.clone(), new.clone()]); // oldest call first
        assert!(second.orphans().is_empty()); // its own now
        let third = Followed::new(dir.path());
        assert!(third.orphans().is_empty());
        second.unfollow(&moved.call);
        second.unfollow(&new.call);
        assert!(second.none_at()); // the last record took the directory
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty());
    }

    /// An unreadable record is removed by the look that finds it unlocked; a temporary file is
    /// left while it may be a write in progress.
    #[test]
    fn junk_is_cleared_and_a_fresh_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = dir.path().join("jobs");
        std::fs::create_dir(&jobs).unwrap();
        std::fs::write(jobs.join("0123abcd"), b"{\"run_id\"").unwrap();
        std::fs::write(jobs.join("4567.99.tmp"), b"").unwrap();
        let followed = Followed::new(dir.path());
        assert!(followed.orphans().is_empty());
        let left: Vec<_> = std::fs::read_dir(&jobs)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("4567.99.tmp")]);
    }

    #[test]
    fn a_call_without_a_tool_call_id_cannot_be_followed() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = record("x", 1.0);
        r.call.tool_call_id = None;
        let e = Followed::new(dir.path()).follow(r).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(!dir.path().join("jobs").exists());
    }
}
