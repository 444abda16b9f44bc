//! Brace alternatives in the globs the walkers take (`find_files` patterns, `include_glob`):
//! `*.{ts,tsx}` matches what `*.ts` or `*.tsx` matches, as globset, ripgrep and shells do.
//!
//! Python's `fnmatch` (the document's glob) takes `{` literally, so the reference answers
//! `find_files('**/*.{ts,tsx}')` with a bare `No matches found.` (issue 9). Here a component
//! with a `{...,...}` group matches any expansion of it, and the literal spelling too (a file
//! really named `a{b,c}` is still found). A group spanning `/` is refused with a retry, as is
//! a pattern expanding past [`MAX_ALTERNATIVES`].

use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::access::Fnmatch;
use crate::fs::text::py_repr;

/// Most alternatives one glob may expand to (`{a,b}{c,d}` is 4).
pub const MAX_ALTERNATIVES: usize = 256;

/// The byte range of the first `{...}` group with a top-level `,` in `pat`, outside `[...]`
/// classes: `(open, close)` indices of the braces.
fn first_group(pat: &[char]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < pat.len() {
        match pat[i] {
            '[' => i = class_end(pat, i).unwrap_or(i),
            '{' => {
                if let Some(close) = group_close(pat, i) {
                    return Some((i, close));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where a `[...]` class opened at `open` ends (fnmatch's rules), if it is closed.
fn class_end(pat: &[char], open: usize) -> Option<usize> {
    let mut j = open + 1;
    if pat.get(j) == Some(&'!') {
        j += 1;
    }
    if pat.get(j) == Some(&']') {
        j += 1;
    }
    (j..pat.len()).find(|&k| pat[k] == ']')
}

/// The matching `}` of the `{` at `open` when the group has a top-level `,`.
fn group_close(pat: &[char], open: usize) -> Option<usize> {
    let (mut depth, mut comma) = (0usize, false);
    let mut i = open;
    while i < pat.len() {
        match pat[i] {
            '[' => i = class_end(pat, i).unwrap_or(i),
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return comma.then_some(i);
                }
            }
            ',' if depth == 1 => comma = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Splits a group's body on its top-level commas.
fn split_alternatives(body: &[char]) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0usize);
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        match c {
            '[' => {
                if let Some(end) = class_end(body, i) {
                    cur.extend(&body[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    out.push(cur);
    out
}

/// Whether `pat` has a `{...,...}` group (outside `[...]` classes).
pub fn has_braces(pat: &str) -> bool {
    pat.contains('{') && first_group(&pat.chars().collect::<Vec<_>>()).is_some()
}

/// Every spelling `pat` stands for, groups expanded left to right (nested groups too), in
/// order; `pat` itself alone when it has no group.
///
/// Errors: `ErrorKind::InvalidPattern` past [`MAX_ALTERNATIVES`].
pub fn expand(pat: &str) -> Result<Vec<String>> {
    let mut done = Vec::new();
    let mut todo = vec![pat.to_string()];
    while let Some(p) = todo.pop() {
        let chars: Vec<char> = p.chars().collect();
        match first_group(&chars) {
            None => done.push(p),
            Some((open, close)) => {
                let head: String = chars[..open].iter().collect();
                let tail: String = chars[close + 1..].iter().collect();
                for alt in split_alternatives(&chars[open + 1..close])
                    .into_iter()
                    .rev()
                {
                    todo.push(format!("{head}{alt}{tail}"));
                }
            }
        }
        if done.len() + todo.len() > MAX_ALTERNATIVES {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!(
                    "Pattern {} expands to more than {MAX_ALTERNATIVES} alternatives; use fewer braces.",
                    py_repr(pat)
                ),
            ));
        }
    }
    Ok(done)
}

/// An fnmatch matcher for `pat` with brace groups: any expansion, or the literal spelling.
///
/// Errors: as [`Fnmatch::new`] and [`expand`].
pub fn fnmatch(pat: &str) -> Result<Fnmatch> {
    if !has_braces(pat) {
        return Fnmatch::new(pat);
    }
    let mut all = expand(pat)?;
    all.push(pat.to_string());
    Fnmatch::any_of(&all)
}

/// Refuses a `find_files` pattern whose brace group spans a `/` (components are matched one
/// at a time); the retry names the alternatives to run instead.
pub fn check_components(pattern: &str) -> Result<()> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut from = 0;
    while let Some((open, close)) = first_group(&chars[from..]) {
        let (open, close) = (from + open, from + close);
        from = open + 1;
        if chars[open..close].contains(&'/') {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!(
                    "Pattern {}: braces spanning '/' are not supported; put the braces inside one path component, or run one search per alternative.",
                    py_repr(pattern)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansions() {
        let cases: [(&str, &[&str]); 7] = [
            ("*.{ts,tsx}", &["*.ts", "*.tsx"]),
            ("{a,b}{c,d}", &["ac", "ad", "bc", "bd"]),
            ("x{a,{b,c}}y", &["xay", "xby", "xcy"]),
            ("{single}", &["{single}"]),
            ("[{,]x", &["[{,]x"]),
            ("{a,}z", &["az", "z"]),
            ("plain", &["plain"]),
        ];
        for (pat, want) in cases {
            assert_eq!(expand(pat).unwrap(), want, "{pat}");
        }
        assert!(expand("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}")
            .unwrap_err()
            .message
            .contains("more than 256 alternatives"));
    }

    #[test]
    fn matchers() {
        let m = fnmatch("src/*.{ts,tsx}").unwrap();
        for (path, want) in [
            ("src/a.ts", true),
            ("src/a.tsx", true),
            ("src/a.{ts,tsx}", true),
            ("src/a.js", false),
        ] {
            assert_eq!(m.is_match(path), want, "{path}");
        }
        assert!(check_components("{src/a,lib}/*.ts").is_err());
        assert!(check_components("x/{a,b}/{c/d,e}").is_err());
        assert!(check_components("{src,lib}/*.{ts,tsx}").is_ok());
    }
}
