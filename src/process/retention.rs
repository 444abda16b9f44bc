//! Pruning the directories of finished background jobs, by age and by total size.
//!
//! Only a job directory (a 32-hex name under the jobs directory) whose `status.json` holds an
//! exit code is a candidate: a running job, or one whose launch is in flight, is never touched.
//! A job's age counts from its status's last change (when it finished); its size is what its
//! directory holds. A launch's temporary directory (`.<job>.claim-<pid>-<n>`, or
//! `.<job>.stale-<pid>-<n>` for a stale claim being removed) left by a launcher that died before
//! renaming or removing it goes too, once no process has that pid.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::process::job::{exit_code, status_text};

/// What [`prune`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Job directories removed.
    pub jobs: usize,
    /// Bytes their files held.
    pub bytes: u64,
}

struct Finished {
    dir: PathBuf,
    finished_at: SystemTime,
    bytes: u64,
}

fn is_job_name(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    })
}

/// The pid of the launcher that made `name` when it is a launch's temporary directory
/// (`.<job>.claim-<pid>-<n>` or `.<job>.stale-<pid>-<n>`, see `job::sibling`).
fn temporary_owner(name: &str) -> Option<libc::pid_t> {
    let rest = name.strip_prefix('.')?;
    let mut parts = rest.rsplitn(3, '-');
    let (_n, pid, head) = (parts.next()?, parts.next()?, parts.next()?);
    let job = head
        .strip_suffix(".claim")
        .or_else(|| head.strip_suffix(".stale"))?;
    if !is_job_name(job) {
        return None;
    }
    pid.parse().ok().filter(|&p: &libc::pid_t| p > 0)
}

/// Whether no process has `pid` (`kill(pid, 0)` fails with `ESRCH`; a process of another user
/// is there: `EPERM`).
pub(crate) fn gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks that the process exists.
    unsafe { libc::kill(pid, 0) != 0 && *libc::__errno_location() == libc::ESRCH }
}

fn finished_jobs(base: &Path) -> Vec<Finished> {
    let Ok(entries) = fs::read_dir(base) else {
        return Vec::new();
    };
    let mut jobs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if let Some(owner) = name.to_str().and_then(temporary_owner) {
            // A dead launcher's leftover: nothing refers to it.
            if gone(owner) {
                let _ = fs::remove_dir_all(entry.path());
            }
            continue;
        }
        if !name.to_str().is_some_and(is_job_name) {
            continue;
        }
        let dir = entry.path();
        if status_text(&dir).and_then(|s| exit_code(&s)).is_none() {
            continue;
        }
        let Ok(finished_at) = fs::metadata(dir.join("status.json")).and_then(|m| m.modified())
        else {
            continue;
        };
        let bytes = dir_bytes(&dir);
        jobs.push(Finished {
            dir,
            finished_at,
            bytes,
        });
    }
    jobs
}

/// Removes the finished jobs under `base` that finished more than `max_age` ago, then, oldest
/// first, finished jobs until those left hold at most `max_total_bytes`. `None` skips that rule.
/// Dead launchers' temporary directories are removed too (not counted).
///
/// Directories that cannot be removed are left (and not counted); errors are not reported.
pub fn prune(base: &Path, max_age: Option<Duration>, max_total_bytes: Option<u64>) -> Pruned {
    let mut jobs = finished_jobs(base);
    jobs.sort_by_key(|j| j.finished_at);
    let now = SystemTime::now();
    let mut total: u64 = jobs.iter().map(|j| j.bytes).sum();
    let mut pruned = Pruned::default();
    for job in &jobs {
        let old = max_age.is_some_and(|age| {
            now.duration_since(job.finished_at)
                .is_ok_and(|since| since > age)
        });
        let over = max_total_bytes.is_some_and(|cap| total > cap);
        if !(old || over) {
            continue;
        }
        if fs::remove_dir_all(&job.dir).is_ok() {
            total -= job.bytes;
            pruned.jobs += 1;
            pruned.bytes += job.bytes;
        }
    }
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_launchers_temporary_directories_go_and_a_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let job = format!("{:032x}", 7);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = std::process::id();
        let names = [
            format!(".{job}.claim-{dead}-0"),
            format!(".{job}.stale-{dead}-3"),
            format!(".{job}.claim-{me}-1"),
            format!(".notajob.claim-{dead}-0"),
        ];
        for name in &names {
            fs::create_dir(base.join(name)).unwrap();
            fs::write(base.join(name).join("launch.ready"), "").unwrap();
        }
        assert_eq!(prune(base, None, None), Pruned::default());
        let mut left: Vec<String> = fs::read_dir(base)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![names[2].clone(), names[3].clone()];
        want.sort();
        assert_eq!(left, want);
    }

    fn job(base: &Path, name: &str, status: &str, log_bytes: usize) -> PathBuf {
        let dir = base.join(name);
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("status.json"), status).unwrap();
        fs::write(dir.join("output.log"), vec![b'x'; log_bytes]).unwrap();
        dir
    }

    #[test]
    fn keeps_running_jobs_and_prunes_oldest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let a = format!("{:032x}", 1);
        let b = format!("{:032x}", 2);
        let c = format!("{:032x}", 3);
        let old = job(base, &a, r#"{"pid": 1, "exit_code": 0}"#, 1000);
        let set = |d: &Path, secs: u64| {
            let t = SystemTime::now() - Duration::from_secs(secs);
            fs::File::options()
                .write(true)
                .open(d.join("status.json"))
                .unwrap()
                .set_modified(t)
                .unwrap();
        };
        set(&old, 100);
        let newer = job(base, &b, r#"{"pid": 2, "exit_code": 1}"#, 1000);
        set(&newer, 50);
        let running = job(base, &c, r#"{"pid": 3, "exit_code": null}"#, 5000);
        fs::create_dir(base.join("run-state")).unwrap();
        // The total of finished jobs is about 2 KB: a 1.5 KB cap removes the oldest only.
        let pruned = prune(base, None, Some(1500));
        assert_eq!(pruned.jobs, 1);
        assert!(!old.exists() && newer.exists() && running.exists());
        // By age: the newer one finished 50 s ago.
        assert_eq!(prune(base, Some(Duration::from_secs(60)), None).jobs, 0);
        assert_eq!(prune(base, Some(Duration::from_secs(10)), None).jobs, 1);
        assert!(!newer.exists() && running.exists() && base.join("run-state").exists());
    }
}
