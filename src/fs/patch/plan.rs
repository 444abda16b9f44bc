//! `apply_patch` on a host directory: the plan (every path resolved beneath the root,
//! contained, access-checked as a write, every file read, every hunk placed) and the commit
//! through the journal, each file re-checked against the bytes it was planned on.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::change::replace::{self, Replaced};
use crate::fs::change::write::conflict;
use crate::fs::change::write::disk_hash;
use crate::fs::patch::journal::{self, Target};
use crate::fs::patch::{parse, plan_ops, Loaded, PatchPlan};
use crate::fs::root::path::{fstat, is_dir, is_reg, Beneath, READ_FLAGS, STAT_FLAGS};
use crate::fs::text::py_repr;
use crate::fs::FileSystem;

impl FileSystem {
    /// Finishes or drops the patch commits a killed process left under this root
    /// ([`journal::recover`]); nothing when there are none (one failed `openat`).
    pub fn recover_patches(&self) {
        if let Ok(Some(beneath)) = self.root.open_root_if_exists() {
            journal::recover(&beneath, &|rel| self.journal_may_change(rel));
        }
    }

    /// Whether recovery may change `rel` (a journal's target or directory): it resolves to
    /// itself beneath the root (contained, no symlinked parent) and passes the write check
    /// every tool's path does now (protected and denied patterns, allowed ones, the state
    /// directory), so a forged journal can reach nothing this FileSystem would refuse.
    fn journal_may_change(&self, rel: &Path) -> bool {
        // From the root, not `cwd`: the journal's paths are root-relative.
        let abs = self.root.real_root().join(rel);
        let Some(text) = abs.to_str() else {
            return false;
        };
        matches!(self.safe_resolve(text, true, true), Ok(r) if r.rel == rel)
    }

    /// Plans `apply_patch`: parses `input`, recovers interrupted commits, then runs its
    /// operations on a picture of the tree ([`plan_ops`]); nothing on disk changes.
    ///
    /// Errors: the parse errors, access errors (every path is checked as a write), a directory
    /// or special file named as a file, a new file whose parent is not a directory or that
    /// would be a look-alike twin, and [`plan_ops`]'s.
    pub fn plan_patch(&self, input: &str, cancel: &CancelFlag) -> Result<PatchPlan> {
        let ops = parse::parse(input)?;
        let beneath = self.root.open_root_if_exists()?;
        if let Some(b) = &beneath {
            journal::recover(b, &|rel| self.journal_may_change(rel));
        }
        let plan = plan_ops(&ops, self.limits.contract, &self.disclosure, |path| {
            cancel.check()?;
            self.load_for_patch(beneath.as_ref(), path)
        })?;
        for f in plan.files.iter().filter(|f| f.old.is_none()) {
            self.check_new_file(beneath.as_ref(), &f.path, &f.rel)
                .map_err(|e| crate::fs::patch::within(&f.at, e))?;
        }
        Ok(plan)
    }

