//! Sockets, FIFOs and device nodes under the document's contract: named for what they are.
//!
//! The reference (0.36.0) answers `read_file` of a FIFO or socket with `File not found` and
//! `file_info` with `type: file`, both false (issue 9). Here `file_info` shows the real type and
//! `read_file` says the path is not a regular file. The workspace contract keeps 0.62.0's
//! one refusal for every tool ([`crate::fs::contract::NOT_REGULAR_FILE`]).

use crate::error::{Error, ErrorKind};

/// The `type:` `file_info` shows for a mode: `file`, `directory`, `fifo`, `socket`,
/// `character device`, `block device` (`file` for anything else).
pub fn type_name(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "directory",
        libc::S_IFIFO => "fifo",
        libc::S_IFSOCK => "socket",
        libc::S_IFCHR => "character device",
        libc::S_IFBLK => "block device",
        _ => "file",
    }
}

/// A phrase for a special file's kind, as a refusal words it.
fn described(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFIFO => "a FIFO (named pipe)",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "a special file",
    }
}

/// The document contract's refusal to read or edit a special file: `'p' is a FIFO (named pipe),
/// not a regular file; the file tools only read and edit regular files.` (`mode` unknown:
/// `a special file`).
pub fn not_regular(path: &str, mode: Option<libc::mode_t>) -> Error {
    let path = &*crate::fs::text::names::inline(path);
    Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "'{path}' is {}, not a regular file; the file tools only read and edit regular files.",
            mode.map_or("a special file", described)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(type_name(libc::S_IFIFO | 0o644), "fifo");
        assert_eq!(type_name(libc::S_IFSOCK), "socket");
        assert_eq!(type_name(libc::S_IFCHR), "character device");
        assert_eq!(type_name(libc::S_IFREG), "file");
        assert_eq!(
            not_regular("p", Some(libc::S_IFIFO)).message,
            "'p' is a FIFO (named pipe), not a regular file; the file tools only read and edit regular files."
        );
    }
}
