//! `write_file`, `edit_file` and `create_directory` planned from what the backend reported, and
//! the conflict guard a commit checks on the bytes now at the target. The plans are
//! [`crate::fs::change::write::Plan`]s, so the toolset announces and commits them as on the host.

use std::path::PathBuf;

use super::*;
use crate::fs::change::diff::event_diff;
use crate::fs::change::write::{self, Guard, Operation, Plan, ABSENT_HASH};
use crate::fs::contract::Contract;
use crate::fs::read::hash::bytes_hash;
use crate::fs::root::path::Resolved;
use crate::fs::text::py_repr;

impl Remote {
    fn plan(
        &self,
        operation: Operation,
        path: &str,
        resolved: &str,
        content: String,
        diff: (String, bool),
        guard: Guard,
    ) -> Plan {
        Plan {
            operation,
            path: path.to_string(),
            resolved: Resolved::real(
                PathBuf::from(resolved),
                PathBuf::from(match self.event_path(resolved).as_str() {
                    "." => "",
                    rel => rel,
                }),
            ),
            diff: diff.0,
            truncated: diff.1,
            announced: true,
            content: content.into(),
            encoded: None,
            guard,
            old: None,
            tally: None,
            trailer: String::new(),
        }
    }

    /// Plans a `write_file` from what `stat` said of the target (`Some(is_dir)`) and its parent,
    /// and, when `announce` and the target exists, its current bytes (`None`: the backend
    /// refused to read them).
    ///
    /// `lookalike`: for a missing target, the existing name it differs from only in Unicode
    /// normalization ([`Remote::lookalike`]): the write is refused, as on a host directory.
    ///
    /// Errors: `Path 'p' exists and is not a regular file.`, `Parent directory 'd' does not
    /// exist. Create the parent directory first.`, `Path 'p' has a parent that is not a
    /// directory.`, the look-alike refusal, the conflict message. Source: `_write_file`,
    /// `_announced_state`.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_write(
        &self,
        path: &str,
        resolved: &str,
        target: Option<bool>,
        parent: Parent,
        old: Option<&[u8]>,
        content: String,
        expected_hash: Option<String>,
        announce: bool,
        lookalike: Option<&str>,
    ) -> Result<Plan> {
        if target == Some(true) {
            return Err(retry(
                ErrorKind::NotFound,
                format!("Path {} exists and is not a regular file.", py_repr(path)),
            ));
        }
        match parent {
            Parent::Dir => {}
            Parent::Missing => {
                let parent = resolved.rsplit_once('/').map_or("/", |(p, _)| p);
                let parent = if parent.is_empty() { "/" } else { parent };
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Parent directory '{}' does not exist. Create the parent directory first.",
                        relpath(parent, &self.root)
                    ),
                ));
            }
            Parent::NotDir => {
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Path {} has a parent that is not a directory.",
                        py_repr(path)
                    ),
                ))
            }
        }
        let exists = target.is_some();
        if let (false, Some(existing)) = (exists, lookalike) {
            return Err(crate::fs::root::lookalike::twin_refusal(path, existing));
        }
        let mut guard = match (&expected_hash, exists) {
            (Some(h), true) => Guard::Hash(h.clone()),
            _ => Guard::None,
        };
        let mut diff = (String::new(), false);
        let mut trailer = String::new();
        if announce {
            let previous = if !exists {
                guard = Guard::Hash(ABSENT_HASH.to_string());
                Some(String::new())
            } else if let Some(raw) = old {
                let current = bytes_hash(raw);
                if let Some(expected) = &expected_hash {
                    if *expected != current {
                        return Err(write::conflict(path, expected, &current));
                    }
                }
                guard = Guard::Hash(current);
                (raw.len() <= self.limits.diff_source_bytes())
                    .then(|| String::from_utf8_lossy(raw).into_owned())
            } else {
                guard = Guard::None;
                None
            };
            diff = event_diff(
                previous.as_deref(),
                &content,
                &self.event_path(resolved),
                self.limits.big_diffs,
            );
            if exists {
                trailer = write::write_trailer(
                    path,
                    previous.as_deref(),
                    &content,
                    &self.disclosure,
                    Contract::Workspace,
                );
            }
        } else if exists {
            trailer =
                write::write_trailer(path, None, &content, &self.disclosure, Contract::Workspace);
        }
        let mut plan = self.plan(Operation::Write, path, resolved, content, diff, guard);
        plan.announced = announce;
        plan.trailer = trailer;
        Ok(plan)
    }

    /// Plans an `edit_file` from the file's bytes (`None`: missing, or a directory when
    /// `directory`); `lookalike` as [`Remote::read_file`]'s.
    ///
    /// Errors: `File not found: p` (with the look-alike sentence), `'d' is a directory, not a
    /// file.`, binary and UTF-8 refusals, the conflict message, replacement errors.
    /// Source: `_edit_file`.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_edit(
        &self,
        path: &str,
        resolved: &str,
        raw: Option<Vec<u8>>,
        replacements: &[write::Replacement],
        expected_hash: Option<String>,
        directory: bool,
        lookalike: Option<&str>,
    ) -> Result<Plan> {
        let raw = raw.ok_or_else(|| {
            let names = crate::fs::text::names::shown_path;
            let message = if directory {
                // Named for what it is, as on a host directory (issue 19).
                format!(
                    "'{}' is a directory, not a file.",
                    crate::fs::text::names::inline(path)
                )
            } else {
                super::lookalike::with_lookalike(
                    format!("File not found: {}", names(path)),
                    lookalike,
                )
            };
            retry(ErrorKind::NotFound, message)
        })?;
        let (edited, guard) = write::edit_plan(
            path,
            raw,
            replacements,
            expected_hash,
            Contract::Workspace,
            false,
            self.disclosure.matching,
        )?;
        let trailer = write::edit_trailer(path, &edited, &self.disclosure, Contract::Workspace);
        let diff = event_diff(
            Some(&edited.old_text),
            &edited.new_text,
            &self.event_path(resolved),
            self.limits.big_diffs,
        );
        let mut plan = self.plan(
            Operation::Edit,
            path,
            resolved,
            edited.new_text,
            diff,
            guard,
        );
        plan.encoded = edited.encoded;
        plan.trailer = trailer;
        Ok(plan)
    }

    /// Plans a `create_directory` from what `stat` said of the target (`Some(is_dir)`) and
    /// whether its nearest existing ancestor is a directory; `None` when it already exists.
    ///
    /// Errors: `Path 'p' exists and is not a directory.`, `Path 'p' has a parent that is not
    /// a directory.`. Source: `_create_directory`.
    pub fn plan_create_directory(
        &self,
        path: &str,
        resolved: &str,
        target: Option<bool>,
        ancestor_is_dir: bool,
    ) -> Result<Option<Plan>> {
        match target {
            Some(true) => return Ok(None),
            Some(false) => return Err(exists_not_dir(path)),
            None => {}
        }
        if !ancestor_is_dir {
            return Err(parent_not_dir(path));
        }
        Ok(Some(self.plan(
            Operation::CreateDirectory,
            path,
            resolved,
            String::new(),
            (String::new(), false),
            Guard::None,
        )))
    }

    /// The conflict guard of a commit, on the bytes now at the target (`None`: nothing).
    ///
    /// A write whose file vanished goes ahead as a create; an edit's is `File not found: p`.
    /// Errors: the conflict message. Source: `_check_guard`, `_edit_file`.
    pub fn check_guard(&self, plan: &Plan, current: Option<&[u8]>) -> Result<()> {
        let Guard::Hash(expected) = &plan.guard else {
            return Ok(());
        };
        match current {
            None if plan.operation == Operation::Edit => Err(retry(
                ErrorKind::NotFound,
                format!("File not found: {}", plan.path),
            )),
            None => Ok(()),
            Some(now) => {
                let got = bytes_hash(now);
                if got == *expected {
                    Ok(())
                } else {
                    Err(write::conflict(&plan.path, expected, &got))
                }
            }
        }
    }

    /// The result of a committed write or edit.
    pub fn written(&self, plan: &Plan) -> Outcome {
        let (text, hash) = write::written_text(
            plan,
            &plan.path,
            self.limits.content_hashes,
            crate::fs::contract::Contract::Workspace,
        );
        Outcome {
            text,
            path: plan.event_path(),
            content_hash: Some(hash),
            emit: true,
            ..Default::default()
        }
    }

    /// The result of a `create_directory` commit: `state` is what happened at the target:
    /// `created`, `existed` (a directory appeared), `file` (something else is there) or
    /// `parent` (a parent is not a directory).
    pub fn created(&self, plan: &Plan, state: &str) -> Result<Outcome> {
        let text = format!("Created directory: {}", plan.path);
        match state {
            "created" => Ok(found(text, plan.event_path(), true)),
            "existed" => Ok(found(text, plan.event_path(), false)),
            "file" => Err(exists_not_dir(&plan.path)),
            _ => Err(parent_not_dir(&plan.path)),
        }
    }
}

fn exists_not_dir(path: &str) -> Error {
    retry(
        ErrorKind::NotFound,
        format!("Path {} exists and is not a directory.", py_repr(path)),
    )
}

fn parent_not_dir(path: &str) -> Error {
    retry(
        ErrorKind::NotFound,
        format!(
            "Path {} has a parent that is not a directory.",
            py_repr(path)
        ),
    )
}
