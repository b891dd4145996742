//! One running SUT process: started in its own process group (so a kill takes its
//! grandchildren too, whatever pipes they hold), a writer thread on its stdin, its stdout read
//! as bounded lines by the thread that waits for answers, and the tail of its stderr kept by a
//! thread with a fixed buffer.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::lines::{LineReader, Next};
use crate::protocol::{Fault, Handshake, VERSION};

/// How long a SUT has to print its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a SUT may take to exit after its stdin closes, or to report its exit status after
/// its stdout ends.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How much of a SUT's stderr is kept for the report.
pub const STDERR_KEEP: usize = 64 * 1024;
/// How long a crash report waits for the last of stderr after the process is gone.
const STDERR_LINGER: Duration = Duration::from_millis(200);

pub(super) struct Running {
    child: Child,
    /// Its process group: the child is the leader, and is reaped only after the group is killed,
    /// so the id cannot be reused in between.
    group: i32,
    stdin: Option<Sender<Vec<u8>>>,
    stdout: LineReader<ChildStdout>,
    stderr: Arc<Tail>,
    /// How the process ended, once it has been stopped and reaped.
    ended: Option<Ended>,
}

/// How a stopped process ended.
#[derive(Debug, Clone)]
pub(super) struct Ended {
    pub status: Option<ExitStatus>,
    /// Exited by itself within the grace period (rather than killed).
    pub by_itself: bool,
}

impl Running {
    /// Starts `argv` and reads its handshake within `handshake_timeout` (each line at most
    /// `max_line` bytes).
    pub fn spawn(
        argv: &[String],
        max_line: usize,
        handshake_timeout: Duration,
    ) -> Result<(Self, Handshake)> {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start SUT `{}`", argv.join(" ")))?;
        let group = i32::try_from(child.id()).context("process id out of range")?;
        let (stdin, stdout, stderr_pipe) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(stdin), Some(stdout), Some(stderr)) => (stdin, stdout, stderr),
                _ => {
                    kill_group(group);
                    let _ = child.wait();
                    bail!("SUT `{}` has no stdio pipes", argv.join(" "));
                }
            };
        let stderr = Arc::new(Tail::default());
        let sink = Arc::clone(&stderr);
        thread::spawn(move || sink.keep(stderr_pipe));
        let mut running = Running {
            child,
            group,
            stdin: Some(writer(stdin)),
            stdout: LineReader::new(stdout, max_line),
            stderr,
            ended: None,
        };
        let handshake = running.handshake(argv, max_line, handshake_timeout);
        match handshake {
            Ok(handshake) => Ok((running, handshake)),
            Err(e) => {
                running.stop(Duration::ZERO);
                Err(e)
            }
        }
    }

    fn handshake(
        &mut self,
        argv: &[String],
        max_line: usize,
        timeout: Duration,
    ) -> Result<Handshake> {
        let command = argv.join(" ");
        let pid = self.child.id();
        let deadline = Instant::now() + timeout;
        let line = match self.stdout.next(deadline, || has_exited(pid)) {
            Ok(Next::Line(line)) => line.to_vec(),
            Ok(Next::TimedOut) => bail!(
                "SUT `{command}` sent no handshake within {:.1} s (--handshake-timeout-ms gives \
                 a slow-starting SUT longer){}",
                timeout.as_secs_f64(),
                self.stderr_note()
            ),
            Ok(Next::Oversized(head)) => bail!(
                "SUT `{command}` wrote more than {max_line} bytes without a newline instead of its \
                 handshake: {}",
                crate::excerpt::bounded(&String::from_utf8_lossy(&head), 300)
            ),
            Ok(Next::Ended { .. } | Next::Exited) | Err(_) => {
                let ended = self.stop(EXIT_GRACE);
                bail!(
                    "SUT `{command}` exited before its handshake ({}){}",
                    ended.describe(),
                    self.stderr_note()
                )
            }
        };
        let handshake: Handshake = serde_json::from_slice(&line).map_err(|e| {
            anyhow!(
                "SUT handshake is not valid ({e}): {}",
                crate::excerpt::bounded(&String::from_utf8_lossy(&line), 300)
            )
        })?;
        if handshake.normfuzz != VERSION {
            bail!(
                "SUT speaks protocol version {}, normfuzz speaks {VERSION}",
                handshake.normfuzz
            );
        }
        Ok(handshake)
    }

    /// Queues bytes for the SUT's stdin; a closed stdin shows up as a crash when stdout ends.
    pub fn send(&self, payload: Vec<u8>) {
        if let Some(stdin) = &self.stdin {
            let _ = stdin.send(payload);
        }
    }

    /// Closes the SUT's stdin (once the writer has sent what it holds): the SUT should exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits until `deadline` for the next stdout line.
    pub fn next_line(&mut self, deadline: Instant) -> std::io::Result<Next<'_>> {
        let pid = self.child.id();
        self.stdout.next(deadline, || has_exited(pid))
    }

    /// The fault for a process whose stdout ended (after `partial`, an unfinished line) or that
    /// exited while something else holds its stdout (`held`).
    pub fn crash(&mut self, partial: &[u8], held: bool) -> Fault {
        let ended = self.stop(EXIT_GRACE);
        let mut status = ended.describe();
        if held {
            status.push_str(
                "; a process it left behind held its stdout open (killed with its process group)",
            );
        }
        if !partial.is_empty() {
            status.push_str(&format!(
                "; stdout ended inside an answer line ({} bytes): {}",
                partial.len(),
                crate::excerpt::bounded(&String::from_utf8_lossy(partial), 200)
            ));
        }
        Fault::Crash {
            status,
            stderr: self.stderr_tail(),
        }
    }

    /// Waits up to `grace` for the process to exit by itself, then kills its whole process
    /// group (grandchildren, a process that ignores SIGTERM or closed stdout but kept running)
    /// and reaps it. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> Ended {
        if let Some(ended) = &self.ended {
            return ended.clone();
        }
        let pid = self.child.id();
        let deadline = Instant::now() + grace;
        let mut by_itself = has_exited(pid);
        while !by_itself && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
            by_itself = has_exited(pid);
        }
        self.stdin = None;
        kill_group(self.group);
        let ended = Ended {
            status: self.child.wait().ok(),
            by_itself,
        };
        self.ended = Some(ended.clone());
        ended
    }

    /// The last [`STDERR_KEEP`] bytes of stderr, after waiting briefly for its end.
    pub fn stderr_tail(&self) -> String {
        self.stderr.wait_closed(STDERR_LINGER);
        String::from_utf8_lossy(&self.stderr.bytes()).into_owned()
    }

    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail();
        let tail = tail.trim();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with:\n{}", last_lines(tail, 20))
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
    }
}

