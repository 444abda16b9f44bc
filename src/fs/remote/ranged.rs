//! `read_file` and `file_info` of a file too big to move whole through the workspace protocol,
//! fed piece by piece (the Python side reads byte ranges through the workspace's commands).
//!
//! The pieces go to the host side's own streaming pass ([`crate::fs::read::scan`]) on a thread
//! of their own, through a bounded channel, so the line count, hash, window and every result
//! text are the local ones, and memory stays at a few pieces whatever the file's size.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use std::sync::Arc;

use super::*;
use crate::cancel::CancelFlag;
use crate::fs::read::{self, Index, ReadSpec, Scan, ScanOptions, WindowSpec};

/// Pieces a ranged pass holds ahead of the scan at most: the sender blocks past them.
const PIECES_AHEAD: usize = 2;

/// What a full ranged pass learned of one version of a file, for reading another window of it
/// without a full pass ([`Remote::window_ranged`]): the scan without its window, and the
/// line-offset index.
#[derive(Debug)]
pub struct Kept {
    scan: Scan,
    index: Index,
}

impl Kept {
    /// The byte offset a window starting at line `offset` is read from; `None` when no bytes
    /// are needed (a binary file, or the window past the end).
    pub fn start(&self, offset: usize) -> Option<u64> {
        (!self.scan.is_binary_read() && offset < self.scan.total_lines)
            .then(|| self.index.start_for(offset).offset)
    }
}

/// What the scan thread returns.
type Pass = std::io::Result<Result<(Scan, Option<Index>)>>;

/// What a ranged pass renders when it is finished.
#[derive(Debug, Clone)]
enum Goal {
    /// `read_file` with this spec, each line from char `column` on (with `max_line_chars`).
    Read(ReadSpec, usize),
    /// `file_info` of a file `size` bytes long (as stated).
    Info(u64),
}

/// One file's bytes fed in order ([`Ranged::feed`]), scanned as they arrive, rendered at
/// [`Ranged::finish`]. Dropping it stops the scan.
#[derive(Debug)]
pub struct Ranged {
    path: String,
    event: String,
    goal: Goal,
    sender: Option<SyncSender<Vec<u8>>>,
    worker: Option<JoinHandle<Pass>>,
    cancel: CancelFlag,
    /// The byte offset the pieces start at.
    pub start: u64,
    /// Whether the pass takes pieces at all (not for what a [`Kept`] pass already knows).
    pub needs: bool,
}

