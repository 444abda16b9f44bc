//! What a ripgrep-rules walk (`list_files`, `grep`) leaves out, counted for
//! `FileSystem(report_skipped=True)` ([`crate::fs::disclosure::Skipped`]): hidden entries and
//! entries `.gitignore`/`.ignore` rules leave out.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::disclosure::Skipped;
use crate::fs::ripgrep::walker;

/// Whether a name is a dot entry.
fn is_dot(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// The hidden and ignored entries a ripgrep-rules walk of `dir` (as `list_files` and `grep`
/// run it) leaves out: a walk with ripgrep's filters gives what is kept, a walk without them
/// what is there; an entry there and not kept is counted (and not entered), unless the `glob`
/// or `file_type` excludes it, which is the caller's choice, not a skip. `hidden`: `--hidden`
/// was given (dot entries are not skipped). Stops early once `cancel` is set.
pub fn ripgrep_skipped(
    dir: &Path,
    glob: Option<&str>,
    file_type: Option<&str>,
    hidden: bool,
    cancel: &CancelFlag,
) -> Result<Skipped> {
    let overrides = walker::overrides(dir, glob)?;
    let types = walker::types(file_type)?;
    let (root, cwd) = (dir, dir);
    let kept: HashSet<PathBuf> = walker::walk(root, cwd, overrides.clone(), types.clone(), hidden)
        .take_while(|_| !cancel.is_cancelled())
        .filter_map(|e| e.ok().map(ignore::DirEntry::into_path))
        .collect();
    let mut skipped = Skipped::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let is_dir = kind.is_dir();
            if kept.contains(&path) {
                if is_dir {
                    stack.push(path);
                }
                continue;
            }
            if kind.is_symlink()
                || overrides.matched(&path, is_dir).is_ignore()
                || types.matched(&path, is_dir).is_ignore()
                || !(is_dir || kind.is_file())
            {
                // Left out by the caller's glob or type, or not a file ripgrep searches.
            } else if !hidden && is_dot(&entry.file_name()) {
                skipped.hidden += 1;
            } else {
                skipped.ignored += 1;
            }
        }
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ripgrep_walks_count_hidden_and_ignored() {
        let dir = crate::testing::tree(&[
            (".git/", ""),
            (".gitignore", "node_modules/\n*.log\n"),
            ("node_modules/x/a.js", "x"),
            ("src/a.log", "x"),
            ("src/a.rs", "x"),
            ("src/.env", "x"),
        ]);
        let r = dir.path();
        let c = CancelFlag::new();
        assert_eq!(
            ripgrep_skipped(r, None, None, false, &c).unwrap(),
            Skipped {
                hidden: 3,
                ignored: 2,
                ..Default::default()
            }
        );
    }
}
