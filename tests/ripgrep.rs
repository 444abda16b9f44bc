//! `list_files` and `grep` against the real `rg` with the reference's arguments and
//! post-processing (see `fixtures/ripgrep`), plus hard-coded expectations that hold
//! without `rg`. Set `RIPGREP_BIN` or put `rg` on PATH to run the comparisons.

#[path = "fixtures/ripgrep/mod.rs"]
mod fixtures;

use std::path::{Path, PathBuf};

use fixtures::*;
use pydantic_ai_harness_rs::cancel::CancelFlag;
use pydantic_ai_harness_rs::error::ErrorKind;
use pydantic_ai_harness_rs::fs::ripgrep::{
    grep, list_files, GrepOptions, ListFilesOptions, Listing,
};
use Set::*;

struct Tree {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
}

fn tree() -> Tree {
    setup_env();
    let tmp = tempfile::tempdir().unwrap();
    let repo = big_tree(tmp.path());
    Tree {
        repo: std::fs::canonicalize(repo).unwrap(),
        _tmp: tmp,
    }
}

fn skip_note(what: &str) {
    eprintln!(
        "note: rg not found (set RIPGREP_BIN or PATH); skipping the rg comparison for {what}"
    );
}

/// `list_files` options: not hidden, no sort budget.
fn list_opts(glob: Option<&str>, max: usize) -> ListFilesOptions {
    ListFilesOptions {
        hidden: false,
        glob: glob.map(str::to_string),
        max_results: max,
        sorted_budget: None,
    }
}

/// Runs `list_files` on `root/dir` with cwd `root/cwd`; compares with the reference.
fn list(
    root: &Path,
    dir: &str,
    cwd: &str,
    glob: Option<&str>,
    max: usize,
    denied: &[&str],
) -> Listing {
    let dir = root.join(dir);
    let auth = TestAuth::new(root, &root.join(cwd), denied);
    let mut opts = list_opts(glob, max);
    let ours = list_files(&dir, &opts, &auth, &CancelFlag::new()).map_err(|e| e.message);
    // Walked on every core and sorted at the end: the same listing.
    opts.sorted_budget = Some(std::time::Duration::ZERO);
    let parallel = list_files(&dir, &opts, &auth, &CancelFlag::new()).map_err(|e| e.message);
    assert_eq!(
        parallel, ours,
        "parallel list_files {dir:?} glob={glob:?} max={max}"
    );
    let args = list_args(glob);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match reference(&dir, &args, true, max, &auth) {
        Some(expected) => assert_eq!(ours, expected, "list_files {dir:?} glob={glob:?} max={max}"),
        None => skip_note("list_files"),
    }
    ours.expect("list_files succeeds")
}

fn opts(pattern: &str) -> GrepOptions {
    GrepOptions {
        pattern: pattern.to_string(),
        max_results: 1000,
        ..Default::default()
    }
}

