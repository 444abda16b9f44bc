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
    /// Text borrowed from an immutable buffer that lives as long as this value.
    Shared(Arc<dyn AsRef<str> + Send + Sync>),
}

impl Content {
    /// Text shared from `buffer`, which must never change (an immutable string's storage).
    pub fn shared(buffer: impl AsRef<str> + Send + Sync + 'static) -> Self {
        Content::Shared(Arc::new(buffer))
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
            Content::Shared(b) => (**b).as_ref(),
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
        let shared = Content::shared(String::from("héllo"));
        assert_eq!(&*owned, "héllo");
        assert_eq!(&*shared, "héllo");
        assert_eq!(format!("{shared:?}"), "\"héllo\"");
        assert_eq!(&*Content::default(), "");
    }
}
