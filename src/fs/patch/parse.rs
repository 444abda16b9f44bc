//! Codex's `apply_patch` format read into typed operations, each carrying the patch line it
//! starts on so a refusal can name it.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH          then lines `+text`
//! *** Delete File: PATH
//! *** Update File: PATH       optionally `*** Move to: NEW_PATH`, then hunks:
//! @@ [a line to find first]   (repeatable: each narrows from where the previous was found)
//!  context / -removed / +added lines, `*** End of File` for a hunk anchored at the end
//! *** End Patch
//! ```
//!
//! Lenient where Codex is: blank lines around the patch, `\r\n` line breaks, whitespace around
//! the marker lines (inside a hunk only after them: there a marker starts at column 0, and a
//! line starting with a space is context whatever its text), a first hunk of an update without `@@`, and an empty line inside a hunk
//! read as an empty context line. Beyond Codex: an `Update File` with `Move to` and no hunk is
//! a plain rename. Source: the format of openai/codex `apply-patch` (our own reading of it).

use crate::error::{Error, ErrorKind, Result};
use crate::fs::text::py_repr;

/// One line of a hunk, without its `' '`, `'-'` or `'+'` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` text`: must be there, kept.
    Context(String),
    /// `-text`: must be there, removed.
    Remove(String),
    /// `+text`: inserted.
    Add(String),
}

/// One `@@` hunk of an `Update File`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ <line>` anchors, in order (each found from where the previous one was).
    pub anchors: Vec<String>,
    /// Its lines, in order.
    pub lines: Vec<HunkLine>,
    /// `*** End of File`: the hunk's old lines end the file.
    pub end_of_file: bool,
    /// 1-based line of the patch where the hunk starts.
    pub line: usize,
    /// The old start line of a unified diff's range on its `@@` line (`@@ -37,6 +37,7 @@`: 37):
    /// which of several places its lines match it meant (the nearest).
    pub old_start: Option<usize>,
}

impl Hunk {
    /// The lines the file must hold (context and removed), in order.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `*** Add File`: a new file holding `lines`, each ended with `\n`.
    Add {
        path: String,
        lines: Vec<String>,
        line: usize,
    },
    /// `*** Delete File`.
    Delete { path: String, line: usize },
    /// `*** Update File`, optionally moved.
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
        line: usize,
    },
}

impl Op {
    /// The path the operation names first.
    pub fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Delete { path, .. } | Op::Update { path, .. } => path,
        }
    }
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

fn invalid(message: String) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("Invalid patch: {message} No changes were written."),
    )
}

/// A path from a header: trimmed, non-empty, without NUL, relative, not ending in `/`.
fn header_path(rest: &str, n: usize, what: &str) -> Result<String> {
    let p = rest.trim();
    if p.is_empty() {
        return Err(invalid(format!("line {n}: {what} names no path.")));
    }
    if p.contains('\0') {
        return Err(invalid(format!(
            "line {n}: the path of {what} holds a NUL character (\\0); a path may not contain NUL."
        )));
    }
    if p.starts_with('/') {
        return Err(invalid(format!(
            "line {n}: the path of {what} {} is absolute; use a path relative to the root directory.",
            py_repr(p)
        )));
    }
    if p.ends_with('/') {
        return Err(invalid(format!(
            "line {n}: the path of {what} {} ends with '/'; name a file, not a directory.",
            py_repr(p)
        )));
    }
    Ok(p.to_string())
}

/// Whether `line` (as written, not trimmed) is a header that ends an `Add File` body: at
/// column 0, `*** Add File:`, `*** Delete File:`, `*** Update File:` or `*** End Patch`.
fn ends_add_body(line: &str) -> bool {
    [ADD, DELETE, UPDATE]
        .iter()
        .any(|h| line.starts_with(h.trim_end()))
        || line.trim_end() == END
}

