//! Runs the in-process `list_files` / `grep` once (or `--repeat N` times) and prints the tool
//! result as the reference's tool would (`\n`-joined lines, truncation note, empty
//! message); used by `benches/bench_ripgrep.py` to time the engine against the `rg` CLI
//! and to diff it against the reference.
//!
//! ```text
//! rg_bench list DIR [--glob G] [--max N] [--root R] [--cwd C] [--repeat K] [--quiet]
//! rg_bench grep TARGET PATTERN [--glob G] [--type T] [-i] [-F] [-C N] [--max N]
//!          [--root R] [--cwd C] [--repeat K] [--quiet]
//! ```
//! (`--lexical` on either: authorize without `realpath`.) Bad arguments print a usage error
//! and exit with status 2; a search the engine refuses (a bad pattern) prints its error and
//! exits with status 1.
//!
//! The authorizer mirrors the reference's walk-entry rule with no access patterns:
//! realpath (each parent directory resolved once, one `lstat` per entry), containment in
//! the root, display relative to the cwd. Timing goes to stderr.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use pydantic_ai_harness_rs::cancel::CancelFlag;
use pydantic_ai_harness_rs::fs::ripgrep::{
    grep, list_files, Authorize, GrepOptions, ListFilesOptions,
};

#[path = "../tests/fixtures/ripgrep/relpath.rs"]
mod relpath;
use relpath::relpath;

struct RootAuth {
    real_root: PathBuf,
    cwd: PathBuf,
    /// `--lexical`: skip `realpath`. Walked entries are never symlinks below a resolved root
    /// (the walker follows none), so this differs only under a concurrent rename.
    lexical: bool,
    /// The last parent directory resolved, and its realpath: entries arrive grouped by
    /// directory, so `realpath` runs once per directory plus one `lstat` per entry.
    parent: Mutex<Option<(PathBuf, PathBuf)>>,
}

impl RootAuth {
    /// `realpath(walked)`, resolving each parent directory once.
    fn resolve(&self, walked: &Path) -> Option<PathBuf> {
        let (parent, name) = (walked.parent()?, walked.file_name()?);
        if std::fs::symlink_metadata(walked)
            .ok()?
            .file_type()
            .is_symlink()
        {
            return std::fs::canonicalize(walked).ok();
        }
        let mut cached = self.parent.lock().unwrap();
        match &*cached {
            Some((p, real)) if p == parent => Some(real.join(name)),
            _ => {
                let real = std::fs::canonicalize(parent).ok()?;
                let target = real.join(name);
                *cached = Some((parent.to_path_buf(), real));
                Some(target)
            }
        }
    }
}

impl Authorize for RootAuth {
    fn authorize(&self, walked: &Path) -> Option<String> {
        let target = if self.lexical {
            walked.to_path_buf()
        } else {
            self.resolve(walked)?
        };
        target.strip_prefix(&self.real_root).ok()?;
        Some(relpath(&target, &self.cwd))
    }
}

const USAGE: &str = "usage: rg_bench list DIR [--glob G] [--max N] [--root R] [--cwd C] [--repeat K] [--quiet] [--lexical]
       rg_bench grep TARGET PATTERN [--glob G] [--type T] [-i] [-F] [-C N] [--max N]
                [--root R] [--cwd C] [--repeat K] [--quiet] [--lexical]";

/// The command line, parsed.
struct Args {
    mode: String,
    target: PathBuf,
    pattern: String,
    glob: Option<String>,
    file_type: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: usize,
    max: usize,
    root: PathBuf,
    cwd: PathBuf,
    repeat: usize,
    quiet: bool,
    lexical: bool,
}

/// The value after `flag`, parsed as a number.
fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag} takes a non-negative integer, got {value:?}"))
}

/// The value after `flag`.
fn value(flag: &str, value: Option<String>) -> Result<String, String> {
    value.ok_or_else(|| format!("{flag} needs a value"))
}