    fn load_for_patch(&self, beneath: Option<&Beneath>, path: &str) -> Result<Loaded> {
        let resolved = self.safe_resolve(path, true, true)?;
        let event_path = resolved.event_str();
        // The path as named, its last component not followed: a symbolic link is not its target.
        let raw = crate::fs::text::names::raw_bytes(path);
        let named = self.root.cwd().join(std::ffi::OsStr::from_bytes(&raw));
        let link = std::fs::symlink_metadata(&named)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| resolved.rel_str());
        let Some(beneath) = beneath else {
            return Ok(Loaded {
                rel: resolved.rel,
                event_path,
                bytes: None,
                id: None,
                link,
            });
        };
        let mut id = None;
        let bytes = match beneath.open(&resolved.rel, READ_FLAGS, 0) {
            Ok(fd) => {
                let st = fstat(fd.as_raw_fd())
                    .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
                if is_dir(st.st_mode) {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "'{}' is a directory, not a file. No changes were written.",
                            crate::fs::text::names::inline(path)
                        ),
                    ));
                }
                if !is_reg(st.st_mode) {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "Path {} exists and is not a regular file. No changes were written.",
                            py_repr(path)
                        ),
                    ));
                }
                id = Some((st.st_dev as u64, st.st_ino as u64));
                let mut raw = Vec::with_capacity(st.st_size as usize);
                std::fs::File::from(fd)
                    .read_to_end(&mut raw)
                    .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
                Some(raw)
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => None,
            Err(e) => return Err(self.root.open_error(&e, path, &resolved.rel)),
        };
        Ok(Loaded {
            rel: resolved.rel,
            event_path,
            bytes,
            id,
            link,
        })
    }

    /// A file the patch creates: its nearest existing ancestor must be a directory, and no
    /// name differing only in Unicode normalization may exist.
    fn check_new_file(&self, beneath: Option<&Beneath>, path: &str, rel: &Path) -> Result<()> {
        if let Some(beneath) = beneath {
            let mut ancestor = rel.parent();
            while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
                if let Ok(fd) = beneath.open(a, STAT_FLAGS, 0) {
                    if fstat(fd.as_raw_fd()).is_ok_and(|st| !is_dir(st.st_mode)) {
                        return Err(Error::new(
                            ErrorKind::NotFound,
                            format!("Path {} has a parent that is not a directory. No changes were written.", py_repr(path)),
                        ));
                    }
                    break;
                }
                ancestor = a.parent();
            }
        }
        let resolved = self.safe_resolve(path, true, true)?;
        self.refuse_lookalike(&resolved, path)
    }

    /// Commits a plan through the journal ([`journal::commit`]): every path resolved again
    /// (a path now naming another file is a conflict) and every file checked to hold the bytes
    /// it was planned on (or still to be absent), once the new contents are staged.
    ///
    /// Returns the result text ([`PatchPlan::result_text`]); an empty plan writes nothing.
    /// Errors: `Conflict` (a file changed since the plan: nothing written), OS errors.
    pub fn commit_patch(&self, plan: &PatchPlan, cancel: &CancelFlag) -> Result<String> {
        cancel.check()?;
        let Some(first) = plan.files.first() else {
            return Ok(plan.result_text(self.limits.content_hashes)); // nothing to write
        };
        let (beneath, _) = self.root.create_root(&first.path)?;
        let targets: Vec<Target<'_>> = plan
            .files
            .iter()
            .map(|f| Target {
                rel: &f.rel,
                old: f.old.as_deref(),
                new: f.new.as_deref(),
                mode_from: f.moved_from.as_ref().and_then(|from| {
                    let src = plan
                        .files
                        .iter()
                        .find(|g| g.moved_away && g.path == *from)?;
                    Some(src.rel.as_path())
                }),
            })
            .collect();
        // Every path resolved again before anything is staged: a path that now leads outside
        // the root, or to another file, says so (as `write_file`'s commit does).
        let resolved_again = || -> Result<()> {
            for f in &plan.files {
                let again = self.safe_resolve(&f.path, true, true).map_err(|e| {
                    Error::new(
                        ErrorKind::Conflict,
                        format!(
                            "{}: the path changed since the patch was planned: {} No changes were written.",
                            f.at, e.message
                        ),
                    )
                })?;
                if again.rel != f.rel {
                    return Err(replaced(&f.path));
                }
            }
            Ok(())
        };
        resolved_again()?;
        let verify = || -> Result<()> {
            resolved_again()?;
            for f in &plan.files {
                let now = match beneath.open(&f.rel, READ_FLAGS, 0) {
                    Ok(fd) => {
                        let mut raw = Vec::new();
                        std::fs::File::from(fd)
                            .read_to_end(&mut raw)
                            .map_err(|e| self.commit_failure(plan, &e))?;
                        Some(raw)
                    }
                    Err(e)
                        if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) =>
                    {
                        None
                    }
                    Err(e) => return Err(self.commit_failure(plan, &e)),
                };
                if now != f.old {
                    let hash = |b: &Option<Vec<u8>>| match b {
                        Some(b) => disk_hash(b, self.limits.contract),
                        None => crate::fs::change::write::ABSENT_HASH.to_string(),
                    };
                    let c = conflict(&f.path, &hash(&f.old), &hash(&now));
                    return Err(Error::new(
                        c.kind,
                        format!("{}: {} No changes were written.", f.at, c.message),
                    ));
                }
            }
            Ok(())
        };
        if let [only] = &plan.files[..] {
            if let Some(text) = self.commit_one(&beneath, plan, only, &verify)? {
                return Ok(text);
            }
        }
        let allowed = |rel: &Path| self.journal_may_change(rel);
        journal::commit(&beneath, &allowed, &targets, verify, |e| {
            match e.raw_os_error() {
            // A directory of the patch became a symlink after the check above.
            Some(libc::ELOOP) | Some(libc::EXDEV) => Error::new(
                ErrorKind::Conflict,
                "A directory of this patch was replaced while the change was announced, so nothing was \
                 written. Retry."
                    .to_string(),
            ),
            _ => self.commit_failure(plan, &e),
        }
        })?;
        Ok(plan.result_text(self.limits.content_hashes))
    }
}

