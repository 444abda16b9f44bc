//! Where a path may go: resolution beneath the root descriptor and containment ([`path`]),
//! the allowed, denied and read-only patterns ([`access`], with brace alternatives in
//! [`braces`]), FIFOs, sockets, devices and bounded pseudo-files ([`special`], [`pseudo`]),
//! and the look-alike name hint for a path that is not there ([`lookalike`]).

pub mod access;
pub mod braces;
pub mod lookalike;
pub mod path;
pub mod pseudo;
pub mod special;