impl Ended {
    pub fn describe(&self) -> String {
        match (&self.status, self.by_itself) {
            (Some(status), true) => status.to_string(),
            (_, false) => "closed stdout but kept running".to_string(),
            (None, true) => "exit status unknown".to_string(),
        }
    }
}

/// Whether process `pid` (our child) has exited, without reaping it: its id, and so its process
/// group's, stay reserved until the group is killed.
fn has_exited(pid: u32) -> bool {
    // SAFETY: siginfo_t is plain data; waitid writes it and WNOWAIT leaves the child waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let done = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        done != 0 || info.si_pid() != 0
    }
}

fn kill_group(group: i32) {
    // SAFETY: a plain syscall; a group that no longer exists is ESRCH, ignored.
    unsafe { libc::kill(-group, libc::SIGKILL) };
}

fn writer(mut stdin: ChildStdin) -> Sender<Vec<u8>> {
    let (tx, rx) = channel::<Vec<u8>>();
    thread::spawn(move || {
        for chunk in rx {
            if stdin
                .write_all(&chunk)
                .and_then(|()| stdin.flush())
                .is_err()
            {
                break;
            }
        }
    });
    tx
}

/// The end of a stream, at most [`STDERR_KEEP`] bytes, and whether the stream has ended.
#[derive(Default)]
struct Tail {
    state: Mutex<(VecDeque<u8>, bool)>,
    closed: Condvar,
}

impl Tail {
    fn keep(&self, mut pipe: impl Read) {
        let mut buf = [0u8; 8192];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            if let Ok(mut state) = self.state.lock() {
                let tail = &mut state.0;
                let excess = (tail.len() + n).saturating_sub(STDERR_KEEP);
                tail.drain(..excess.min(tail.len()));
                let skip = n.saturating_sub(STDERR_KEEP);
                tail.extend(&buf[skip..n]);
            }
        }
        if let Ok(mut state) = self.state.lock() {
            state.1 = true;
        }
        self.closed.notify_all();
    }

    fn bytes(&self) -> Vec<u8> {
        self.state
            .lock()
            .map(|state| state.0.iter().copied().collect())
            .unwrap_or_default()
    }

    fn wait_closed(&self, wait: Duration) {
        if let Ok(state) = self.state.lock() {
            let _ = self
                .closed
                .wait_timeout_while(state, wait, |state| !state.1);
        }
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
