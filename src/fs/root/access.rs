//! The access patterns of a FileSystem: allowed, denied and protected lists, each compiled
//! once, with `fnmatch` semantics (`*` spans `/`, `?`, `[seq]`, `[!seq]`) plus a leading
//! `**/` that also matches at the root. Denied and protected patterns also cover everything
//! below a matching directory and match case-insensitively; allowed patterns stay
//! case-sensitive, like `fnmatch` on POSIX.
//!
//! Patterns are translated as `fnmatch.translate` does and combined into one
//! `regex::RegexSet` per list (globset's `**` rules differ from fnmatch's), so a check is one
//! scan whatever the number of patterns, and the first matching pattern in list order is
//! the one reported.

use regex::{RegexSet, RegexSetBuilder};

use crate::error::{Error, ErrorKind, Result};
use crate::fs::text::py_repr;

/// Translates an fnmatch pattern into an (unanchored) regex body, as `fnmatch.translate`.
pub fn fnmatch_to_regex(pat: &str) -> String {
    let chars: Vec<char> = pat.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        let c = chars[i];
        i += 1;
        match c {
            '*' => {
                while i < n && chars[i] == '*' {
                    i += 1;
                }
                out.push_str(".*");
            }
            '?' => out.push('.'),
            '[' => {
                let mut j = i;
                if j < n && chars[j] == '!' {
                    j += 1;
                }
                if j < n && chars[j] == ']' {
                    j += 1;
                }
                while j < n && chars[j] != ']' {
                    j += 1;
                }
                if j >= n {
                    out.push_str("\\[");
                    continue;
                }
                let mut body = &chars[i..j];
                i = j + 1;
                let negate = body.first() == Some(&'!');
                if negate {
                    body = &body[1..];
                }
                // Items: single chars and ranges; a reversed range matches nothing (dropped).
                let mut items: Vec<(char, char)> = Vec::new();
                let mut k = 0;
                while k < body.len() {
                    if k + 2 < body.len() && body[k + 1] == '-' {
                        items.push((body[k], body[k + 2]));
                        k += 3;
                    } else {
                        items.push((body[k], body[k]));
                        k += 1;
                    }
                }
                items.retain(|(lo, hi)| lo <= hi);
                if items.is_empty() {
                    // An empty set matches nothing; its negation matches any character.
                    out.push_str(if negate { "." } else { "[^\\x00-\\x{10FFFF}]" });
                    continue;
                }
                out.push('[');
                if negate {
                    out.push('^');
                }
                for (lo, hi) in items {
                    push_class_char(&mut out, lo);
                    if lo != hi {
                        out.push('-');
                        push_class_char(&mut out, hi);
                    }
                }
                out.push(']');
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

fn push_class_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    }
}

/// One compiled pattern list.
#[derive(Debug, Clone)]
pub struct PatternList {
    patterns: Vec<String>,
    set: Option<RegexSet>,
}

impl PatternList {
    /// Compiles `patterns`. `descendants`: a match on a directory also covers every path
    /// below it. `ignore_case`: match case-insensitively.
    ///
    /// Errors: `ErrorKind::InvalidPattern` if the regex engine rejects a translated pattern.
    pub fn new(patterns: &[String], descendants: bool, ignore_case: bool) -> Result<Self> {
        if patterns.is_empty() {
            return Ok(PatternList {
                patterns: Vec::new(),
                set: None,
            });
        }
        let tail = if descendants { "(?:/.*)?" } else { "" };
        let regexes: Vec<String> = patterns
            .iter()
            .map(|p| {
                let mut alts = vec![fnmatch_to_regex(p)];
                if let Some(stripped) = p.strip_prefix("**/") {
                    alts.push(fnmatch_to_regex(stripped));
                }
                format!("^(?:{}){tail}$", alts.join("|"))
            })
            .collect();
        let set = RegexSetBuilder::new(&regexes)
            .case_insensitive(ignore_case)
            .dot_matches_new_line(true)
            .unicode(true)
            .size_limit(64 << 20)
            .build()
            .map_err(|e| Error::new(ErrorKind::InvalidPattern, format!("Invalid pattern: {e}")))?;
        Ok(PatternList {
            patterns: patterns.to_vec(),
            set: Some(set),
        })
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.set.is_none()
    }

    /// The first pattern (in list order) that matches `path`.
    pub fn first_match(&self, path: &str) -> Option<&str> {
        let set = self.set.as_ref()?;
        set.matches(path)
            .iter()
            .next()
            .map(|i| self.patterns[i].as_str())
    }

    /// Whether any pattern matches `path`.
    pub fn is_match(&self, path: &str) -> bool {
        self.set.as_ref().is_some_and(|s| s.is_match(path))
    }
}

/// The name of the package's state directory (patch journals, approval records, shell jobs),
/// wherever it sits beneath the root.
pub const STATE_DIR: &str = ".pydantic-ai-harness";

/// Whether root-relative `rel` is the state directory or inside one, at any depth (a Shell's
/// working directory may be below the root), compared ignoring ASCII case as the protected
/// patterns are (a case-insensitive disk). No pattern list opens it: see [`Access::check`].
pub fn in_state_dir(rel: &str) -> bool {
    rel.split('/')
        .any(|part| part.eq_ignore_ascii_case(STATE_DIR))
}

/// The three pattern lists of a FileSystem.
#[derive(Debug, Clone)]
pub struct Access {
    allowed: PatternList,
    denied: PatternList,
    protected: PatternList,
}

impl Access {
    /// Compiles the three lists. Errors: `ErrorKind::InvalidPattern` (see [`PatternList::new`]).
    pub fn new(allowed: &[String], denied: &[String], protected: &[String]) -> Result<Self> {
        Ok(Access {
            allowed: PatternList::new(allowed, false, false)?,
            denied: PatternList::new(denied, true, true)?,
            protected: PatternList::new(protected, true, true)?,
        })
    }

    /// Checks a root-relative path (`.` for the root).
    ///
    /// `write`: protected patterns first, then the state directory ([`in_state_dir`]: refused
    /// whatever the patterns say, so a model cannot forge what recovery or approvals trust).
    /// Then denied, then (when `check_allowed`) allowed.
    /// Errors: `ErrorKind::Protected` `Path 'x' is protected (matches 'p').`,
    /// `ErrorKind::Denied` `Path 'x' is denied by pattern 'p'.` or
    /// `Path 'x' does not match any allowed pattern.`.
    /// Source: `_check_access`, pydantic_ai_harness/filesystem/_toolset.py.
    pub fn check(&self, rel: &str, write: bool, check_allowed: bool) -> Result<()> {
        if write {
            if let Some(p) = self.protected.first_match(rel) {
                return Err(Error::new(
                    ErrorKind::Protected,
                    format!(
                        "Path {} is protected (matches {}).",
                        py_repr(rel),
                        py_repr(p)
                    ),
                ));
            }
        }
        if write && in_state_dir(rel) {
            return Err(Error::new(
                ErrorKind::Protected,
                format!(
                    "Path {} is inside {}, the harness's own state directory (patch \
                     journals, approval records, shell jobs), which file tools never change. \
                     No changes were written. Use a path outside it.",
                    py_repr(rel),
                    py_repr(STATE_DIR)
                ),
            ));
        }
        if let Some(p) = self.denied.first_match(rel) {
            return Err(Error::new(
                ErrorKind::Denied,
                format!("Path {} is denied by pattern {}.", py_repr(rel), py_repr(p)),
            ));
        }
        if check_allowed && !self.allowed.is_empty() && !self.allowed.is_match(rel) {
            return Err(Error::new(
                ErrorKind::Denied,
                format!("Path {} does not match any allowed pattern.", py_repr(rel)),
            ));
        }
        Ok(())
    }

    /// Whether no denied or allowed pattern restricts reads (every path is readable).
    pub fn is_unrestricted(&self) -> bool {
        self.denied.is_empty() && self.allowed.is_empty()
    }

    /// Whether a denied pattern covers `rel` (a walk does not descend into such a directory).
    pub fn is_denied(&self, rel: &str) -> bool {
        self.denied.is_match(rel)
    }

    /// The read-level predicate walkers filter entries with: not denied, and allowed.
    pub fn is_readable(&self, rel: &str) -> bool {
        !self.denied.is_match(rel) && (self.allowed.is_empty() || self.allowed.is_match(rel))
    }
}

/// A single fnmatch pattern (no `**/` or descendant rules), e.g. `include_glob`.
#[derive(Debug, Clone)]
pub struct Fnmatch(regex::Regex);

impl Fnmatch {
    /// Compiles `pat` with `fnmatch.fnmatch` semantics (case-sensitive, `*` spans `/`).
    pub fn new(pat: &str) -> Result<Self> {
        Self::any_of(&[pat.to_string()])
    }

    /// Compiles the union of `pats`: `s` matches when any of them does ([`crate::fs::root::braces`]).
    pub fn any_of(pats: &[String]) -> Result<Self> {
        let alternatives: Vec<String> = pats.iter().map(|p| fnmatch_to_regex(p)).collect();
        regex::RegexBuilder::new(&format!("^(?:{})$", alternatives.join("|")))
            .dot_matches_new_line(true)
            .size_limit(64 << 20)
            .build()
            .map(Fnmatch)
            .map_err(|e| Error::new(ErrorKind::InvalidPattern, format!("Invalid pattern: {e}")))
    }

    /// Whether `s` matches.
    pub fn is_match(&self, s: &str) -> bool {
        self.0.is_match(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fnmatch_semantics() {
        let cases = [
            ("*.py", "src/main.py", true),
            ("*.py", "main.pyc", false),
            ("src/*.py", "src/a/b.py", true),
            ("?.txt", "a.txt", true),
            ("?.txt", "ab.txt", false),
            ("[abc].txt", "b.txt", true),
            ("[!abc].txt", "b.txt", false),
            ("[!abc].txt", "d.txt", true),
            ("[a-c]x", "bx", true),
            ("[]]x", "]x", true),
            ("[z-a]x", "zx", false),
            ("[x", "[x", true),
            ("a.b", "axb", false),
            ("a**b", "a/x/b", true),
            ("a/**/b", "a/b", false),
        ];
        for (pat, path, expected) in cases {
            assert_eq!(
                Fnmatch::new(pat).unwrap().is_match(path),
                expected,
                "{pat} {path}"
            );
        }
    }

    #[test]
    fn access_checks() {
        let default_protected = v(&[".git/*", ".env", ".env.*", "*.pem", "*.key", "**/secrets*"]);
        let a = Access::new(&[], &v(&["logs", "*.tmp"]), &default_protected).unwrap();
        let cases: [(&str, bool, &str); 10] = [
            (
                ".git/config",
                true,
                "Path '.git/config' is protected (matches '.git/*').",
            ),
            (
                ".GIT/config",
                true,
                "Path '.GIT/config' is protected (matches '.git/*').",
            ),
            (
                ".git/x/y",
                true,
                "Path '.git/x/y' is protected (matches '.git/*').",
            ),
            (
                "secrets.yaml",
                true,
                "Path 'secrets.yaml' is protected (matches '**/secrets*').",
            ),
            (
                "a/secrets.yaml",
                true,
                "Path 'a/secrets.yaml' is protected (matches '**/secrets*').",
            ),
            (
                ".env/x",
                true,
                "Path '.env/x' is protected (matches '.env').",
            ),
            (
                "logs/app.log",
                false,
                "Path 'logs/app.log' is denied by pattern 'logs'.",
            ),
            ("LOGS", false, "Path 'LOGS' is denied by pattern 'logs'."),
            (
                "a/b.tmp",
                true,
                "Path 'a/b.tmp' is denied by pattern '*.tmp'.",
            ),
            ("logs.txt", true, ""),
        ];
        for (path, write, expected) in cases {
            let got = a
                .check(path, write, true)
                .err()
                .map(|e| e.message)
                .unwrap_or_default();
            assert_eq!(got, expected, "{path}");
        }
        assert!(a.check(".git/config", false, true).is_ok());
        let allow = Access::new(&v(&["*.py"]), &[], &[]).unwrap();
        assert_eq!(
            allow.check("notes.md", false, true).unwrap_err().message,
            "Path 'notes.md' does not match any allowed pattern."
        );
        assert!(allow.check(".", false, false).is_ok());
        assert!(!allow.is_readable("A.PY"));
        assert!(allow.is_readable("x/a.py"));
    }
}