impl FileSystem {
    /// A patch that updates one existing file (no move): committed through the single-file
    /// crash-safe replace `edit_file` uses ([`replace::replace`]: the new bytes complete in a
    /// temporary file, renamed over the old one), which gives that file the journal's guarantee
    /// (after a kill, the old bytes or the new) without the journal's directory. `verify` runs
    /// first. `None`: not such a patch, or a file this replace leaves to the journal (other hard
    /// links, which the journal writes in place; a directory where no temporary file can be
    /// made).
    ///
    /// Errors: `verify`'s, a conflict when the file was replaced meanwhile, OS errors.
    fn commit_one(
        &self,
        beneath: &Beneath,
        plan: &PatchPlan,
        file: &crate::fs::patch::FileChange,
        verify: &dyn Fn() -> Result<()>,
    ) -> Result<Option<String>> {
        let (Some(_), Some(new), None) = (&file.old, &file.new, &file.moved_from) else {
            return Ok(None);
        };
        if file.moved_away {
            return Ok(None);
        }
        let Ok(fd) = beneath.open(&file.rel, READ_FLAGS, 0) else {
            return Ok(None); // the journal's checks say what happened
        };
        let st = fstat(fd.as_raw_fd()).map_err(|e| self.root.os_error(&e, Some(&file.rel)))?;
        if !is_reg(st.st_mode) || st.st_nlink > 1 {
            return Ok(None);
        }
        verify()?;
        let (dir, name) =
            replace::parent_of(beneath, &file.rel).map_err(|e| self.commit_failure(plan, &e))?;
        let replaced = replace::replace(&dir, name, &st, new, || true)
            .map_err(|e| self.commit_failure(plan, &e))?;
        match replaced {
            Replaced::Done => Ok(Some(plan.result_text(self.limits.content_hashes))),
            Replaced::InPlace => Ok(None),
            Replaced::Swapped | Replaced::Refused => Err(replaced_while_written(&file.path)),
        }
    }
}

impl FileSystem {
    /// An OS error while committing `plan` (a path changed since the plan: a file where a
    /// directory must go, a directory where a file is, a file gone, a permission taken away, a
    /// link made): a retry naming the operation and the file whose path no longer is as planned
    /// (the first found, in plan order), what the OS said, and what to do. The commit has written
    /// nothing, or rolled back what it wrote, when this is returned.
    fn commit_failure(&self, plan: &PatchPlan, err: &std::io::Error) -> Error {
        let errno = err.raw_os_error().unwrap_or(libc::EIO);
        let what = crate::fs::root::path::strerror(errno);
        let culprit = self
            .root
            .open_root_if_exists()
            .ok()
            .flatten()
            .and_then(|b| plan.files.iter().find(|f| !self.still_as_planned(&b, f)));
        let message = match culprit {
            Some(f) => format!(
                "{}: the path changed since the patch was planned ({what}), so the patch could not be \
                 written. Check it (list_files, read_file) and send the patch again. No changes were written.",
                f.at
            ),
            None => format!(
                "A path of this patch changed since the patch was planned ({what}), so the patch could not \
                 be written. Check its files (list_files, read_file) and send the patch again. No changes \
                 were written."
            ),
        };
        Error::new(ErrorKind::Conflict, message)
    }