/// One change to the options [`opts`] gives.
#[derive(Clone, Copy)]
enum Set {
    Glob(&'static str),
    Type(&'static str),
    Context(usize),
    Max(usize),
    IgnoreCase,
    Literal,
}

/// [`opts`] with `sets` applied in order.
fn opts_with(pattern: &str, sets: &[Set]) -> GrepOptions {
    let mut o = opts(pattern);
    for set in sets {
        match *set {
            Glob(glob) => o.glob = Some(glob.into()),
            Type(name) => o.file_type = Some(name.into()),
            Context(lines) => o.context = lines,
            Max(max) => o.max_results = max,
            IgnoreCase => o.ignore_case = true,
            Literal => o.literal = true,
        }
    }
    o
}

/// Runs `grep` on `root/target` with cwd `root/cwd`; compares with the reference.
fn grep_cmp(
    root: &Path,
    target: &str,
    cwd: &str,
    opts: &GrepOptions,
    denied: &[&str],
) -> Result<Listing, String> {
    let target = root.join(target);
    let auth = TestAuth::new(root, &root.join(cwd), denied);
    let sorted = GrepOptions {
        sorted_budget: Some(std::time::Duration::from_secs(3600)),
        ..opts.clone()
    };
    let ours = grep(&target, &sorted, &auth, &CancelFlag::new());
    // Searched on every core and put in order at the end: the same listing, binary count too.
    let parallel = GrepOptions {
        sorted_budget: Some(std::time::Duration::ZERO),
        ..opts.clone()
    };
    let parallel = grep(&target, &parallel, &auth, &CancelFlag::new());
    assert_eq!(
        parallel.as_ref().map_err(|e| &e.message),
        ours.as_ref().map_err(|e| &e.message),
        "parallel grep {target:?} {opts:?}"
    );
    // `rg` prints no count of the binary files it left out (`report_skipped` uses it).
    let ours = ours
        .map(|listing| Listing {
            binary_skipped: 0,
            ..listing
        })
        .map_err(|e| e.message);
    let (rg_cwd, rg_target) = if target.is_dir() {
        (target.clone(), ".".to_string())
    } else {
        (
            target.parent().unwrap().to_path_buf(),
            format!("./{}", target.file_name().unwrap().to_string_lossy()),
        )
    };
    let args = grep_args(opts, &rg_target);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match reference(&rg_cwd, &args, false, opts.max_results, &auth) {
        Some(expected) => assert_eq!(ours, expected, "grep {target:?} {opts:?}"),
        None => skip_note("grep"),
    }
    ours
}

/// [`grep_cmp`] with no denied patterns, which must succeed.
fn grep_ok(root: &Path, target: &str, cwd: &str, opts: &GrepOptions) -> Listing {
    grep_cmp(root, target, cwd, opts, &[]).unwrap()
}

/// [`grep_ok`] for each `(target, cwd, options)`: the comparison with `rg` only.
fn grep_all(root: &Path, cases: &[(&str, &str, GrepOptions)]) {
    for (target, cwd, o) in cases {
        grep_ok(root, target, cwd, o);
    }
}

/// [`grep_ok`] for each `(target, cwd, options, lines)`, which must give exactly `lines`.
fn grep_expect(root: &Path, cases: &[(&str, &str, GrepOptions, &[&str])]) {
    for (target, cwd, o, expected) in cases {
        let out = grep_ok(root, target, cwd, o);
        assert_eq!(lines(&out), *expected, "grep {target:?} cwd={cwd:?} {o:?}");
    }
}

/// `needle` searched from `root` itself, with one option changed per case, which must give
/// exactly the lines given.
fn grep_needle(root: &Path, cases: &[(Set, &[&str])]) {
    let cases: Vec<_> = cases
        .iter()
        .map(|&(set, expected)| (".", ".", opts_with("needle", &[set]), expected))
        .collect();
    grep_expect(root, &cases);
}

fn lines(listing: &Listing) -> Vec<&str> {
    listing.text.split_terminator('\n').collect()
}

#[test]
fn list_files_follows_ignore_rules_and_sorts_depth_first() {
    let t = tree();
    let out = list(&t.repo, ".", ".", None, 1000, &[]);
    assert!(!out.truncated);
    assert_eq!(
        lines(&out),
        [
            "B.txt",
            "_under.txt",
            "a/b.txt",
            "a-b.txt",
            "a.txt",
            "b.py",
            "bad_utf8.txt",
            "bin/data.bin",
            "bin/late.bin",
            "c.rs",
            "crlf.txt",
            "ctx.txt",
            "empty.txt",
            "keep.log",
            "long.txt",
            "meta.txt",
            "nonl.txt",
            "sub/deeper/z.py",
            "sub/top_only.txt",
            "sub/unignored.tmp",
            "sub/y.txt",
            "utf16.txt",
            "é.txt",
        ]
    );
}

#[test]
fn list_files_glob_overrides_ignore_files_but_not_the_dot_rule() {
    let t = tree();
    let out = list(&t.repo, ".", ".", Some("*.log"), 1000, &[]);
    assert_eq!(lines(&out), ["drop.log", "keep.log"]);
    let out = list(&t.repo, ".", ".", Some("*.txt"), 1000, &[]);
    // A glob does not re-include a directory an ignore file excludes: `build/` stays out.
    assert!(!out.lines().contains(&"build/out.txt".to_string()));
    assert!(out
        .lines()
        .contains(&"ignored_by_dot_ignore.txt".to_string()));
    assert!(!out.lines().iter().any(|l| l.contains("hidden")));
    for glob in ["!*.txt", "sub/**", "*.py", "**/*.py", "*", ""] {
        list(&t.repo, ".", ".", Some(glob), 1000, &[]);
    }
}

#[test]
fn list_files_in_a_subdirectory_reads_parent_ignore_files() {
    let t = tree();
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "sub",
            ".",
            &[
                "sub/deeper/z.py",
                "sub/top_only.txt",
                "sub/unignored.tmp",
                "sub/y.txt",
            ],
        ),
        ("sub/deeper", "sub", &["deeper/z.py"]),
        // cwd below the walk root: paths climb with `..`.
        ("a", "sub", &["../a/b.txt"]),
    ];
    for (dir, cwd, expected) in cases {
        let out = list(&t.repo, dir, cwd, None, 1000, &[]);
        assert_eq!(lines(&out), expected, "list_files {dir:?} cwd={cwd:?}");
    }
}

