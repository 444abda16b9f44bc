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
//! (`--lexical` on either: authorize without `realpath`.)
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

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().expect("mode: list or grep");
    let target = PathBuf::from(args.next().expect("target"));
    let pattern = if mode == "grep" {
        args.next().expect("pattern")
    } else {
        String::new()
    };
    let (mut glob, mut file_type, mut ignore_case, mut literal, mut context) =
        (None, None, false, false, 0);
    let (mut max, mut root, mut cwd, mut repeat, mut quiet) = (1000, None, None, 1, false);
    let mut lexical = false;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--glob" => glob = args.next(),
            "--type" => file_type = args.next(),
            "-i" => ignore_case = true,
            "-F" => literal = true,
            "-C" => context = args.next().unwrap().parse().unwrap(),
            "--max" => max = args.next().unwrap().parse().unwrap(),
            "--root" => root = args.next().map(PathBuf::from),
            "--cwd" => cwd = args.next().map(PathBuf::from),
            "--repeat" => repeat = args.next().unwrap().parse().unwrap(),
            "--quiet" => quiet = true,
            "--lexical" => lexical = true,
            other => panic!("unknown flag {other}"),
        }
    }
    let target = std::fs::canonicalize(&target).expect("target exists");
    let root = std::fs::canonicalize(root.unwrap_or_else(|| target.clone())).unwrap();
    let cwd = std::fs::canonicalize(cwd.unwrap_or_else(|| root.clone())).unwrap();
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
            Err(err) => format!("ERROR {:?}: {}", err.kind, err.message),
        };
        eprintln!("elapsed_s {:.6}", elapsed.as_secs_f64());
    }
    if !quiet {
        println!("{text}");
    }
}