    /// Whether `f`'s path is still what the plan found: its bytes for a file it changes or
    /// removes, nothing (and only directories above) for one it creates.
    fn still_as_planned(&self, beneath: &Beneath, f: &crate::fs::patch::FileChange) -> bool {
        let now = match beneath.open(&f.rel, READ_FLAGS, 0) {
            Ok(fd) => {
                if fstat(fd.as_raw_fd()).map_or(true, |st| !is_reg(st.st_mode)) {
                    return false;
                }
                let mut raw = Vec::new();
                if std::fs::File::from(fd).read_to_end(&mut raw).is_err() {
                    return false;
                }
                Some(raw)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => None,
            Err(_) => return false,
        };
        if now != f.old {
            return false;
        }
        let mut ancestor = f.rel.parent();
        while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
            match beneath.open(a, STAT_FLAGS, 0) {
                Ok(fd) => return fstat(fd.as_raw_fd()).is_ok_and(|st| is_dir(st.st_mode)),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => ancestor = a.parent(),
                Err(_) => return false,
            }
        }
        true
    }
}

/// `Path 'p' was replaced while it was written. Retry.` (as `write_file`'s commit says it).
fn replaced_while_written(path: &str) -> Error {
    Error::new(
        ErrorKind::Conflict,
        format!(
            "Path {} was replaced while it was written. Retry.",
            py_repr(path)
        ),
    )
}

