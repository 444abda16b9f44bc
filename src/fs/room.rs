//! Room in memory for work that grows with a file: a buffer the size of a file is
//! allocated fallibly (`try_reserve`), and the working room an edit needs beyond it is
//! probed first, so a file too big for the memory the process may use gets a retry the
//! model can act on instead of an allocation failure, which in Rust aborts the whole
//! interpreter (issue 19).

use crate::error::{Error, ErrorKind};

/// A buffer with room for `len` bytes, or `None` when that much memory cannot be had.
pub fn buffer(len: usize) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).ok()?;
    Some(buf)
}

/// Whether `len` more bytes could be allocated now: a block of that size is reserved and
/// given back (not touched, so it costs address space for a moment, not memory).
pub fn available(len: usize) -> bool {
    buffer(len).is_some()
}

/// Whether `buf` can grow by `more` bytes (reserved exactly: no doubling past the need).
pub fn grow(buf: &mut Vec<u8>, more: usize) -> bool {
    buf.try_reserve_exact(more).is_ok()
}

/// The retry for an edit whose file does not fit in memory: `path` and its size, nothing
/// written, and what the model can do instead.
pub fn too_big_to_edit(path: &str, size: u64) -> Error {
    let path = crate::fs::text::names::shown_path(path);
    Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "{path} is too big to edit in memory ({size} bytes). No changes were written. \
             Edit it with a tool that streams the file (a shell command such as sed), or \
             split it into smaller files."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory no process can have is refused, not aborted on; small buffers are served.
    #[test]
    fn impossible_sizes_are_refused() {
        assert!(buffer(usize::MAX / 2).is_none());
        assert!(!available(usize::MAX / 2));
        let mut small = buffer(16).unwrap();
        assert!(small.capacity() >= 16);
        assert!(!grow(&mut small, usize::MAX / 2));
        assert!(grow(&mut small, 4096));
    }

    #[test]
    fn the_retry_names_the_file_and_size() {
        let e = too_big_to_edit("big.txt", 2 << 30);
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e
            .message
            .starts_with("big.txt is too big to edit in memory (2147483648 bytes)."));
    }
}