/// An existing directory or file, resolved.
fn existing(what: &str, path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mode = args.next().ok_or("no mode given")?;
    if mode != "list" && mode != "grep" {
        return Err(format!("unknown mode {mode:?}: list or grep"));
    }
    let target = PathBuf::from(args.next().ok_or("no target given")?);
    let pattern = if mode == "grep" {
        args.next().ok_or("grep needs a pattern")?
    } else {
        String::new()
    };
    let (mut glob, mut file_type, mut ignore_case, mut literal, mut context) =
        (None, None, false, false, 0);
    let (mut max, mut root, mut cwd, mut repeat, mut quiet) = (1000, None, None, 1, false);
    let mut lexical = false;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--glob" => glob = Some(value(&flag, args.next())?),
            "--type" => file_type = Some(value(&flag, args.next())?),
            "-i" => ignore_case = true,
            "-F" => literal = true,
            "-C" => context = number(&flag, args.next())?,
            "--max" => max = number(&flag, args.next())?,
            "--root" => root = Some(PathBuf::from(value(&flag, args.next())?)),
            "--cwd" => cwd = Some(PathBuf::from(value(&flag, args.next())?)),
            "--repeat" => repeat = number(&flag, args.next())?,
            "--quiet" => quiet = true,
            "--lexical" => lexical = true,
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    let target = existing("target", &target)?;
    let root = existing("root", &root.unwrap_or_else(|| target.clone()))?;
    let cwd = existing("cwd", &cwd.unwrap_or_else(|| root.clone()))?;
    Ok(Args {
        mode,
        target,
        pattern,
        glob,
        file_type,
        ignore_case,
        literal,
        context,
        max,
        root,
        cwd,
        repeat,
        quiet,
        lexical,
    })
}

fn main() {
    let Args {
        mode,
        target,
        pattern,
        glob,
        file_type,
        ignore_case,
        literal,
        context,
        max,
        root,
        cwd,
        repeat,
        quiet,
        lexical,
    } = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("rg_bench: {message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let auth = RootAuth {
        real_root: root,
        cwd,
        lexical,
        parent: Mutex::new(None),
    };
    let cancel = CancelFlag::new();
    let mut text = String::new();
    for _ in 0..repeat {
        let start = Instant::now();
        let (result, unit, empty) = if mode == "list" {
            let opts = ListFilesOptions {
                glob: glob.clone(),
                max_results: max,
                hidden: false,
                sorted_budget: None,
            };
            (
                list_files(&target, &opts, &auth, &cancel),
                "files",
                "No files found.",
            )
        } else {
            let opts = GrepOptions {
                pattern: pattern.clone(),
                glob: glob.clone(),
                file_type: file_type.clone(),
                ignore_case,
                literal,
                context,
                max_results: max,
                hidden: false,
                clip: None,
                sorted_budget: None,
            };
            (
                grep(&target, &opts, &auth, &cancel),
                "lines",
                "No matches found.",
            )
        };
        let elapsed = start.elapsed();
        text = match result {
            Ok(listing) => {
                let mut lines = listing.lines();
                if listing.truncated {
                    lines.push(format!("[... truncated at {max} {unit}]"));
                }
                if lines.is_empty() {
                    empty.to_string()
                } else {
                    lines.join("\n")
                }
            }
            Err(err) => {
                // A refused pattern or target is the run's failure: said on stderr, status 1.
                eprintln!("rg_bench: {:?}: {}", err.kind, err.message);
                std::process::exit(1);
            }
        };
        eprintln!("elapsed_s {:.6}", elapsed.as_secs_f64());
    }
    if !quiet {
        println!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn error(args: &[&str]) -> String {
        match parse(args.iter().map(|a| a.to_string())) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(message) => message,
        }
    }

    #[test]
    fn bad_arguments_are_usage_errors_not_panics() {
        assert_eq!(error(&[]), "no mode given");
        assert_eq!(error(&["walk", "."]), "unknown mode \"walk\": list or grep");
        assert_eq!(error(&["list"]), "no target given");
        assert_eq!(error(&["grep", "."]), "grep needs a pattern");
        assert_eq!(error(&["list", ".", "--max"]), "--max needs a value");
        assert_eq!(
            error(&["list", ".", "--max", "-3"]),
            "--max takes a non-negative integer, got \"-3\""
        );
        assert_eq!(error(&["list", ".", "--bogus"]), "unknown flag \"--bogus\"");
        assert!(error(&["list", "/no/such/dir"]).starts_with("target /no/such/dir: "));
        assert!(parse(["grep", ".", "x", "-C", "2"].iter().map(|a| a.to_string())).is_ok());
    }
}
