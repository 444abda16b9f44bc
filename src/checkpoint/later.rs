//! What a file tool's checkpoint writes off the call's path: its commit has the file's new
//! bytes (and an edit's old ones) in memory when it returns, so a writer thread of the store
//! puts them in `objects/`, then appends the checkpoint's line to the log, while the call goes
//! on.
//!
//! The writer does its jobs in the order they were queued, so the log on disk never names an
//! object that is not there: a kill before the writer is done loses the newest checkpoints'
//! lines (as a kill between a commit and its record would), never leaves one that cannot be
//! rewound. After a write failed (a full disk), the lines queued are not appended until a
//! flush took the error. [`Later::flush`] waits until every queued job is done and returns
//! the first error meanwhile; whatever reads objects or writes the log or the index in this
//! process (a diff, a rewind, pruning, the store's drop) flushes first.
//!
//! Other processes never see a write half done: the call that queued them keeps a hold of the
//! store's lock ([`super::coord`]), given back by a last job ([`Later::queue_then`]) once they
//! are on disk.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Bytes shared with whoever made them (a change plan), read by the writer thread.
pub type Shared = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A line to append, made on the writer thread (formatting it is off the call's path too).
pub type Line = Box<dyn FnOnce() -> Vec<u8> + Send>;

/// Writes `data` as object `hash` into the objects directory (the first path) through a
/// temporary file in `tmp/` (the second); nothing when the object is there (`store.rs`).
pub type WriteObject = fn(&Path, &Path, &str, &[u8]) -> io::Result<()>;

enum Job {
    /// An object: its hash and bytes.
    Object(String, Shared),
    /// A line appended to a file (the log), made by the writer; not after a failed write.
    Append(PathBuf, Line),
    /// Anything to do once the jobs before are done (give back a hold of the store's lock).
    Then(Box<dyn FnOnce() + Send>),
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Hashes of the objects queued or being written.
    pending: HashSet<String>,
    /// Whether the writer is doing a job it took off `jobs`.
    busy: bool,
    /// The first error since the last flush.
    error: Option<io::Error>,
    stop: bool,
    /// How many callers wait in [`Later::flush`] (the writer signals `done` only for them).
    flushers: usize,
}

struct Hub {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued or `stop` is set (the writer waits on it).
    work: Condvar,
    /// Signalled when the writer finished a job (flushers wait on it).
    done: Condvar,
}

/// The writer thread of one store and its queue.
pub struct Later {
    hub: Arc<Hub>,
    thread: Mutex<Option<JoinHandle<()>>>,
    objects: PathBuf,
    tmp: PathBuf,
    write: WriteObject,
}

impl Later {
    /// A queue writing objects into `objects` through `tmp` with `write`; the thread starts
    /// with the first job.
    pub fn new(objects: PathBuf, tmp: PathBuf, write: WriteObject) -> Later {
        Later {
            hub: Arc::new(Hub {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    pending: HashSet::new(),
                    busy: false,
                    error: None,
                    stop: false,
                    flushers: 0,
                }),
                work: Condvar::new(),
                done: Condvar::new(),
            }),
            thread: Mutex::new(None),
            objects,
            tmp,
            write,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.hub.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether object `hash` is queued or being written.
    pub fn is_pending(&self, hash: &str) -> bool {
        self.lock().pending.contains(hash)
    }

    /// Whether nothing is queued or being written (a job queued now would be the writer's
    /// only one).
    pub fn is_idle(&self) -> bool {
        let q = self.lock();
        q.jobs.is_empty() && !q.busy
    }

    fn push(&self, job: Job) {
        self.push_all([job]);
    }

    /// Queues `jobs` in order with one wake-up of the writer.
    fn push_all<const N: usize>(&self, jobs: [Job; N]) {
        self.lock().jobs.extend(jobs);
        self.hub.work.notify_one();
        self.start();
    }

    /// Starts the writer thread unless it runs.
    fn start(&self) {
        let mut thread = self.thread.lock().unwrap_or_else(|p| p.into_inner());
        if thread.is_none() {
            let hub = Arc::clone(&self.hub);
            let (objects, tmp, write) = (self.objects.clone(), self.tmp.clone(), self.write);
            *thread = Some(std::thread::spawn(move || run(&hub, &objects, &tmp, write)));
        }
    }

    /// Queues `data` to be written as object `hash`. Returns false when that object is queued
    /// already (nothing queued). The writer is not woken for it: the next job queued (the
    /// checkpoint's line), or a flush, does that, so a call's objects and line cost one wake-up.
    pub fn queue_object(&self, hash: String, data: Shared) -> bool {
        let mut q = self.lock();
        if !q.pending.insert(hash.clone()) {
            return false;
        }
        q.jobs.push_back(Job::Object(hash, data));
        drop(q);
        self.start();
        true
    }

    /// Queues `line` to be appended to the file at `path` (which exists), after every job
    /// queued before, then `then` (as [`Later::queue_then`]), with one wake-up of the writer.
    pub fn queue_append_then(&self, path: PathBuf, line: Line, then: Box<dyn FnOnce() + Send>) {
        self.push_all([Job::Append(path, line), Job::Then(then)]);
    }

    /// Whether a write failed since the last flush (a flush returns the error).
    pub fn failed(&self) -> bool {
        self.lock().error.is_some()
    }

    /// Queues `then` to run once every job queued before it is done (failed or not).
    pub fn queue_then(&self, then: Box<dyn FnOnce() + Send>) {
        self.push(Job::Then(then));
    }

    /// Waits until every queued job is done; the first error since the last flush.
    pub fn flush(&self) -> io::Result<()> {
        let mut q = self.lock();
        if !q.jobs.is_empty() {
            self.hub.work.notify_one(); // objects queued without a wake-up
        }
        q.flushers += 1;
        while !q.jobs.is_empty() || q.busy {
            q = self.hub.done.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        q.flushers -= 1;
        match q.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn run(hub: &Hub, objects: &Path, tmp: &Path, write: WriteObject) {
    super::beside::batch_thread();
    // The log's descriptor, kept from one line to the next.
    let mut log = super::log::LogFile::default();
    let gone = || Err(io::Error::from(io::ErrorKind::NotFound));
    let mut q = hub.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(job) = q.jobs.pop_front() {
            q.busy = true;
            let failed = q.error.is_some();
            drop(q);
            let (hash, result) = match job {
                Job::Object(hash, data) => {
                    let result = write(objects, tmp, &hash, (*data).as_ref());
                    (Some(hash), result)
                }
                // An object it names may be missing: the line is dropped (the flush that takes
                // the error has the store reload what is on disk).
                Job::Append(_, _) if failed => (None, Ok(())),
                Job::Append(path, line) => (None, log.append(&path, &line(), gone)),
                Job::Then(then) => {
                    then();
                    (None, Ok(()))
                }
            };
            q = hub.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.busy = false;
            if let Some(h) = hash {
                q.pending.remove(&h);
            }
            if let Err(e) = result {
                q.error.get_or_insert(e);
            }
            if q.flushers > 0 {
                hub.done.notify_all();
            }
            continue;
        }
        if q.stop {
            return;
        }
        q = hub.work.wait(q).unwrap_or_else(|p| p.into_inner());
    }
}

impl Drop for Later {
    /// Does what is queued, then ends the thread.
    fn drop(&mut self) {
        self.lock().stop = true;
        self.hub.work.notify_all();
        let thread = self
            .thread
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}
