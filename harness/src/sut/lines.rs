//! Answer lines from a SUT's stdout, bounded in length and in time, read by the thread that
//! waits for them: nothing is read ahead beyond one pipe chunk, so whatever the SUT writes, the
//! harness holds at most one line's bound plus a chunk.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// One read from the pipe at most.
const CHUNK: usize = 64 * 1024;
/// How often a wait for output checks that the process is still alive: a grandchild may hold
/// the pipe open after the SUT itself has exited.
const ALIVE_TICK: Duration = Duration::from_millis(20);
/// What an oversized line keeps as evidence.
pub const OVERSIZED_KEEP: usize = 200;

/// What the next wait for a line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    /// A whole line, without its `\n` (and without a `\r` just before it).
    Line(&'a [u8]),
    /// The deadline passed first.
    TimedOut,
    /// More than the bound arrived without a newline: its first bytes.
    Oversized(Vec<u8>),
    /// stdout ended, after the bytes of an unfinished line if any.
    Ended { partial: Vec<u8> },
    /// The process exited while something else (a grandchild) holds its stdout open.
    Exited,
}

/// Lines from a pipe, each at most `max` bytes.
pub struct LineReader<R> {
    pipe: R,
    fd: RawFd,
    buf: Vec<u8>,
    /// Where the next line starts in `buf`.
    start: usize,
    /// `buf[start..scanned]` has no newline.
    scanned: usize,
    max: usize,
    ended: bool,
}

impl<R: Read + AsRawFd> LineReader<R> {
    pub fn new(pipe: R, max: usize) -> Self {
        let fd = pipe.as_raw_fd();
        Self {
            pipe,
            fd,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max,
            ended: false,
        }
    }

    /// Waits until `deadline` for the next line; `exited` says whether the process is gone.
    pub fn next(
        &mut self,
        deadline: Instant,
        mut exited: impl FnMut() -> bool,
    ) -> io::Result<Next<'_>> {
        let end = loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                break self.scanned + i;
            }
            self.scanned = self.buf.len();
            if self.buf.len() - self.start > self.max {
                return Ok(self.oversized(self.buf.len()));
            }
            if self.ended {
                let partial = self.buf[self.start..].to_vec();
                self.start = self.buf.len();
                return Ok(Next::Ended { partial });
            }
            if let Some(stop) = self.fill(deadline, &mut exited)? {
                return Ok(stop);
            }
        };
        let start = self.start;
        self.start = end + 1;
        self.scanned = self.start;
        if end - start > self.max {
            self.start = start;
            return Ok(self.oversized(end));
        }
        let line = &self.buf[start..end];
        Ok(Next::Line(line.strip_suffix(b"\r").unwrap_or(line)))
    }

    /// The line from `start` to `end` is too long: its first bytes, and nothing more is read.
    fn oversized(&mut self, end: usize) -> Next<'static> {
        let keep = OVERSIZED_KEEP.min(end - self.start);
        let head = self.buf[self.start..self.start + keep].to_vec();
        // Nothing more is read: the process is killed and this reader dropped.
        self.buf = Vec::new();
        self.start = 0;
        self.scanned = 0;
        self.ended = true;
        Next::Oversized(head)
    }

    /// Reads one chunk, or says why not.
    fn fill(
        &mut self,
        deadline: Instant,
        exited: &mut impl FnMut() -> bool,
    ) -> io::Result<Option<Next<'static>>> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.scanned = 0;
            self.start = 0;
        } else if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if !readable(self.fd, left.min(ALIVE_TICK))? {
                if left <= ALIVE_TICK {
                    return Ok(Some(Next::TimedOut));
                }
                // Whatever an exited process wrote is in the pipe already: look once more.
                if !exited() || readable(self.fd, Duration::ZERO)? {
                    continue;
                }
                return Ok(Some(Next::Exited));
            }
            let len = self.buf.len();
            self.buf.resize(len + CHUNK, 0);
            let read = self.pipe.read(&mut self.buf[len..]);
            self.buf.truncate(len + *read.as_ref().unwrap_or(&0));
            match read {
                Ok(0) => self.ended = true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(None);
        }
    }
}

/// Whether a read on `fd` will not block (data, end of file or an error), waiting up to `wait`.
fn readable(fd: RawFd, wait: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = i32::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd for the duration of the call.
    match unsafe { libc::poll(&mut poll, 1, millis) } {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            e => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    fn reader(max: usize) -> (UnixStream, LineReader<UnixStream>) {
        let (ours, theirs) = UnixStream::pair().expect("socket pair");
        (theirs, LineReader::new(ours, max))
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(200)
    }

    #[test]
    fn lines_are_split_at_newline_only_and_bounded() {
        let (mut w, mut r) = reader(8);
        w.write_all(b"a\r\nb\xe2\x80\xa8c\r\n\n12345678\n123456789\n")
            .unwrap();
        assert_eq!(r.next(soon(), || false).unwrap(), Next::Line(b"a"));
        assert_eq!(
            r.next(soon(), || false).unwrap(),
            Next::Line(b"b\xe2\x80\xa8c")
        );
        assert_eq!(r.next(soon(), || false).unwrap(), Next::Line(b""));
        assert_eq!(r.next(soon(), || false).unwrap(), Next::Line(b"12345678"));
        assert_eq!(
            r.next(soon(), || false).unwrap(),
            Next::Oversized(b"123456789".to_vec())
        );
    }

    #[test]
    fn waits_time_out_end_and_notice_an_exit() {
        let (mut w, mut r) = reader(1 << 20);
        assert_eq!(r.next(soon(), || false).unwrap(), Next::TimedOut);
        w.write_all(b"{\"id\":1,\"out").unwrap();
        let t = Instant::now();
        assert_eq!(
            r.next(Instant::now() + Duration::from_secs(5), || true)
                .unwrap(),
            Next::Exited
        );
        assert!(t.elapsed() < Duration::from_secs(1));
        drop(w);
        assert_eq!(
            r.next(soon(), || false).unwrap(),
            Next::Ended {
                partial: b"{\"id\":1,\"out".to_vec()
            }
        );
    }

    #[test]
    fn a_flood_without_newline_holds_one_bound_and_a_chunk() {
        let (mut w, mut r) = reader(1 << 20);
        let writer = std::thread::spawn(move || {
            let chunk = vec![b'x'; 1 << 16];
            // Until the reader gives up and the socket closes: far more than the bound.
            for _ in 0..(1 << 14) {
                if w.write_all(&chunk).is_err() {
                    return;
                }
            }
        });
        match r
            .next(Instant::now() + Duration::from_secs(10), || false)
            .unwrap()
        {
            Next::Oversized(head) => assert_eq!(head, vec![b'x'; OVERSIZED_KEEP]),
            other => panic!("{other:?}"),
        }
        assert!(r.buf.capacity() == 0);
        drop(r);
        writer.join().unwrap();
    }
}