#[test]
fn list_files_cap_is_exact() {
    let t = tree();
    let all = list(&t.repo, ".", ".", None, 1000, &[]).lines();
    let n = all.len();
    for max in [0, 1, 3, n - 1, n, n + 1] {
        let out = list(&t.repo, ".", ".", None, max, &[]);
        assert_eq!(out.lines(), all[..max.min(n)].to_vec());
        assert_eq!(out.truncated, max < n, "max={max}");
    }
}

#[test]
fn list_files_applies_access_patterns() {
    let t = tree();
    let out = list(&t.repo, ".", ".", None, 1000, &["sub", "*.py"]);
    assert!(!out
        .lines()
        .iter()
        .any(|l| l.starts_with("sub/") || l.ends_with(".py")));
    // Denied entries do not count towards the cap.
    let out = list(&t.repo, ".", ".", None, 5, &["a*"]);
    assert_eq!(
        lines(&out),
        [
            "B.txt",
            "_under.txt",
            "b.py",
            "bad_utf8.txt",
            "bin/data.bin"
        ]
    );
    assert!(out.truncated);
}

/// A directory, the empty directories made in it, the files written in it, its listing.
type RepoCase = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

#[test]
fn gitignore_needs_a_repository() {
    setup_env();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let cases: [RepoCase; 4] = [
        (
            "plain",
            &[],
            &[
                (".gitignore", "*.log\n"),
                (".ignore", "*.tmp\n"),
                ("a.log", "x\n"),
                ("b.tmp", "x\n"),
                ("c.txt", "x\n"),
            ],
            &["a.log", "c.txt"],
        ),
        // A `.git` file (a worktree or submodule) makes a repository too.
        (
            "wt",
            &[],
            &[
                (".git", "gitdir: /nowhere\n"),
                (".gitignore", "*.log\n"),
                ("a.log", "x\n"),
                ("c.txt", "x\n"),
            ],
            &["c.txt"],
        ),
        // A jujutsu repository (`.jj`) counts as one too.
        (
            "jj",
            &[".jj"],
            &[
                (".gitignore", "*.log\n"),
                ("a.log", "x\n"),
                ("c.txt", "x\n"),
            ],
            &["c.txt"],
        ),
        // An empty `.git` directory is enough.
        (
            "repo",
            &[".git"],
            &[
                (".gitignore", "*.log\nsub/\n"),
                ("a.log", "x\n"),
                ("sub/in.txt", "x\n"),
                ("keep.txt", "x\n"),
            ],
            &["keep.txt"],
        ),
    ];
    for (dir, dirs, files, expected) in cases {
        for sub in dirs {
            mkdir(&root, &format!("{dir}/{sub}"));
        }
        for (name, body) in files {
            write(&root, &format!("{dir}/{name}"), body);
        }
        let out = list(&root, dir, dir, None, 100, &[]);
        assert_eq!(lines(&out), expected, "{dir}");
    }
}

#[test]
fn symlinks_are_not_followed() {
    let t = tree();
    let out = list(&t.repo, ".", ".", Some("link*"), 100, &[]);
    assert!(out.lines().is_empty());
    let out = grep_ok(&t.repo, ".", ".", &opts_with("needle", &[Glob("link*")]));
    assert!(out.lines().is_empty());
}

