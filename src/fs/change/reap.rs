//! Frees what a finished change no longer needs off the caller's path. Closing the last
//! descriptor of a file that a replacement unlinked makes the kernel free its pages and blocks,
//! and unmapping a big buffer returns its pages: milliseconds each for a file of tens of MiB,
//! and neither changes a result, a byte on disk or an event. One background thread, started on
//! first use, drops what it is handed, in order.
//!
//! In a process forked after the thread started (the thread is not there) and when the thread
//! cannot be started, the value is dropped at once, as without this module.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// The process that started the thread, and where values are handed to it.
type Reaper = (u32, Sender<Box<dyn Send>>);

static REAPER: OnceLock<Option<Reaper>> = OnceLock::new();

fn start() -> Option<Reaper> {
    let (tx, rx) = channel::<Box<dyn Send>>();
    std::thread::Builder::new()
        .name("hrs-reap".into())
        .spawn(move || rx.into_iter().for_each(drop))
        .ok()?;
    Some((std::process::id(), tx))
}

/// Drops `value` on the background thread (now, on this one, where there is none).
pub fn later<T: Send + 'static>(value: T) {
    if let Some((pid, tx)) = REAPER.get_or_init(start) {
        if *pid == std::process::id() {
            // A send only fails when the thread is gone; the value then comes back and drops here.
            let _ = tx.send(Box::new(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    /// Tells, when dropped, on which thread.
    struct Probe(std::sync::mpsc::SyncSender<Option<String>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            let _ = self
                .0
                .send(std::thread::current().name().map(str::to_string));
        }
    }

    #[test]
    fn drops_on_the_background_thread() {
        let (tx, rx) = sync_channel(1);
        later(Probe(tx));
        let on = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("dropped");
        assert_eq!(on.as_deref(), Some("hrs-reap"));
    }
}
