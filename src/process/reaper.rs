//! Ending a command's whole process tree, including what left its process group.
//!
//! Every shell is started as a child subreaper (`PR_SET_CHILD_SUBREAPER`, kept across
//! `execve`): a descendant whose parent exits (a double fork, a `setsid ... &` in a subshell)
//! is reparented to the shell rather than to init, so it stays in the shell's tree. Before a
//! stop, timeout or cancellation signals the group, [`Tree::collect`] walks that tree through
//! `/proc/<pid>/task/<tid>/children` and holds a pidfd per process (no PID-reuse race), and
//! [`Tree::kill`] ends whatever of it is still alive. The shells reap the orphans they adopt
//! (`sh` waits for any child); the job wrapper stays until its adopted descendants are gone.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::sys::signal::Signal;

use crate::process::group::signal_group;

/// Walks of the tree at most, each after one that found new processes.
const MAX_PASSES: usize = 8;

/// Rounds of [`Tree::end_outside`] at most, each killing the descendants outside the group
/// that the walk before found (a script may start more while the group runs to reap them).
pub const OUTSIDE_ROUNDS: usize = 8;

/// The processes below a root at one moment, each held by a pidfd.
#[derive(Debug, Default)]
pub struct Tree {
    members: Vec<(i32, OwnedFd)>,
}

/// The PIDs of `pid`'s children, from every thread's `children` file.
#[cfg(target_os = "linux")]
fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let path = task.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|s| s.parse::<i32>().ok()),
            );
        }
    }
    out
}

#[cfg(not(target_os = "linux"))]
fn children(_pid: i32) -> Vec<i32> {
    Vec::new()
}

fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open returns a new fd we own, or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Tree {
    /// Every descendant of `root` outside `root`'s process group (the group is left to its
    /// own `SIGTERM` and grace), found depth-first through the whole tree.
    ///
    /// Each is stopped (`SIGSTOP`) so it cannot fork past the walk; [`Tree::kill`] or
    /// [`Tree::resume`] must follow.
    pub fn collect(root: i32) -> Tree {
        Tree::split(root, true).0
    }

    /// Every descendant of `root` inside its process group (not stopped), to wait for with
    /// [`Tree::wait_reaped`] once the group is signalled.
    pub fn group(root: i32) -> Tree {
        Tree::split(root, false).1
    }

    /// One walk for both: `(outside, inside)` the group, as [`Tree::collect`] (stopped) and
    /// [`Tree::group`] give them; without `outside`, that part is left empty and untouched.
    pub fn split(root: i32, outside: bool) -> (Tree, Tree) {
        Tree::split_at_most(root, outside, usize::MAX).unwrap_or_default()
    }

    /// [`Tree::split`] of a tree of at most `max` processes below `root`; `None` (and the
    /// processes stopped so far continued) as soon as the walk finds more, so a caller that
    /// must not wait long (an event loop) hands a big tree to one that may.
    pub fn split_at_most(root: i32, outside: bool, max: usize) -> Option<(Tree, Tree)> {
        let mut trees = (Tree::default(), Tree::default());
        if root <= 1 {
            return Some(trees);
        }
        let mut seen = std::collections::HashSet::new();
        // A process whose parent exits mid-walk moves up to the subreaper, perhaps into a list
        // already read: walk again until a pass finds nothing new (stopped ones cannot fork).
        for _ in 0..MAX_PASSES {
            let found = seen.len();
            let mut queue = vec![root];
            while let Some(pid) = queue.pop() {
                for child in children(pid) {
                    queue.push(child);
                    if !seen.insert(child) {
                        continue;
                    }
                    if seen.len() > max {
                        trees.0.resume();
                        return None;
                    }
                    // SAFETY: getpgid on any PID only reads.
                    let in_group = unsafe { libc::getpgid(child) } == root;
                    if !in_group && !outside {
                        continue;
                    }
                    if let Some(fd) = pidfd(child) {
                        if in_group {
                            trees.1.members.push((child, fd));
                        } else {
                            send(&fd, libc::SIGSTOP);
                            trees.0.members.push((child, fd));
                        }
                    }
                }
            }
            if seen.len() == found {
                break;
            }
        }
        Some(trees)
    }

    /// Ends every descendant of `root` (a group leader) outside its group, while a script may
    /// still be starting them (a loop of `(setsid cmd &)`): stops the group (`SIGSTOP`) so a
    /// walk finds every such descendant and nothing forks past it, kills them while the group
    /// runs again, so its shells reap them within `grace` ([`Tree::kill`]), and stops the group
    /// for the next walk, until a walk finds none (at most [`OUTSIDE_ROUNDS`]; what the last
    /// finds is killed without the wait).
    ///
    /// Returns the group's members the last walk found, with the group left stopped: the
    /// caller signals it next (`SIGTERM` then `SIGCONT`, or `SIGKILL`).
    pub async fn end_outside(root: i32, grace: std::time::Duration) -> Tree {
        let _ = signal_group(root, Some(Signal::SIGSTOP));
        let (mut outside, mut inside) = Tree::split(root, true);
        for _ in 0..OUTSIDE_ROUNDS {
            if outside.is_empty() {
                break;
            }
            let _ = signal_group(root, Some(Signal::SIGCONT));
            outside.kill(grace).await;
            let _ = signal_group(root, Some(Signal::SIGSTOP));
            (outside, inside) = Tree::split(root, true);
        }
        outside.kill(std::time::Duration::ZERO).await;
        inside
    }

    /// The pidfds of the collected processes.
    pub fn fds(&self) -> Vec<std::os::fd::RawFd> {
        self.members.iter().map(|(_, fd)| fd.as_raw_fd()).collect()
    }

    /// The PIDs of the collected processes.
    pub fn pids(&self) -> impl Iterator<Item = i32> + '_ {
        self.members.iter().map(|(pid, _)| *pid)
    }

    /// How many processes were collected.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether nothing was collected.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// `SIGKILL` to every collected process still alive, then up to `grace` for their
    /// parents (the subreaper shell, while it lives and waits) to reap them, so none is left
    /// `<defunct>` for an init that may not reap.
    pub async fn kill(&self, grace: std::time::Duration) {
        for (_, fd) in &self.members {
            send(fd, libc::SIGKILL);
        }
        self.wait_reaped(grace).await;
    }

    /// Waits up to `grace` until every collected process has been reaped (`/proc/<pid>` gone).
    pub async fn wait_reaped(&self, grace: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        while self
            .members
            .iter()
            .any(|(pid, _)| std::path::Path::new(&format!("/proc/{pid}")).exists())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// Waits until every collected process has exited (a zombie or reaped), through its pidfd.
    ///
    /// Event-driven: no polling. A pidfd that cannot be watched is skipped.
    pub async fn wait_exited(&self) {
        for (_, fd) in &self.members {
            // SAFETY: the pidfd stays open (owned by `self`) for as long as `watch` is registered.
            let Ok(watch) = (unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(
                    fd.as_raw_fd(),
                    tokio::io::Interest::READABLE,
                )
            }) else {
                continue;
            };
            let _ = watch.readable().await;
        }
    }

    /// `SIGCONT` to every collected process (after a [`Tree::collect`] that is not followed by a kill).
    pub fn resume(&self) {
        for (_, fd) in &self.members {
            send(fd, libc::SIGCONT);
        }
    }
}

fn send(fd: &OwnedFd, signal: libc::c_int) {
    // SAFETY: pidfd_send_signal on a pidfd we own; a process already gone gives ESRCH.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_children_and_grandchildren() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("/bin/sh")
            .process_group(0)
            .args(["-c", "setsid sleep 100 & (setsid sleep 1 &) ; sleep 100"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut tree = Tree::default();
        for _ in 0..200 {
            tree = Tree::collect(pid);
            if !tree.is_empty() {
                break;
            }
            tree.resume();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(tree.len(), 1);
        crate::process::block_on(tree.kill(std::time::Duration::ZERO));
        let _ = child.kill();
        let _ = child.wait();
    }
}
