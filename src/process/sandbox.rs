//! The OS sandbox of `Shell(sandbox=..., network=...)`: a Landlock ruleset prepared in the
//! supervisor and enforced in the child between fork and exec, so the command and every
//! process it starts can read the machine but write only beneath the allowed directories,
//! and (with the network denied) neither bind nor connect TCP sockets, loopback included.
//!
//! Under any sandbox the command cannot signal a process outside it (Landlock's signal scope,
//! ABI 6). Without the network it cannot reach an abstract UNIX socket created outside it
//! (ABI 6) nor, on kernels with `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` (ABI 9), connect to a
//! pathname UNIX socket outside the allowed directories. On older kernels these parts are
//! left out (best effort): [`SCOPE_ABI`] and [`RESOLVE_UNIX_ABI`] say which kernels have them.
//!
//! The ruleset is built with the `landlock` crate before the fork (that allocates and opens
//! files); the child only makes two async-signal-safe syscalls ([`Prepared::enforce`]).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// The lowest Landlock ABI with TCP rules (Linux 6.7), needed to deny the network.
pub const NETWORK_ABI: i32 = 4;

/// The lowest Landlock ABI with scopes (Linux 6.12): signals and abstract UNIX sockets.
pub const SCOPE_ABI: i32 = 6;

/// The lowest Landlock ABI that governs connecting to pathname UNIX sockets (`RESOLVE_UNIX`).
pub const RESOLVE_UNIX_ABI: i32 = 9;

/// Device files every shell writes to (discarded or never stored), allowed under any sandbox.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Confine writes to `writable` (read access stays everywhere).
    pub restrict_fs: bool,
    /// Directories beneath which writes are allowed (when `restrict_fs`) and, without the
    /// network, pathname UNIX sockets may be reached (ABI 9+).
    pub writable: Vec<PathBuf>,
    /// Whether TCP `bind`/`connect`, abstract UNIX sockets outside the command and pathname
    /// UNIX sockets outside `writable` stay allowed.
    pub network: bool,
}

/// The Landlock ABI this kernel supports: `0` when Landlock is missing or disabled.
pub fn abi_version() -> i32 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    if r < 0 {
        0
    } else {
        r as i32
    }
}

/// Why `spec` cannot be enforced on this kernel, or `None` when it can.
pub fn unsupported_reason(spec: &SandboxSpec) -> Option<String> {
    let abi = abi_version();
    if abi < 1 {
        return Some(
            "the kernel does not provide Landlock (Linux 5.13+ with Landlock enabled is needed)"
                .into(),
        );
    }
    if !spec.network && abi < NETWORK_ABI {
        return Some(format!(
            "denying the network needs Landlock ABI {NETWORK_ABI} (Linux 6.7+); this kernel has ABI {abi}"
        ));
    }
    None
}

/// A ruleset ready to be enforced in a child.
#[derive(Debug)]
pub struct Prepared {
    fd: OwnedFd,
}