#[test]
fn grep_basic_and_flags() {
    let t = tree();
    let out = grep_ok(&t.repo, ".", ".", &opts("needle"));
    let got = lines(&out);
    assert_eq!(
        &got[..4],
        [
            "B.txt:1:upper needle",
            "_under.txt:1:under needle",
            "a/b.txt:1:needle a/b",
            "a-b.txt:1:needle a-b"
        ]
    );
    assert!(got.contains(&"a.txt:1:alpha needle"));
    assert!(!got.contains(&"a.txt:3:gamma Needle"));
    assert!(got.contains(&"crlf.txt:1:needle crlf\r"));
    assert!(got.contains(&"utf16.txt:1:needle utf16"));
    assert!(got.contains(&"nonl.txt:1:no newline needle"));
    assert!(got.contains(&"bad_utf8.txt:1:needle \u{fffd}\u{fffd} bytes \u{fffd} end"));
    // Walked binary files: a NUL in the first buffer drops the file; a late one stops it
    // after the matches before it, with rg's warning.
    assert!(!got.iter().any(|l| l.starts_with("bin/data.bin")));
    assert!(got.contains(&"bin/late.bin:1:needle early"));
    assert!(got.contains(
        &"bin/late.bin: WARNING: stopped searching binary file after match (found \"\\0\" byte around offset 200014)"
    ));

    let out = grep_ok(&t.repo, ".", ".", &opts_with("NEEDLE", &[IgnoreCase]));
    assert!(lines(&out).contains(&"a.txt:3:gamma Needle"));

    grep_expect(
        &t.repo,
        &[
            (
                ".",
                ".",
                opts_with("a.b(c", &[Literal]),
                &["meta.txt:1:a.b(c needle"],
            ),
            (
                ".",
                ".",
                opts("a.b\\(c"),
                &["meta.txt:1:a.b(c needle", "meta.txt:2:axb(c"],
            ),
        ],
    );
    grep_all(
        &t.repo,
        &[
            (".", ".", opts_with("A.B(C", &[Literal, IgnoreCase])),
            (".", ".", opts("^$")),
            (".", ".", opts("")),
            (".", ".", opts("\\bneedle\\b")),
            (".", ".", opts("(?i)ÉÉ")),
        ],
    );
}

#[test]
fn grep_context_groups_drop_separators() {
    let t = tree();
    let out = grep_ok(&t.repo, "ctx.txt", ".", &opts_with("needle", &[Context(2)]));
    assert_eq!(
        lines(&out),
        [
            "ctx.txt-8-line 8",
            "ctx.txt-9-line 9",
            "ctx.txt:10:line 10 needle",
            "ctx.txt-11-line 11",
            "ctx.txt:12:line 12 needle",
            "ctx.txt-13-line 13",
            "ctx.txt-14-line 14",
            "ctx.txt-28-line 28",
            "ctx.txt-29-line 29",
            "ctx.txt:30:line 30 needle",
            "ctx.txt-31-line 31",
            "ctx.txt-32-line 32",
            "ctx.txt-53-line 53",
            "ctx.txt-54-line 54",
            "ctx.txt:55:line 55 needle",
            "ctx.txt-56-line 56",
            "ctx.txt-57-line 57",
        ]
    );
    for context in [0, 1, 2, 5, 20] {
        let o = opts_with("needle", &[Context(context)]);
        grep_all(&t.repo, &[(".", ".", o.clone()), ("ctx.txt", "sub", o)]);
    }
    let out = grep_ok(
        &t.repo,
        "ctx.txt",
        ".",
        &opts_with("needle", &[Context(20)]),
    );
    assert_eq!(out.lines().len(), 60);
}

#[test]
fn grep_long_lines_are_previewed() {
    let t = tree();
    for context in [0, 1] {
        let out = grep_ok(
            &t.repo,
            "long.txt",
            ".",
            &opts_with("needle", &[Context(context)]),
        );
        let omitted = " [... omitted end of long line]";
        assert_eq!(
            out.lines()[context],
            format!("long.txt:2:needle{}{omitted}", "x".repeat(4090))
        );
        assert!(out.lines().iter().all(|l| l.chars().count() < 4200));
    }
}