/// `Path 'p' was replaced while the change was announced. Retry.`: the path now names another
/// file than the one planned (as `write_file`'s commit says it).
fn replaced(path: &str) -> Error {
    Error::new(
        ErrorKind::Conflict,
        format!(
            "Path {} was replaced while the change was announced. Retry.",
            py_repr(path)
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::cancel::CancelFlag;
    use crate::fs::tests::over;

    fn run(dir: &std::path::Path, patch: &str) -> Result<String, String> {
        let fs = over(dir);
        let c = CancelFlag::new();
        let plan = fs.plan_patch(patch, &c).map_err(|e| e.message)?;
        fs.commit_patch(&plan, &c).map_err(|e| e.message)
    }

    #[test]
    fn a_patch_across_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("src")).unwrap();
        std::fs::write(d.path().join("src/a.py"), "x = 1\ny = 2\n").unwrap();
        std::fs::write(d.path().join("old.txt"), "bye\n").unwrap();
        std::fs::write(d.path().join("m.txt"), "move me\n").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Update File: src/a.py\n@@\n x = 1\n-y = 2\n+y = 3\n*** Add File: new/dir/n.txt\n+hi\n\
             *** Delete File: old.txt\n*** Update File: m.txt\n*** Move to: lib/m.txt\n*** End Patch",
        )
        .unwrap();
        assert_eq!(
            out,
            "Applied patch to 4 files:\nM src/a.py [hash:5ee2e2c0f1a8]\nA new/dir/n.txt [hash:98ea6e4f216f]\nD old.txt\n\
             R m.txt -> lib/m.txt [hash:d5a2ff4fb0e9]"
                .replace("5ee2e2c0f1a8", &crate::fs::read::hash::content_hash(b"x = 1\ny = 3\n"))
                .replace("98ea6e4f216f", &crate::fs::read::hash::content_hash(b"hi\n"))
                .replace("d5a2ff4fb0e9", &crate::fs::read::hash::content_hash(b"move me\n"))
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("src/a.py")).unwrap(),
            "x = 1\ny = 3\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("new/dir/n.txt")).unwrap(),
            "hi\n"
        );
        assert!(!d.path().join("old.txt").exists() && !d.path().join("m.txt").exists());
        assert_eq!(
            std::fs::read_to_string(d.path().join("lib/m.txt")).unwrap(),
            "move me\n"
        );
    }

    #[test]
    fn a_miss_in_the_last_file_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "1\n").unwrap();
        std::fs::write(d.path().join("b"), "2\n").unwrap();
        let err = run(
            d.path(),
            "*** Begin Patch\n*** Update File: a\n-1\n+one\n*** Add File: c\n+3\n*** Update File: b\n-nope\n+x\n*** End Patch",
        )
        .unwrap_err();
        assert!(
            err.starts_with("Hunk 1 of Update File 'b' (patch line 8)"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(d.path().join("a")).unwrap(), "1\n");
        assert!(!d.path().join("c").exists());
    }

    #[test]
    fn sequences_on_one_path() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "1\n2\n").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Add File: n\n+x\n*** Update File: n\n-x\n+y\n*** Update File: a\n-1\n+one\n\
             *** Update File: a\n-2\n+two\n*** End Patch",
        )
        .unwrap();
        assert!(
            out.starts_with("Applied patch to 2 files:\nA n [hash:"),
            "{out}"
        );
        assert_eq!(std::fs::read_to_string(d.path().join("n")).unwrap(), "y\n");
        assert_eq!(
            std::fs::read_to_string(d.path().join("a")).unwrap(),
            "one\ntwo\n"
        );
        for (patch, want) in [
            ("*** Begin Patch\n*** Add File: a\n+z\n*** End Patch", "Add File 'a' (patch line 2): the file already exists. Use Update File to change it, or Delete File before Add File to replace it. No changes were written."),
            ("*** Begin Patch\n*** Delete File: zz\n*** End Patch", "Delete File 'zz' (patch line 2): File not found: zz. No changes were written."),
            ("*** Begin Patch\n*** Update File: ../x\n-a\n+b\n*** End Patch", "Update File '../x' (patch line 2): Path '../x' resolves outside the root directory. No changes were written."),
            ("*** Begin Patch\n*** Update File: a\n-one\n+one\n*** End Patch", "The patch leaves every file exactly as it is. No changes were written."),
        ] {
            assert_eq!(run(d.path(), patch).unwrap_err(), want);
        }
    }

    #[test]
    fn an_empty_plan_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        let out = over(d.path())
            .commit_patch(&crate::fs::patch::PatchPlan::default(), &CancelFlag::new())
            .unwrap();
        assert_eq!(out, "Applied patch to 0 files.");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn chains_on_one_path_report_the_net_change() {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in [
            ("m.txt", "m\n"),
            ("d", "1\n"),
            ("r", "old\n"),
            ("b", "b\n"),
            ("a", "1\n2\n"),
            ("e", "e\n"),
            ("q", "q\n"),
            ("s", "s\n"),
        ] {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        let out = run(
            d.path(),
            "*** Begin Patch\n\
             *** Add File: n.txt\n+x\n*** Update File: n.txt\n*** Move to: z/n.txt\n-x\n+y\n\
             *** Update File: m.txt\n*** Move to: x/m.txt\n*** Update File: x/m.txt\n*** Move to: y/m.txt\n\
             *** Add File: t.txt\n+t\n*** Delete File: t.txt\n\
             *** Update File: d\n-1\n+2\n*** Delete File: d\n\
             *** Delete File: r\n*** Add File: r\n+new\n\
             *** Update File: b\n*** Move to: c\n*** Update File: c\n*** Move to: b\n-b\n+B\n\
             *** Update File: a\n-1\n+one\n*** Update File: a\n-2\n+two\n\
             *** Delete File: e\n*** Update File: q\n*** Move to: e\n\
             *** Delete File: s\n*** Add File: s\n+s\n\
             *** End Patch",
        )
        .unwrap();
        let h = |b: &[u8]| crate::fs::read::hash::content_hash(b);
        assert_eq!(
            out,
            format!(
                "Applied patch to 8 files:\nA z/n.txt [hash:{}]\nR m.txt -> y/m.txt [hash:{}]\nD d\nM r [hash:{}]\n\
                 M b [hash:{}]\nM a [hash:{}]\nM e [hash:{}]\nD q",
                h(b"y\n"),
                h(b"m\n"),
                h(b"new\n"),
                h(b"B\n"),
                h(b"one\ntwo\n"),
                h(b"q\n"),
            )
        );
        let read = |p: &str| std::fs::read_to_string(d.path().join(p)).ok();
        assert_eq!(read("z/n.txt").as_deref(), Some("y\n"));
        assert_eq!(read("y/m.txt").as_deref(), Some("m\n"));
        assert_eq!(read("e").as_deref(), Some("q\n"));
        assert_eq!(read("b").as_deref(), Some("B\n"));
        for gone in ["n.txt", "m.txt", "x/m.txt", "t.txt", "d", "c", "q"] {
            assert_eq!(read(gone), None, "{gone}");
        }
    }
}