/// An `@@` line's anchor: its text trimmed, with a unified diff's line ranges left out
/// (`@@ -12,3 +12,4 @@ def f():` anchors at `def f():`, `@@ -1 +1 @@` at nothing), and the
/// range's old start line (12), which only chooses between places the lines match.
fn anchor_and_start(rest: &str) -> (&str, Option<usize>) {
    let rest = rest.trim();
    let range = |r: &str, sign: char| {
        r.strip_prefix(sign).is_some_and(|nums| {
            let mut parts = nums.splitn(2, ',');
            parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let mut words = rest.splitn(3, ' ');
    if let (Some(old), Some(new), Some(tail)) = (words.next(), words.next(), words.next()) {
        if range(old, '-') && range(new, '+') {
            if let Some(after) = tail.strip_prefix("@@") {
                let start = old[1..].split(',').next().and_then(|n| n.parse().ok());
                return (after.trim(), start);
            }
        }
    }
    (rest, None)
}

/// Reads a whole patch.
///
/// Errors (`InvalidArgument`, each `Invalid patch: ... No changes were written.`): no
/// `*** Begin Patch` first or `*** End Patch` last, no file operation, a line that is not a
/// header where one is expected, an `Add File` line without `+`, a hunk line without ` `,
/// `-` or `+`, an update with no hunk (and no move), a hunk with no line, a hunk of only
/// added lines after another hunk.
pub fn parse(input: &str) -> Result<Vec<Op>> {
    let lines: Vec<&str> = input
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // Blank lines around the patch are ignored; `n` is 1-based in the model's input.
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let Some(first) = first else {
        return Err(invalid(format!(
            "the patch is empty. It must start with '{BEGIN}' and end with '{END}'."
        )));
    };
    let last = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or(first);
    if lines[first].trim() != BEGIN {
        return Err(invalid(format!(
            "the first line must be '{BEGIN}', got {:?}.",
            lines[first]
        )));
    }
    if last == first || lines[last].trim() != END {
        return Err(invalid(format!(
            "the last line must be '{END}', got {:?}.",
            lines[last]
        )));
    }
    let body = &lines[first + 1..last];
    let number = |i: usize| first + 2 + i; // the 1-based line of body[i]
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let raw = body[i];
        let line = raw.trim();
        let n = number(i);
        if line.is_empty() {
            i += 1;
            continue;
        }
        if let Some(rest) = line
            .strip_prefix(ADD.trim_end())
            .filter(|_| line.starts_with(ADD) || line == ADD.trim_end())
        {
            let path = header_path(rest, n, "Add File")?;
            i += 1;
            let mut content = Vec::new();
            // Only a header at column 0 ends the body; any other line must start with '+'.
            while i < body.len() && !ends_add_body(body[i]) {
                match body[i].strip_prefix('+') {
                    Some(text) => content.push(text.to_string()),
                    None => {
                        let hint = if ends_add_body(body[i].trim_start()) {
                            " A header that ends the file's lines starts at column 0."
                        } else {
                            ""
                        };
                        return Err(invalid(format!(
                            "line {}: every line of Add File '{path}' must start with '+', got {:?}.{hint}",
                            number(i),
                            body[i]
                        )));
                    }
                }
                i += 1;
            }
            ops.push(Op::Add {
                path,
                lines: content,
                line: n,
            });
        } else if let Some(rest) = line
            .strip_prefix(DELETE.trim_end())
            .filter(|_| line.starts_with(DELETE) || line == DELETE.trim_end())
        {
            ops.push(Op::Delete {
                path: header_path(rest, n, "Delete File")?,
                line: n,
            });
            i += 1;
        } else if let Some(rest) = line
            .strip_prefix(UPDATE.trim_end())
            .filter(|_| line.starts_with(UPDATE) || line == UPDATE.trim_end())
        {
            let path = header_path(rest, n, "Update File")?;
            i += 1;
            let mut move_to = None;
            if let Some(rest) = body.get(i).map(|l| l.trim()).and_then(|l| {
                l.strip_prefix(MOVE.trim_end())
                    .filter(|_| l.starts_with(MOVE) || l == MOVE.trim_end())
            }) {
                move_to = Some(header_path(rest, number(i), "Move to")?);
                i += 1;
            }
            let (hunks, next) = read_hunks(body, i, &path, &number)?;
            i = next;
            if hunks.is_empty() && move_to.is_none() {
                return Err(invalid(format!(
                    "line {n}: Update File '{path}' has no hunk (lines starting with '@@', ' ', '-' or '+')."
                )));
            }
            ops.push(Op::Update {
                path,
                move_to,
                hunks,
                line: n,
            });
        } else {
            return Err(invalid(format!(
                "line {n}: expected '*** Add File: ', '*** Delete File: ' or '*** Update File: ', got {raw:?}."
            )));
        }
    }
    if ops.is_empty() {
        return Err(invalid(
            "the patch has no file operation (*** Add File, *** Delete File or *** Update File)."
                .to_string(),
        ));
    }
    Ok(ops)
}

/// The hunks of an update from `body[i]` on, and the index of the first line after them (the
/// next header or the end).
fn read_hunks(
    body: &[&str],
    mut i: usize,
    path: &str,
    number: &dyn Fn(usize) -> usize,
) -> Result<(Vec<Hunk>, usize)> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current: Option<Hunk> = None;
    let finish = |current: &mut Option<Hunk>, hunks: &mut Vec<Hunk>| -> Result<()> {
        if let Some(h) = current.take() {
            if h.lines.is_empty() {
                return Err(invalid(format!(
                    "line {}: a hunk of Update File '{path}' has no line (' ' context, '-' removed, '+' added).",
                    h.line
                )));
            }
            hunks.push(h);
        }
        Ok(())
    };
    while i < body.len() {
        let raw = body[i];
        let n = number(i);
        // Inside a hunk a marker starts at column 0: a line that starts with a space is a
        // context line, whatever its text (` ` + `    *** note`), as Codex reads it.
        if raw.trim_end() == EOF_MARK {
            match current.as_mut() {
                Some(h) if !h.lines.is_empty() => h.end_of_file = true,
                _ => {
                    return Err(invalid(format!(
                        "line {n}: '{EOF_MARK}' must follow the lines of a hunk of Update File '{path}'."
                    )))
                }
            }
            finish(&mut current, &mut hunks)?;
            i += 1;
            continue;
        }
        if raw.starts_with("***") {
            break;
        }
        if let Some(anchor) = raw.strip_prefix("@@") {
            let (anchor, old_start) = anchor_and_start(anchor);
            match current.as_mut() {
                Some(h) if h.lines.is_empty() => {
                    if !anchor.is_empty() {
                        h.anchors.push(anchor.to_string());
                    }
                    h.old_start = h.old_start.or(old_start);
                }
                _ => {
                    finish(&mut current, &mut hunks)?;
                    current = Some(Hunk {
                        anchors: if anchor.is_empty() {
                            Vec::new()
                        } else {
                            vec![anchor.to_string()]
                        },
                        lines: Vec::new(),
                        end_of_file: false,
                        line: n,
                        old_start,
                    });
                }
            }
            i += 1;
            continue;
        }
        let line = match raw.chars().next() {
            None => HunkLine::Context(String::new()),
            Some(' ') => HunkLine::Context(raw[1..].to_string()),
            Some('-') => HunkLine::Remove(raw[1..].to_string()),
            Some('+') => HunkLine::Add(raw[1..].to_string()),
            Some(_) => {
                return Err(invalid(format!(
                    "line {n}: a line of a hunk of Update File '{path}' must start with ' ', '-' or '+' \
                     (or '@@' for a new hunk), got {raw:?}."
                )))
            }
        };
        current
            .get_or_insert_with(|| Hunk {
                anchors: Vec::new(),
                lines: Vec::new(),
                end_of_file: false,
                line: n,
                old_start: None,
            })
            .lines
            .push(line);
        i += 1;
    }
    finish(&mut current, &mut hunks)?;
    Ok((hunks, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &str) -> String {
        parse(input).unwrap_err().message
    }

    #[test]
    fn every_construct() {
        let ops = parse(
            "\n*** Begin Patch\r\n*** Add File: a/new.txt\n+one\n+\n*** Delete File: old.txt\n\
             *** Update File: src/m.py\n*** Move to: lib/m.py\n@@ class A\n@@ def f\n x\n-y\n+z\n\n\
             @@\n tail\n+end\n*** End of File\n*** End Patch\n\n",
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![
                Op::Add {
                    path: "a/new.txt".into(),
                    lines: vec!["one".into(), "".into()],
                    line: 3
                },
                Op::Delete {
                    path: "old.txt".into(),
                    line: 6
                },
                Op::Update {
                    path: "src/m.py".into(),
                    move_to: Some("lib/m.py".into()),
                    hunks: vec![
                        Hunk {
                            anchors: vec!["class A".into(), "def f".into()],
                            lines: vec![
                                HunkLine::Context("x".into()),
                                HunkLine::Remove("y".into()),
                                HunkLine::Add("z".into()),
                                HunkLine::Context("".into()),
                            ],
                            end_of_file: false,
                            line: 9,
                            old_start: None,
                        },
                        Hunk {
                            anchors: vec![],
                            lines: vec![
                                HunkLine::Context("tail".into()),
                                HunkLine::Add("end".into())
                            ],
                            end_of_file: true,
                            line: 15,
                            old_start: None,
                        }
                    ],
                    line: 7
                }
            ]
        );
    }

    #[test]
    fn unified_diff_ranges_are_no_anchor() {
        let anchors = |at: &str| {
            let ops = parse(&format!(
                "*** Begin Patch\n*** Update File: a\n{at}\n-x\n+y\n*** End Patch"
            ))
            .unwrap();
            let Op::Update { hunks, .. } = &ops[0] else {
                unreachable!()
            };
            hunks[0].anchors.clone()
        };
        assert!(anchors("@@ -1,1 +1,1 @@").is_empty());
        assert!(anchors("@@ -3 +3,2 @@").is_empty());
        assert_eq!(anchors("@@ -12,3 +12,4 @@ def f():"), ["def f():"]);
        // Not a range: an anchor as written.
        assert_eq!(anchors("@@ -x +y @@"), ["-x +y @@"]);
        assert_eq!(anchors("@@ def f():"), ["def f():"]);
    }

    #[test]
    fn first_hunk_without_header_and_pure_move() {
        let ops = parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n*** Update File: b\n*** Move to: c\n*** End Patch").unwrap();
        assert_eq!(ops.len(), 2);
        assert!(matches!(&ops[1], Op::Update { hunks, move_to: Some(_), .. } if hunks.is_empty()));
    }

    #[test]
    fn malformed() {
        let cases = [
            ("", "Invalid patch: the patch is empty. It must start with '*** Begin Patch' and end with '*** End Patch'. No changes were written."),
            ("*** Begin Patch\n*** End Patch", "Invalid patch: the patch has no file operation (*** Add File, *** Delete File or *** Update File). No changes were written."),
            ("hello\n*** End Patch", "Invalid patch: the first line must be '*** Begin Patch', got \"hello\". No changes were written."),
            ("*** Begin Patch\n*** Add File: a\n+x", "Invalid patch: the last line must be '*** End Patch', got \"+x\". No changes were written."),
            ("*** Begin Patch\n*** Add File: a\nx\n*** End Patch", "Invalid patch: line 3: every line of Add File 'a' must start with '+', got \"x\". No changes were written."),
            ("*** Begin Patch\n*** Update File: a\n*** End Patch", "Invalid patch: line 2: Update File 'a' has no hunk (lines starting with '@@', ' ', '-' or '+'). No changes were written."),
            ("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", "Invalid patch: line 3: a hunk of Update File 'a' has no line (' ' context, '-' removed, '+' added). No changes were written."),
            ("*** Begin Patch\n*** Update File: a\n@@\n x\n?y\n*** End Patch", "Invalid patch: line 5: a line of a hunk of Update File 'a' must start with ' ', '-' or '+' (or '@@' for a new hunk), got \"?y\". No changes were written."),
            ("*** Begin Patch\n*** Frobnicate: a\n*** End Patch", "Invalid patch: line 2: expected '*** Add File: ', '*** Delete File: ' or '*** Update File: ', got \"*** Frobnicate: a\". No changes were written."),
            ("*** Begin Patch\n*** Delete File:   \n*** End Patch", "Invalid patch: line 2: Delete File names no path. No changes were written."),
            ("*** Begin Patch\n*** Add File: x\0y\n+a\n*** End Patch", "Invalid patch: line 2: the path of Add File holds a NUL character (\\0); a path may not contain NUL. No changes were written."),
            ("*** Begin Patch\n*** Update File: a\n*** Move to: b\0\n*** End Patch", "Invalid patch: line 3: the path of Move to holds a NUL character (\\0); a path may not contain NUL. No changes were written."),
            ("*** Begin Patch\n*** Update File: /r/a.txt\n-a\n+b\n*** End Patch", "Invalid patch: line 2: the path of Update File '/r/a.txt' is absolute; use a path relative to the root directory. No changes were written."),
            ("*** Begin Patch\n*** Add File: newdir/\n+a\n*** End Patch", "Invalid patch: line 2: the path of Add File 'newdir/' ends with '/'; name a file, not a directory. No changes were written."),
            // Inside an Add File body only a header at column 0 ends it.
            ("*** Begin Patch\n*** Add File: a\n+x\n  *** not a header\n+y\n*** End Patch", "Invalid patch: line 4: every line of Add File 'a' must start with '+', got \"  *** not a header\". No changes were written."),
            ("*** Begin Patch\n*** Add File: a\n+x\n  *** Delete File: b\n*** End Patch", "Invalid patch: line 4: every line of Add File 'a' must start with '+', got \"  *** Delete File: b\". A header that ends the file's lines starts at column 0. No changes were written."),
        ];
        for (input, want) in cases {
            assert_eq!(err(input), want, "{input:?}");
        }
    }
}