/// Reads the pieces a channel delivers, in order; the end of the channel is the end of file.
struct Pieces {
    receiver: Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl std::io::Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            match self.receiver.recv() {
                Ok(piece) => {
                    self.current = piece;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Remote {
    /// Starts a ranged `read_file` of `resolved` (0-based `offset`, `limit` lines, both as
    /// [`Remote::read_limit`] returned them).
    /// `column`: with `max_line_chars`, the 0-based char each line starts from.
    pub fn read_ranged(
        &self,
        path: &str,
        resolved: &str,
        offset: usize,
        limit: usize,
        column: usize,
    ) -> Ranged {
        let spec = self.ranged_spec(offset, limit);
        let window = self.ranged_window(&spec, path);
        self.ranged(
            path,
            resolved,
            Goal::Read(spec, column),
            full_pass(window),
            0,
        )
    }

    /// Starts a ranged `file_info` of the file `resolved`, `size` bytes long as stated.
    pub fn info_ranged(&self, path: &str, resolved: &str, size: u64) -> Ranged {
        let window = WindowSpec::count_only(crate::fs::contract::Contract::Workspace);
        self.ranged(path, resolved, Goal::Info(size), full_pass(window), 0)
    }

    /// Starts a `read_file` of another window of a file a full pass was [`Kept`] of: the pieces
    /// start at [`Ranged::start`] and the pass stops once past the window (`feed` then answers
    /// `false`). The caller checks the file is still that version.
    pub fn window_ranged(
        &self,
        path: &str,
        resolved: &str,
        offset: usize,
        limit: usize,
        column: usize,
        kept: Arc<Kept>,
    ) -> Ranged {
        let spec = self.ranged_spec(offset, limit);
        let window = self.ranged_window(&spec, path);
        let from = kept.index.start_for(offset);
        let needed = kept.start(offset).is_some();
        let job = move |pieces: &mut Pieces, flag: &CancelFlag| -> Pass {
            let mut scan = kept.scan.clone();
            if needed {
                match read::scan_window(pieces, window, from, flag)? {
                    Ok((lines, body, first_len)) => {
                        scan.lines = lines;
                        scan.body = body;
                        scan.first_len = first_len;
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(Ok((scan, None)))
        };
        let mut ranged = self.ranged(
            path,
            resolved,
            Goal::Read(spec, column),
            Box::new(job),
            from.offset,
        );
        ranged.needs = needed;
        ranged
    }

    /// A `file_info` of a file a full pass was [`Kept`] of: no pieces needed, `finish` at once.
    pub fn info_kept(&self, path: &str, resolved: &str, size: u64, kept: Arc<Kept>) -> Ranged {
        let job =
            move |_: &mut Pieces, _: &CancelFlag| -> Pass { Ok(Ok((kept.scan.clone(), None))) };
        let mut ranged = self.ranged(path, resolved, Goal::Info(size), Box::new(job), 0);
        ranged.needs = false;
        ranged
    }

    /// The window a ranged read keeps: as on a host directory, whole long lines when
    /// `max_line_chars` clips them afterwards, and an image or PDF this big described, never returned.
    fn ranged_window(&self, spec: &ReadSpec, path: &str) -> WindowSpec {
        let mut window = spec.window(path);
        window.keep_media = false;
        if self.disclosure.max_line_chars.is_some() {
            window.cap = None;
            window.rendered = false;
        }
        window
    }

    fn ranged_spec(&self, offset: usize, limit: usize) -> ReadSpec {
        ReadSpec {
            offset,
            limit,
            max_read_chars: self.limits.max_read_chars,
            content_hashes: self.limits.content_hashes,
            contract: crate::fs::contract::Contract::Workspace,
        }
    }

    fn ranged(&self, path: &str, resolved: &str, goal: Goal, job: Job, start: u64) -> Ranged {
        let (sender, receiver) = sync_channel::<Vec<u8>>(PIECES_AHEAD);
        let cancel = CancelFlag::new();
        let flag = cancel.clone();
        let worker = std::thread::Builder::new()
            .name("ranged-read".into())
            .spawn(move || {
                let mut pieces = Pieces {
                    receiver,
                    current: Vec::new(),
                    at: 0,
                };
                // The receiver goes with this thread: a sender blocked on a stopped scan is released.
                job(&mut pieces, &flag)
            })
            .ok();
        Ranged {
            path: path.to_string(),
            event: self.event_path(resolved),
            goal,
            sender: Some(sender),
            worker,
            cancel,
            start,
            needs: true,
        }
    }

    /// Renders a finished ranged pass as `read_file` or `file_info` does for the same bytes on a
    /// host directory; the outcome's `content_hash` is the file's (12 hex chars of its sha256).
    ///
    /// `guessed_type`: `mimetypes.guess_type(path)[0]`, for a binary file's header.
    /// Errors: `Offset K exceeds file length (N lines).`, `Cancelled`, and an internal error when
    /// the scan thread could not run.
    pub fn finish_ranged(
        &self,
        mut ranged: Ranged,
        guessed_type: Option<&str>,
    ) -> Result<(Outcome, Option<Arc<Kept>>)> {
        ranged.sender = None;
        let worker = ranged.worker.take().ok_or_else(|| {
            Error::new(ErrorKind::Io(std::io::ErrorKind::Other), "no scan thread")
        })?;
        let (mut scan, index) = worker
            .join()
            .map_err(|_| Error::new(ErrorKind::Io(std::io::ErrorKind::Other), "scan failed"))?
            .map_err(|e| Error::new(ErrorKind::Io(e.kind()), e.to_string()))??;
        let kept = index.map(|index| {
            let mut bare = scan.clone();
            bare.lines = Vec::new();
            bare.body = Default::default();
            bare.first_len = None;
            Arc::new(Kept { scan: bare, index })
        });
        let path = ranged.path.as_str();
        let event = std::mem::take(&mut ranged.event);
        let hash = scan.hash.clone();
        let text = match &ranged.goal {
            Goal::Read(spec, _) if scan.is_binary_read() => {
                read::render_binary(path, &mut scan, spec, guessed_type).0
            }
            Goal::Read(spec, column) => {
                if let Some(max) = self.disclosure.max_line_chars {
                    crate::fs::read::clip::clip_window(&mut scan, path, spec.offset, *column, max);
                }
                read::render_owned(path, &mut scan, spec)?
            }
            Goal::Info(size) => {
                let mut parts = vec![
                    format!("path: {path}"),
                    "type: file".to_string(),
                    format!("size: {size} bytes"),
                    format!("binary: {}", if scan.binary { "True" } else { "False" }),
                ];
                if scan.binary {
                    return Ok((found(parts.join("\n"), event, false), kept));
                }
                parts.push(format!("lines: {}", scan.total_lines));
                parts.push(format!("hash: {hash}"));
                let mut outcome = found(parts.join("\n"), event, false);
                outcome.content_hash = Some(hash);
                return Ok((outcome, kept));
            }
        };
        let mut outcome = found(text, event, true);
        outcome.content_hash = Some(hash);
        Ok((outcome, kept))
    }
}

/// The work a scan thread does on the pieces.
type Job = Box<dyn FnOnce(&mut Pieces, &CancelFlag) -> Pass + Send>;

/// A full pass over the pieces: the scan and its line-offset index.
fn full_pass(window: WindowSpec) -> Job {
    Box::new(move |pieces: &mut Pieces, flag: &CancelFlag| -> Pass {
        let options = ScanOptions {
            piped: false,
            index: true,
        };
        Ok(
            read::scan_with(pieces, window, flag, options)?
                .map(|(scan, index)| (scan, Some(index))),
        )
    })
}

impl Ranged {
    /// Feeds the next piece of the file; blocks while the scan is [`PIECES_AHEAD`] pieces
    /// behind. `false` once the scan has stopped (cancelled, or past what it needs).
    pub fn feed(&self, piece: Vec<u8>) -> bool {
        match &self.sender {
            Some(sender) => !self.cancel.is_cancelled() && sender.send(piece).is_ok(),
            None => false,
        }
    }

    /// Stops the scan: its thread ends at its next chunk.
    pub fn cancel(&mut self) {
        self.cancel.cancel();
        self.sender = None;
    }

    /// The cancel flag the scan polls.
    pub fn cancel_flag(&self) -> CancelFlag {
        self.cancel.clone()
    }
}

impl Drop for Ranged {
    fn drop(&mut self) {
        self.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::contract::Contract;
    use crate::fs::read::hash::bytes_hash;
    use crate::fs::tests::limits;

    fn remote() -> Remote {
        let mut l = limits();
        l.contract = Contract::Workspace;
        Remote::new("/ws", "/ws", false, &[], &[], &[], l).unwrap()
    }

    fn fed(r: &Remote, ranged: Ranged, data: &[u8], piece: usize) -> Result<Outcome> {
        for chunk in data.chunks(piece) {
            assert!(ranged.feed(chunk.to_vec()));
        }
        r.finish_ranged(ranged, None).map(|(o, _)| o)
    }

    #[test]
    fn pieces_render_as_the_whole_bytes() {
        let r = remote();
        let c = CancelFlag::new();
        let data: Vec<u8> = (0..5000)
            .flat_map(|i| format!("line {i} é\n").into_bytes())
            .collect();
        for (offset, limit) in [(0, 10), (2500, 3), (4998, 50)] {
            let whole = r
                .read_file(
                    "a.log",
                    "/ws/a.log",
                    None,
                    Some(&data),
                    offset,
                    limit,
                    None,
                    0,
                    None,
                    &c,
                )
                .unwrap();
            let got = fed(
                &r,
                r.read_ranged("a.log", "/ws/a.log", offset, limit, 0),
                &data,
                7,
            )
            .unwrap();
            assert_eq!(got.text, whole.outcome.text);
            assert_eq!(got.content_hash, Some(bytes_hash(&data)));
        }
        let past = fed(
            &r,
            r.read_ranged("a.log", "/ws/a.log", 6000, 5, 0),
            &data,
            4096,
        );
        assert_eq!(
            past.unwrap_err().message,
            "Offset 6000 exceeds file length (5000 lines)."
        );
        let info = fed(
            &r,
            r.info_ranged("a.log", "/ws/a.log", data.len() as u64),
            &data,
            1000,
        )
        .unwrap();
        let entry = Entry {
            path: "/ws/a.log".into(),
            is_dir: false,
            size: Some(data.len() as u64),
        };
        assert_eq!(
            info.text,
            r.file_info("a.log", "/ws/a.log", Some(&entry), Some(&data), None)
                .text
        );
    }

    #[test]
    fn a_cancelled_pass_stops() {
        let r = remote();
        let mut ranged = r.read_ranged("a", "/ws/a", 0, 10, 0);
        assert!(ranged.feed(b"x\n".to_vec()));
        ranged.cancel();
        assert!(!ranged.feed(b"y\n".to_vec()));
        assert_eq!(
            r.finish_ranged(ranged, None).unwrap_err().kind,
            ErrorKind::Cancelled
        );
    }

    #[test]
    fn a_kept_pass_reads_other_windows_from_its_index() {
        let r = remote();
        let c = CancelFlag::new();
        let data: Vec<u8> = (0..200_000)
            .flat_map(|i| format!("row {i} ü\n").into_bytes())
            .collect();
        let ranged = r.read_ranged("a.log", "/ws/a.log", 0, 5, 0);
        for chunk in data.chunks(100_000) {
            assert!(ranged.feed(chunk.to_vec()));
        }
        let (_, kept) = r.finish_ranged(ranged, None).unwrap();
        let kept = kept.unwrap();
        for (offset, limit) in [(0, 3), (123_456, 4), (199_998, 10)] {
            let ranged = r.window_ranged("a.log", "/ws/a.log", offset, limit, 0, kept.clone());
            let start = ranged.start as usize;
            assert!(start > 0 || offset == 0);
            for chunk in data[start..].chunks(100_000) {
                if !ranged.feed(chunk.to_vec()) {
                    break;
                }
            }
            let (got, _) = r.finish_ranged(ranged, None).unwrap();
            let whole = r
                .read_file(
                    "a.log",
                    "/ws/a.log",
                    None,
                    Some(&data),
                    offset,
                    limit,
                    None,
                    0,
                    None,
                    &c,
                )
                .unwrap();
            assert_eq!(got.text, whole.outcome.text);
        }
        let info = r.info_kept("a.log", "/ws/a.log", data.len() as u64, kept);
        let entry = Entry {
            path: "/ws/a.log".into(),
            is_dir: false,
            size: Some(data.len() as u64),
        };
        assert_eq!(
            r.finish_ranged(info, None).unwrap().0.text,
            r.file_info("a.log", "/ws/a.log", Some(&entry), Some(&data), None)
                .text
        );
    }
}
