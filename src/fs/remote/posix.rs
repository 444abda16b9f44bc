//! Workspace paths as text, the way Python's `posixpath` spells them.

/// `posixpath.normpath`.
pub fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if initial.is_empty() {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = format!("{initial}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `posixpath.join(base, path)` then `normpath`, as `Workspace.resolve` does.
pub fn join(base: &str, path: &str) -> String {
    if path.starts_with('/') {
        normpath(path)
    } else if base.ends_with('/') || base.is_empty() {
        normpath(&format!("{base}{path}"))
    } else {
        normpath(&format!("{base}/{path}"))
    }
}

/// Whether the normalized absolute `path` is `root` or below it, compared as text.
pub fn contains(root: &str, path: &str) -> bool {
    path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/')))
}

/// `posixpath.relpath(path, start)` of two normalized absolute paths.
pub fn relpath(path: &str, start: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let s: Vec<&str> = start.split('/').filter(|s| !s.is_empty()).collect();
    let common = p.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; s.len() - common];
    out.extend(&p[common..]);
    if out.is_empty() {
        ".".to_string()
    } else {
        out.join("/")
    }
}

/// Whether a relative path has a dot-prefixed component. Source: `_is_hidden`.
pub fn is_hidden(rel: &str) -> bool {
    rel != "." && rel.split('/').any(|p| p.starts_with('.'))
}

/// Whether a glob names a dot-prefixed component. Source: `_explicit_hidden`.
pub fn explicit_hidden(pattern: &str) -> bool {
    pattern.split('/').any(|p| p.starts_with('.'))
}

/// Python's `re.escape`.
pub fn re_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
