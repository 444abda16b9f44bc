//! Jobs that make more jobs (directories to list, each finding more directories), worked on
//! by several threads until none is left, each thread with its own state.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use crate::error::Result;

/// The shared queue: jobs waiting, and how many threads are working on one.
struct Queue<J> {
    jobs: Vec<J>,
    busy: usize,
}

/// Runs `work` on `first` and every job it adds (to the `Vec` it is given), on `threads`
/// threads (newest job first, so the queue stays as small as a depth-first walk's); returns
/// each thread's state (made by `init`) once no job is left.
///
/// Errors: the first error `work` returns; the other threads stop at their next job.
pub fn run_jobs<J, S, I, W>(threads: usize, first: J, init: I, work: W) -> Result<Vec<S>>
where
    J: Send,
    S: Send,
    I: Fn() -> S + Sync,
    W: Fn(&mut S, J, &mut Vec<J>) -> Result<()> + Sync,
{
    let queue = Mutex::new(Queue {
        jobs: vec![first],
        busy: 0,
    });
    let wake = Condvar::new();
    let failed = AtomicBool::new(false);
    let error = Mutex::new(None);
    // Each worker works for the calling tool call (names it escapes, `EscapeScope`).
    let call = crate::fs::text::names::EscapeScope::current();
    let states = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                let (queue, wake, failed, error, init, work, call) =
                    (&queue, &wake, &failed, &error, &init, &work, &call);
                scope.spawn(move || {
                    call.enter(|| {
                        let mut state = init();
                        let mut found = Vec::new();
                        loop {
                            let job = {
                                let mut q = queue.lock().unwrap();
                                loop {
                                    if failed.load(Ordering::Relaxed) {
                                        break None;
                                    }
                                    if let Some(job) = q.jobs.pop() {
                                        q.busy += 1;
                                        break Some(job);
                                    }
                                    if q.busy == 0 {
                                        break None;
                                    }
                                    q = wake.wait(q).unwrap();
                                }
                            };
                            let Some(job) = job else { break };
                            let outcome = work(&mut state, job, &mut found);
                            let mut q = queue.lock().unwrap();
                            q.busy -= 1;
                            // A waiting thread waits for a job, the end, or an error (a wake-up
                            // is a system call: none after a job that changed nothing of these).
                            let news = !found.is_empty() || q.busy == 0 || outcome.is_err();
                            if let Err(err) = outcome {
                                failed.store(true, Ordering::Relaxed);
                                error.lock().unwrap().get_or_insert(err);
                            }
                            // Newest last, so `pop` takes the first of them next.
                            q.jobs.extend(found.drain(..).rev());
                            drop(q);
                            if news {
                                wake.notify_all();
                            }
                        }
                        wake.notify_all();
                        state
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect::<Vec<S>>()
    });
    match error.into_inner().unwrap() {
        Some(err) => Err(err),
        None => Ok(states),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind};

    /// Every job, and every job a job adds, is worked once; an error stops the run.
    #[test]
    fn jobs_spawn_jobs_until_none_is_left() {
        // Job n adds 2n+1 and 2n+2 below 1000: a binary tree of 1000 nodes.
        let work = |seen: &mut Vec<u32>, n: u32, more: &mut Vec<u32>| {
            seen.push(n);
            more.extend([2 * n + 1, 2 * n + 2].into_iter().filter(|&m| m < 1000));
            Ok(())
        };
        for threads in [1, 3] {
            let states = run_jobs(threads, 0u32, Vec::new, work).unwrap();
            assert_eq!(states.len(), threads);
            let mut all: Vec<u32> = states.into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, (0..1000).collect::<Vec<_>>());
        }
        let failing = |_: &mut (), n: u32, more: &mut Vec<u32>| {
            if n == 500 {
                return Err(Error::new(ErrorKind::InvalidPattern, "five hundred"));
            }
            more.extend([2 * n + 1, 2 * n + 2].into_iter().filter(|&m| m < 1000));
            Ok(())
        };
        let err = run_jobs(2, 0u32, || (), failing).unwrap_err();
        assert_eq!(err.message, "five hundred");
    }
}