#[test]
fn grep_file_target_and_explicit_binary() {
    let t = tree();
    grep_expect(
        &t.repo,
        &[
            ("a.txt", ".", opts("needle"), &["a.txt:1:alpha needle"]),
            ("sub/y.txt", "sub", opts("needle"), &["y.txt:1:needle y"]),
            // An explicit file is searched whatever the ignore rules, glob and type say.
            (
                "drop.log",
                ".",
                opts_with("needle", &[Type("py")]),
                &["drop.log:1:dropped log needle"],
            ),
        ],
    );
    grep_ok(
        &t.repo,
        "drop.log",
        ".",
        &opts_with("needle", &[Glob("*.py")]),
    );
    // ... but the dot rule still drops it.
    let out = grep_ok(&t.repo, ".hidden_file.txt", ".", &opts("needle"));
    assert!(out.lines().is_empty());
    let out = grep_ok(&t.repo, "bin/data.bin", ".", &opts("needle"));
    assert_eq!(
        lines(&out),
        ["bin/data.bin: binary file matches (found \"\\0\" byte around offset 7)"]
    );
    for context in [0, 1, 3] {
        for pattern in ["needle", "late", "early", "y+", "nomatch"] {
            let o = opts_with(pattern, &[Context(context)]);
            grep_all(
                &t.repo,
                &[("bin/late.bin", ".", o.clone()), ("bin/data.bin", ".", o)],
            );
        }
    }
    grep_all(
        &t.repo,
        &[
            ("utf16.txt", ".", opts("needle")),
            ("empty.txt", ".", opts("")),
            ("long.txt", ".", opts_with("needle", &[Context(2)])),
        ],
    );
}

#[test]
fn grep_file_types() {
    let t = tree();
    grep_needle(
        &t.repo,
        &[
            (
                Type("py"),
                &["b.py:1:def needle():", "sub/deeper/z.py:1:needle = 'z'"],
            ),
            (Type("rust"), &["c.rs:1:fn needle() {}"]),
        ],
    );
    grep_all(
        &t.repo,
        &[
            (".", ".", opts_with("needle", &[Type("all")])),
            (".", ".", opts_with("needle", &[Type("txt"), Glob("a*")])),
        ],
    );
}