impl Prepared {
    /// Builds the ruleset for `spec`: read everywhere, full access beneath `writable` and write
    /// access to a few device files; TCP handled (nothing allowed) without the network.
    ///
    /// Errors: Landlock missing or too old for `spec` (`Unsupported`), or a writable directory
    /// that cannot be opened.
    pub fn new(spec: &SandboxSpec) -> std::io::Result<Prepared> {
        if let Some(reason) = unsupported_reason(spec) {
            return Err(std::io::Error::new(std::io::ErrorKind::Unsupported, reason));
        }
        let version = abi_version();
        let abi = ABI::from(version);
        // Connecting to pathname UNIX sockets is governed with the network (ABI 9+ only).
        let resolve_unix = if !spec.network && version >= RESOLVE_UNIX_ABI {
            BitFlags::from(AccessFs::ResolveUnix)
        } else {
            BitFlags::EMPTY
        };
        let fs_handled = if spec.restrict_fs {
            AccessFs::from_all(abi) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix) | resolve_unix
        } else {
            resolve_unix
        };
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
        if !fs_handled.is_empty() {
            ruleset = ruleset.handle_access(fs_handled).map_err(other)?;
        }
        if !spec.network {
            ruleset = ruleset
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(other)?
                .set_compatibility(CompatLevel::BestEffort);
        }
        if version >= SCOPE_ABI {
            let mut scopes = BitFlags::from(Scope::Signal);
            if !spec.network {
                scopes |= Scope::AbstractUnixSocket;
            }
            ruleset = ruleset.scope(scopes).map_err(other)?;
        }
        let mut created = ruleset.create().map_err(other)?;
        if spec.restrict_fs {
            let read = AccessFs::from_read(abi) & fs_handled;
            created = created
                .add_rule(PathBeneath::new(PathFd::new("/").map_err(other)?, read))
                .map_err(other)?;
        }
        if !fs_handled.is_empty() {
            for dir in &spec.writable {
                let fd = PathFd::new(dir).map_err(|e| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string())
                })?;
                created = created
                    .add_rule(PathBeneath::new(fd, fs_handled))
                    .map_err(other)?;
            }
        }
        if spec.restrict_fs {
            let device =
                (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate) & fs_handled;
            for path in DEVICES {
                if let Ok(fd) = PathFd::new(path) {
                    created = created
                        .add_rule(PathBeneath::new(fd, device))
                        .map_err(other)?;
                }
            }
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the kernel refused the Landlock ruleset",
            )
        })?;
        Ok(Prepared { fd })
    }

    /// The ruleset's descriptor, to hand to [`Prepared::enforce`] in the child.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Restricts the calling process (and everything it execs or forks) with ruleset `fd`:
    /// `PR_SET_NO_NEW_PRIVS`, then `landlock_restrict_self`. Returns `0` or an errno.
    ///
    /// # Safety
    /// Meant for the child between fork and exec: only two raw, async-signal-safe syscalls.
    pub unsafe fn enforce(fd: RawFd) -> i32 {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return *libc::__errno_location();
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) == -1 {
            return *libc::__errno_location();
        }
        0
    }
}

fn other(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::spawn::tests::finished;
    use crate::process::spawn::{spawn_shell, ShellArgs, Sink};

    fn run(spec: &SandboxSpec, cwd: &std::path::Path, script: &str) -> (i32, String) {
        let prepared = Prepared::new(spec).unwrap();
        let env = vec![(b"PATH".to_vec(), b"/usr/bin:/bin".to_vec())];
        let args = vec![b"-c".to_vec(), script.as_bytes().to_vec()];
        let (code, out) = crate::process::block_on(async {
            let shell = ShellArgs {
                args: &args,
                cwd,
                env: &env,
                file_limit: None,
                sandbox: Some(&prepared),
                subreaper: false,
            };
            let spawned = spawn_shell(shell, Sink::Pipe, Sink::Pipe).unwrap();
            finished(spawned).await
        });
        (code, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn writes_only_beneath_the_writable_dirs() {
        if abi_version() < 1 {
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let inside = tempfile::tempdir().unwrap();
        let spec = SandboxSpec {
            restrict_fs: true,
            writable: vec![inside.path().to_path_buf()],
            network: true,
        };
        let script = format!(
            "echo in > ok && echo x > /dev/null && cat ok && (echo out > {}/no) 2>/dev/null || echo denied",
            outside.path().display()
        );
        let (code, out) = run(&spec, inside.path(), &script);
        assert_eq!((code, out.as_str()), (0, "in\ndenied\n"));
        assert!(!outside.path().join("no").exists());
    }

    #[test]
    fn signals_outside_the_sandbox_are_refused() {
        if abi_version() < SCOPE_ABI {
            return;
        }
        let mut host = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let cwd = tempfile::tempdir().unwrap();
        for (restrict_fs, network) in [(true, true), (false, false)] {
            let spec = SandboxSpec {
                restrict_fs,
                writable: vec![cwd.path().to_path_buf()],
                network,
            };
            let script = format!(
                "kill {} 2>/dev/null && echo killed || echo refused; sleep 5 & kill $! && echo own",
                host.id()
            );
            let (code, out) = run(&spec, cwd.path(), &script);
            assert_eq!((code, out.as_str()), (0, "refused\nown\n"));
        }
        assert!(
            host.try_wait().unwrap().is_none(),
            "the host process was killed"
        );
        host.kill().unwrap();
        host.wait().unwrap();
    }
}
