//! Hashing beside a call: a file tool's old bytes are recognised (compared with the bytes a
//! file tool wrote there last) or hashed on a thread of their own while the commit runs on the
//! call's, so the call pays a hand-off, not the work (about 40 microseconds to hash 64 KB here,
//! 50 to compare 1 MiB). One thread serves the process, started with the first job; a job whose
//! thread is gone is done by the caller.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::later::Shared;
use super::store::hex;

/// Bytes to hash, and the bytes (with their hash) they may be.
type Job = (Shared, Option<(String, Shared)>, SyncSender<String>);

/// Makes the calling thread a batch thread (`SCHED_BATCH`): woken, it waits for a free core
/// rather than preempting the call that woke it (which would then wait for the very work it
/// handed off); under load it still gets its fair share. For the store's helper threads.
pub(crate) fn batch_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is valid for the call. A refusal leaves
        // the thread as it was.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    }
}

fn hasher() -> &'static Mutex<Option<Sender<Job>>> {
    static HASHER: OnceLock<Mutex<Option<Sender<Job>>>> = OnceLock::new();
    HASHER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("checkpoint-hasher".into())
            .spawn(move || {
                batch_thread();
                for (data, known, done) in rx {
                    let _ = done.send(hash_of(&data, known));
                }
            });
        Mutex::new(started.ok().map(|_| tx))
    })
}

/// SHA-256 of `data`, 64 hex chars.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// The hash of `data`: `known`'s when its bytes are the same, else computed.
fn hash_of(data: &Shared, known: Option<(String, Shared)>) -> String {
    match known {
        Some((hash, bytes)) if (*bytes).as_ref() == (**data).as_ref() => hash,
        _ => sha256_hex((**data).as_ref()),
    }
}

/// A hash being found beside the caller.
pub struct Hashing {
    data: Shared,
    known: Option<(String, Shared)>,
    done: Option<Receiver<String>>,
}

/// Starts finding the SHA-256 of `data` beside the caller: `known`'s hash when its bytes are
/// `data`'s (compared there), else `data` hashed.
pub fn sha256_beside(data: Shared, known: Option<(String, Shared)>) -> Hashing {
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let sent = hasher()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(|tx| tx.send((data.clone(), known.clone(), done_tx)).is_ok());
    Hashing {
        data,
        known,
        done: sent.then_some(done_rx),
    }
}

impl Hashing {
    /// The hash, waiting for it (or found here when the thread could not take the job).
    pub fn wait(self) -> String {
        match self.done.and_then(|rx| rx.recv().ok()) {
            Some(hash) => hash,
            None => hash_of(&self.data, self.known),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn hashes_beside_as_here() {
        let data: Shared = Arc::new(b"old bytes\n".repeat(1000));
        let hash = sha256_hex((*data).as_ref());
        let other: Shared = Arc::new(b"other".to_vec());
        let pending: Vec<Hashing> = (0..3).map(|_| sha256_beside(data.clone(), None)).collect();
        for p in pending {
            assert_eq!(p.wait(), hash);
        }
        // Known bytes give their known hash; other bytes are hashed.
        let same = sha256_beside(data.clone(), Some(("k".into(), data.clone())));
        assert_eq!(same.wait(), "k");
        let differ = sha256_beside(data.clone(), Some(("k".into(), other)));
        assert_eq!(differ.wait(), hash);
    }
}