#[test]
fn grep_errors_read_as_rg() {
    let t = tree();
    let auth = TestAuth::new(&t.repo, &t.repo, &[]);
    let cancel = CancelFlag::new();
    let err = grep(&t.repo, &opts_with("(", &[Type("nope")]), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert_eq!(
        err.message,
        "ripgrep failed: rg: unrecognized file type: nope"
    );
    let err = grep(&t.repo, &opts("(foo"), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidPattern);
    assert_eq!(
        err.message,
        "ripgrep failed: rg: regex parse error:\n    (?:(foo)\n    ^\nerror: unclosed group"
    );
    let err = grep(&t.repo, &opts_with("(", &[Glob("{a")]), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidPattern);
    assert!(err
        .message
        .starts_with("ripgrep failed: rg: error parsing glob '{a'"));
    for o in [
        opts_with("(", &[Type("nope"), Glob("{a")]),
        opts_with("(", &[Glob("{a")]),
        opts("(foo"),
        opts("a\nb"),
        opts_with("a\nb", &[Literal]),
        opts("\\x00"),
        opts("(?=a)"),
        opts("(a)\\1"),
        opts("[z-a]"),
        opts("\\p{Nope}"),
    ] {
        assert!(grep_cmp(&t.repo, ".", ".", &o, &[]).is_err(), "{o:?}");
    }
    let err = list_files(&t.repo, &list_opts(Some("a{"), 5), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidPattern);
    let err = list_files(&t.repo, &list_opts(Some("[z-a]"), 5), &auth, &cancel).unwrap_err();
    let expected = reference(
        &t.repo,
        &["--files", "--sort", "path", "--glob", "[z-a]"],
        true,
        5,
        &auth,
    );
    if let Some(expected) = expected {
        assert_eq!(Err(err.message), expected);
    }
}

#[test]
fn grep_cap_is_exact_and_counts_only_accepted_lines() {
    let t = tree();
    let all = grep_ok(&t.repo, ".", ".", &opts_with("needle", &[Context(1)])).lines();
    let n = all.len();
    for max in [0, 1, 2, 7, n - 1, n, n + 1] {
        let o = opts_with("needle", &[Context(1), Max(max)]);
        let out = grep_ok(&t.repo, ".", ".", &o);
        assert_eq!(out.lines(), all[..max.min(n)].to_vec());
        assert_eq!(out.truncated, max < n, "max={max}");
    }
    let o = opts_with("needle", &[Max(3)]);
    let out = grep_cmp(&t.repo, ".", ".", &o, &["a*", "b*"]).unwrap();
    // Denied patterns are case-insensitive: `B.txt` goes too.
    assert_eq!(
        lines(&out),
        [
            "_under.txt:1:under needle",
            "c.rs:1:fn needle() {}",
            "crlf.txt:1:needle crlf\r"
        ]
    );
    assert!(out.truncated);
}

#[test]
fn grep_glob_precedence_over_ignore_files() {
    let t = tree();
    grep_needle(
        &t.repo,
        &[
            (
                Glob("*.log"),
                &[
                    "drop.log:1:dropped log needle",
                    "keep.log:1:kept log needle",
                ],
            ),
            (
                Glob("*.tmp"),
                &[
                    "sub/unignored.tmp:1:needle unignored tmp",
                    "sub/x.tmp:1:needle tmp",
                ],
            ),
        ],
    );
    grep_all(
        &t.repo,
        &[
            (".", ".", opts_with("needle", &[Glob("!*.txt")])),
            ("sub", ".", opts_with("needle", &[Glob("*.py")])),
            (
                "sub",
                "sub/deeper",
                opts_with("needle", &[Glob("deeper/*")]),
            ),
        ],
    );
}

#[test]
fn grep_in_subdirectory_with_cwd_elsewhere() {
    let t = tree();
    let out = grep_ok(&t.repo, "sub", "a", &opts("needle"));
    assert_eq!(
        lines(&out),
        [
            "../sub/deeper/z.py:1:needle = 'z'",
            "../sub/top_only.txt:1:sub top only needle",
            "../sub/unignored.tmp:1:needle unignored tmp",
            "../sub/y.txt:1:needle y"
        ]
    );
    grep_cmp(&t.repo, "sub", ".", &opts("needle"), &["*.tmp"]).unwrap();
}

#[test]
fn cancelled_calls_stop() {
    let t = tree();
    let auth = TestAuth::new(&t.repo, &t.repo, &[]);
    let cancel = CancelFlag::new();
    cancel.cancel();
    let err = grep(&t.repo, &opts("needle"), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    let err = list_files(&t.repo, &list_opts(None, 5), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
}

/// Writes the fixture tree to `$RG_FIXTURE_DIR` for manual comparisons with the Python
/// reference: `RG_FIXTURE_DIR=/tmp/t cargo test --test ripgrep dump_tree -- --ignored`.
#[test]
#[ignore]
fn dump_tree() {
    let dir = PathBuf::from(std::env::var_os("RG_FIXTURE_DIR").expect("RG_FIXTURE_DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    big_tree(&dir);
}

#[test]
fn walk_roots_inside_ignored_or_hidden_directories() {
    let t = tree();
    // The dot rule looks only below the walk root.
    let out = list(&t.repo, ".hidden_dir", ".", None, 100, &[]);
    assert_eq!(lines(&out), [".hidden_dir/x.txt"]);
    grep_ok(&t.repo, ".hidden_dir", ".", &opts("needle"));
    list(&t.repo, "build", ".", None, 100, &[]);
    list(&t.repo, "node_modules/pkg", ".", None, 100, &[]);
    grep_all(
        &t.repo,
        &[
            ("build", "build", opts("needle")),
            ("build/out.txt", ".", opts("needle")),
        ],
    );
}

#[test]
fn late_nul_detection_depends_on_the_shared_line_buffer() {
    setup_env();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    // b.bin grows the searcher's buffer past 64 KiB, so d.bin's NUL at 70 005 lands in its
    // first read and d.bin is skipped silently; h.bin's NUL is far enough to be seen late.
    let mut b = vec![b'y'; 70_000];
    b.extend(b"\nneedle\0bar\n");
    write(&root, "b.bin", b);
    let mut d = b"needle\n".to_vec();
    d.extend(vec![b'y'; 70_000]);
    d.extend(b"\n\0\nneedle\n");
    write(&root, "d.bin", d);
    let mut h = b"needle\n".to_vec();
    h.extend(vec![b'y'; 300_000]);
    h.extend(b"\n\0\nneedle\n");
    write(&root, "h.bin", h);
    write(&root, "z.txt", "needle\n");
    for context in [0, 1] {
        let o = opts_with("needle", &[Context(context)]);
        let out = grep_ok(&root, ".", ".", &o);
        assert!(
            !out.lines().iter().any(|l| l.starts_with("d.bin")),
            "{out:?}"
        );
        assert_eq!(out.lines().last().unwrap(), "z.txt:1:needle");
        for name in ["b.bin", "d.bin", "h.bin"] {
            grep_ok(&root, name, ".", &o);
        }
    }
}

#[test]
fn non_utf8_names_and_odd_names() {
    use std::os::unix::ffi::OsStrExt;
    setup_env();
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"bad\xffname.txt");
    std::fs::write(root.join(name), "needle\n").unwrap();
    write(&root, "a:1:b.txt", "needle\n");
    write(&root, "10-2-c.txt", "needle\nctx\n");
    write(&root, "sp ace.txt", "needle\n");
    let out = list(&root, ".", ".", None, 100, &[]);
    assert_eq!(
        lines(&out),
        [
            "10-2-c.txt",
            "a:1:b.txt",
            "bad\u{fffd}name.txt",
            "sp ace.txt"
        ]
    );
    let out = grep_ok(&root, ".", ".", &opts_with("needle", &[Context(1)]));
    assert_eq!(
        lines(&out),
        [
            "10-2-c.txt:1:needle",
            "10-2-c.txt-2-ctx",
            "a:1:b.txt:1:needle",
            "bad\u{fffd}name.txt:1:needle",
            "sp ace.txt:1:needle"
        ]
    );
}

/// xorshift64*: a dependency-free deterministic generator for the randomized trees.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn random_tree(rng: &mut Rng, root: &Path) {
    // `|`-separated: directory names hold spaces.
    let dir_names: Vec<&str> = "a|b|src|build|.hid|node_modules|x y|é|logs"
        .split('|')
        .collect();
    const NAMES: &[&str] = &[
        "keep", "main", "b", "c", "x1", "Z", "_u", "a-b", "a.b", ".dot", "data",
    ];
    const EXTS: &[&str] = &["py", "rs", "txt", "log", "tmp", "md", "bin", ""];
    // Ignore-file lines, whitespace-separated.
    let patterns: Vec<&str> = concat!(
        "*.log !keep.log build/ /a *.tmp src/**/*.md b !b/c.txt x* !*.py **/Z* a/ /src/*.rs ",
        "*.bin !data.bin é \\#x node_modules",
    )
    .split_whitespace()
    .collect();
    const WORDS: &[&str] = &[
        "needle", "Needle", "hay", "stack", "a", "b", "ne", "dle", "é", "\t", "x y",
    ];
    if rng.chance(70) {
        mkdir(root, ".git");
    }
    let mut dirs = vec![String::new()];
    for _ in 0..rng.below(8) {
        let parent = rng.pick(&dirs).clone();
        let dir = if parent.is_empty() {
            rng.pick(&dir_names).to_string()
        } else {
            format!("{parent}/{}", rng.pick(&dir_names))
        };
        if std::fs::create_dir_all(root.join(&dir)).is_ok() {
            dirs.push(dir);
        }
    }
    for _ in 0..rng.below(4) {
        let dir = rng.pick(&dirs).clone();
        let name = rng
            .pick(&[".gitignore", ".ignore", ".rgignore"])
            .to_string();
        let body: String = (0..1 + rng.below(3))
            .map(|_| format!("{}\n", rng.pick(&patterns)))
            .collect();
        let _ = std::fs::write(root.join(&dir).join(name), body);
    }
    for _ in 0..5 + rng.below(20) {
        let dir = rng.pick(&dirs).clone();
        let ext = rng.pick(EXTS);
        let name = if ext.is_empty() {
            rng.pick(NAMES).to_string()
        } else {
            format!("{}.{ext}", rng.pick(NAMES))
        };
        let mut body = Vec::new();
        for _ in 0..rng.below(30) {
            match rng.below(40) {
                0 => body.extend(vec![b'w'; 4090 + rng.below(20)]),
                1 => body.push(0),
                2 => body.extend(b"\xff\xe2\x82"),
                3 => body.extend(b"\r"),
                _ => {}
            }
            for _ in 0..rng.below(6) {
                body.extend(rng.pick(WORDS).as_bytes());
                body.push(b' ');
            }
            if !rng.chance(3) {
                body.push(b'\n');
            }
        }
        let _ = std::fs::write(root.join(&dir).join(name), body);
    }
}

#[test]
fn randomized_trees_match_rg() {
    setup_env();
    if rg_bin().is_none() {
        skip_note("randomized trees");
        return;
    }
    let seeds: u64 = std::env::var("RG_RANDOM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    for seed in 1..=seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        random_tree(&mut rng, &root);
        for _ in 0..6 {
            let glob = rng
                .pick(&[
                    None,
                    Some("*.py"),
                    Some("!*.txt"),
                    Some("src/**"),
                    Some("*"),
                    Some("*.{log,tmp}"),
                ])
                .map(str::to_string);
            let max = *rng.pick(&[0, 1, 3, 10, 1000]);
            let dir = rng.pick(&[".", "a", "src", "b"]).to_string();
            if root.join(&dir).is_dir() {
                list(&root, &dir, ".", glob.as_deref(), max, &[]);
            }
            let o = GrepOptions {
                hidden: false,
                clip: None,
                sorted_budget: None,
                pattern: rng
                    .pick(&[
                        "needle", "ne+dle", "^\\w+ $", "a|b", "", "é", "x y", "w{4000}",
                    ])
                    .to_string(),
                glob,
                file_type: rng
                    .pick(&[None, None, Some("py"), Some("rust"), Some("md")])
                    .map(str::to_string),
                ignore_case: rng.chance(30),
                literal: rng.chance(20),
                context: *rng.pick(&[0, 0, 1, 2, 3]),
                max_results: max,
            };
            if root.join(&dir).is_dir() {
                let _ = grep_cmp(&root, &dir, ".", &o, &[]);
            }
            // An explicit file somewhere in the tree.
            let files: Vec<PathBuf> = walk_files(&root);
            if !files.is_empty() {
                let file = rng.pick(&files);
                let rel = file
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let _ = grep_cmp(&root, &rel, ".", &o, &[]);
            }
        }
    }
}

fn walk_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn cancel_mid_walk_stops_with_cancelled() {
    let t = tree();
    let cancel = CancelFlag::new();
    let inner = TestAuth::new(&t.repo, &t.repo, &[]);
    let auth = |walked: &Path| {
        cancel.cancel();
        pydantic_ai_harness_rs::fs::ripgrep::Authorize::authorize(&inner, walked)
    };
    let err = grep(&t.repo, &opts("needle"), &auth, &cancel).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    let cancel2 = CancelFlag::new();
    let auth2 = |walked: &Path| {
        cancel2.cancel();
        pydantic_ai_harness_rs::fs::ripgrep::Authorize::authorize(&inner, walked)
    };
    let err = list_files(&t.repo, &list_opts(None, 100), &auth2, &cancel2).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
}

/// The type list comes from the `ignore` crate built here, which may be newer or older
/// than the user's `rg`: the common types must agree; other differences are printed.
#[test]
fn default_type_list_agrees_with_rg_on_common_types() {
    setup_env();
    let Some(bin) = rg_bin() else {
        skip_note("--type-list");
        return;
    };
    let mut builder = ignore::types::TypesBuilder::new();
    builder.add_defaults();
    let ours: std::collections::BTreeMap<String, String> = builder
        .definitions()
        .iter()
        .map(|def| (def.name().to_string(), def.globs().join(", ")))
        .collect();
    let out = std::process::Command::new(bin)
        .arg("--type-list")
        .output()
        .unwrap();
    let theirs: std::collections::BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(n, g)| (n.to_string(), g.to_string()))
        .collect();
    for name in [
        "py", "rust", "js", "ts", "go", "c", "cpp", "java", "md", "txt", "json", "yaml", "toml",
        "sh", "html", "css", "ruby", "all",
    ] {
        assert_eq!(ours.get(name), theirs.get(name), "type {name}");
    }
    let differ: Vec<&String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|n| ours.get(*n) != theirs.get(*n))
        .collect();
    if !differ.is_empty() {
        eprintln!("note: file types that differ from this rg: {differ:?}");
    }
}
