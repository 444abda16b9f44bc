//! Changing files: every write, edit and mkdir is planned ([`write`](mod@write): resolve, read what is
//! there, build the new bytes, nothing on disk changed), announced by the caller, then
//! committed crash-safely ([`replace`]: an atomic replace or a create-only file). The pieces
//! of a plan: edit matching ([`matching`], its opt-in tolerant tiers in [`tiers`]), the changed
//! region a result can show ([`shown`]), the event diff ([`diff`]), the caller's bytes
//! ([`content`]), the new content's hash and line count in one pass ([`tally`]), freeing
//! replaced files off the caller's path ([`reap`]) and writes to the kernel's pseudo-files
//! ([`kernel`]).

pub mod content;
pub mod diff;
pub mod kernel;
pub mod matching;
pub mod reap;
pub mod replace;
pub mod shown;
pub mod tally;
pub mod tiers;
pub mod write;
