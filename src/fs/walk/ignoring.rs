//! [`Walker::visit_parallel`] for a walk that applies ripgrep's ignore files
//! ([`Walker::ignore_files`]: `search_files` under the workspace contract): the `ignore`
//! crate's own parallel walk, which reads every ignore file it meets with the precedence `rg`
//! gives them, handing each entry to the same visitor with the same sort key. Hidden entries
//! are skipped by that walk itself (the caller counts them apart), so the visitor never sees
//! [`Met::Hidden`].

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use super::map_parallel::Met;
use super::{walked_kind, WalkEntry, Walker};
use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::root::path::strip_base;

/// A thread's state, handed back when the walk drops the thread's visitor.
struct Handed<'m, S> {
    state: Option<S>,
    into: &'m Mutex<Vec<S>>,
}

impl<S> Drop for Handed<'_, S> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            self.into
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(state);
        }
    }
}

impl Walker<'_> {
    /// Walks below the root on every core with ripgrep's ignore files applied, calling
    /// `visit` as [`Walker::visit_parallel`] does (directories entered when it returns
    /// `true`); an unreadable directory is noted and passed over.
    ///
    /// Errors: `ErrorKind::Cancelled` when cancelled (polled per entry).
    pub(super) fn visit_parallel_ignoring<S, I, V>(
        &self,
        cancel: &CancelFlag,
        init: I,
        visit: V,
    ) -> Result<Vec<S>>
    where
        S: Send,
        I: Fn() -> S + Sync,
        V: Fn(&mut S, &[u8], Met<'_>) -> bool + Sync,
    {
        let states = Mutex::new(Vec::new());
        let real_root = self.fs.root.real_root();
        let walk = self
            .builder()
            .threads(self.threads)
            .filter_entry(self.filter(Arc::new(AtomicUsize::new(0))))
            .build_parallel();
        let call = crate::fs::text::names::EscapeScope::current();
        walk.run(|| {
            let (init, visit, states) = (&init, &visit, &states);
            let mut handed = Handed {
                state: Some(init()),
                into: states,
            };
            let mut call = Some(call.clone());
            Box::new(move |entry| {
                if let Some(call) = call.take() {
                    call.adopt();
                }
                if cancel.is_cancelled() {
                    return ignore::WalkState::Quit;
                }
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(err) => {
                        self.note_walk_error(&err);
                        return ignore::WalkState::Continue;
                    }
                };
                if entry.depth() == 0 {
                    return ignore::WalkState::Continue;
                }
                let Some(state) = handed.state.as_mut() else {
                    return ignore::WalkState::Quit;
                };
                let key = self.key(entry.path());
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    return if visit(state, &key, Met::Dir) {
                        ignore::WalkState::Continue
                    } else {
                        ignore::WalkState::Skip
                    };
                }
                let Some(kind) = walked_kind(entry.file_type()) else {
                    return ignore::WalkState::Continue;
                };
                let abs = entry.path();
                let rel = strip_base(abs, real_root).unwrap_or(abs);
                visit(state, &key, Met::Entry(WalkEntry { abs, rel, kind }));
                ignore::WalkState::Continue
            })
        });
        cancel.check()?;
        Ok(states.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}
