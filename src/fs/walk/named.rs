//! Names a walk can build from the walked path alone: below a walk root at or below `cwd`,
//! with no access pattern to check, an entry reached through real directories is shown as
//! the root's name, `/` and its path below the root, so a big walk collects paths
//! ([`super::Collected::push_named`]) and builds no line per entry.

use std::path::Path;

use crate::fs::path::strip_base;
use crate::fs::FileSystem;

impl FileSystem {
    /// The prefix every real entry below the walk root `root` (resolved: absolute,
    /// normalized, its written name its real one) is shown with: `root`'s name relative to
    /// `cwd` and `/`, or empty for `cwd` itself; `None` when an access pattern applies, or
    /// `root` is outside the root directory, above `cwd` or named in non-UTF-8.
    ///
    /// What [`FileSystem::walk_target`] and [`crate::fs::path::Root::rel_to_cwd`] give such
    /// an entry: containment holds below a contained root, and every path is readable.
    pub(crate) fn plain_prefix(&self, root: &Path) -> Option<String> {
        if !self.access.is_unrestricted() {
            return None;
        }
        strip_base(root, self.root.real_root())?;
        let below = strip_base(root, self.root.cwd())?.to_str()?;
        Some(if below.is_empty() {
            String::new()
        } else {
            format!("{below}/")
        })
    }
}
