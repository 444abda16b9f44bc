//! The text a write plan holds: an owned `String` (an edit's result), or an immutable buffer
//! its caller keeps alive (a Python `str`'s UTF-8), shared without a copy, so `write_file` of
//! tens of MiB costs no copy of them before the write.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A plan's text: derefs to `str`.
#[derive(Clone)]
pub enum Content {
    /// Text the plan owns.
    Owned(String),
    /// Text borrowed from an immutable buffer that lives as long as this value, and its
    /// length in chars.
    Shared(Arc<dyn AsRef<str> + Send + Sync>, usize),
}

impl Content {
    /// Text shared from `buffer`, which must never change (an immutable string's storage),
    /// whose length in chars is `chars` (a Python `str`'s `len`, known without a pass).
    pub fn shared(buffer: impl AsRef<str> + Send + Sync + 'static, chars: usize) -> Self {
        debug_assert_eq!(buffer.as_ref().chars().count(), chars);
        Content::Shared(Arc::new(buffer), chars)
    }

    /// The length in chars.
    pub fn chars(&self) -> usize {
        match self {
            Content::Owned(s) => s.chars().count(),
            Content::Shared(_, chars) => *chars,
        }
    }
}

impl Default for Content {
    fn default() -> Self {
        Content::Owned(String::new())
    }
}

impl Deref for Content {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Content::Owned(s) => s,
            Content::Shared(b, _) => (**b).as_ref(),
        }
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Owned(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Owned(s.to_string())
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_and_shared_read_the_same() {
        let owned = Content::from("héllo".to_string());
        let shared = Content::shared(String::from("héllo"), 5);
        assert_eq!(&*owned, "héllo");
        assert_eq!(&*shared, "héllo");
        assert_eq!((owned.chars(), shared.chars()), (5, 5));
        assert_eq!(format!("{shared:?}"), "\"héllo\"");
        assert_eq!(&*Content::default(), "");
    }
}
