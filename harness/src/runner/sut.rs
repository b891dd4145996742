//! Systems under test: an external process speaking the SUT protocol, or the reference in
//! process. Both answer batches of requests in order; faults are answers, not errors.
//!
//! The subprocess adapter pipelines: a writer thread feeds stdin and a reader thread drains
//! stdout, so neither side can block the other, and a hung SUT is noticed by a receive timeout
//! even while a write is stuck. After a hang, crash or protocol fault the process is killed and
//! restarted, and the rest of the batch is sent again.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::protocol::{Answer, Fault, Handshake, Op, Request, VERSION, parse_answer};

/// How long a SUT has to print its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a SUT has to answer one request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a SUT may take to exit after its stdin closes.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How much of a SUT's stderr is kept for the report.
const STDERR_KEEP: usize = 64 * 1024;

/// A system under test.
pub trait Sut: Send {
    /// The name from the handshake.
    fn name(&self) -> &str;
    /// The ops it offers (only these are tested).
    fn ops(&self) -> &[Op];
    /// Answers `batch` in order; `Err` only when the harness itself cannot go on.
    fn call(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>>;
}

impl Sut for Box<dyn Sut> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn ops(&self) -> &[Op] {
        (**self).ops()
    }

    fn call(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        (**self).call(batch)
    }
}

/// The reference normalizer as a SUT, in process.
pub struct ReferenceSut;

impl Sut for ReferenceSut {
    fn name(&self) -> &str {
        "normfuzz reference"
    }

    fn ops(&self) -> &[Op] {
        &Op::ALL
    }

    fn call(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        Ok(batch
            .iter()
            .map(|(op, input)| match crate::reference::call(*op, input) {
                Ok(output) => Answer::Output(output),
                Err(message) => Answer::Refused(message),
            })
            .collect())
    }
}

/// An external SUT started from an argv list (no shell).
pub struct ProcessSut {
    argv: Vec<String>,
    timeout: Duration,
    handshake: Handshake,
    ops: Vec<Op>,
    running: Option<Running>,
    next_id: u64,
    /// How often the process was restarted after a fault.
    pub restarts: u64,
}

struct Running {
    child: Child,
    stdin: Option<Sender<Vec<u8>>>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

impl ProcessSut {
    /// Starts the SUT and reads its handshake.
    pub fn start(argv: Vec<String>, timeout: Duration) -> Result<Self> {
        if argv.is_empty() {
            bail!("the SUT command is empty");
        }
        let (running, handshake) = Running::spawn(&argv)?;
        let ops = handshake.known_ops();
        if ops.is_empty() {
            bail!(
                "SUT `{}` offers none of the known ops (it listed {:?})",
                handshake.name,
                handshake.ops
            );
        }
        Ok(Self {
            argv,
            timeout,
            handshake,
            ops,
            running: Some(running),
            next_id: 0,
            restarts: 0,
        })
    }

    /// Splits a command line the way a POSIX shell would for simple words and quotes.
    pub fn parse_command(command: &str) -> Result<Vec<String>> {
        shell_words(command)
    }

    fn running(&mut self) -> Result<&mut Running> {
        if self.running.is_none() {
            let (running, _) = Running::spawn(&self.argv).context("restarting the SUT")?;
            self.running = Some(running);
            self.restarts += 1;
        }
        self.running
            .as_mut()
            .ok_or_else(|| anyhow!("SUT not running"))
    }

    fn kill(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }

    /// Sends `batch`, reads answers until a fault; returns the answers so far (the last one may
    /// be the fault).
    fn attempt(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        let first_id = self.next_id;
        self.next_id += batch.len() as u64;
        let timeout = self.timeout;
        let running = self.running()?;
        let mut payload = Vec::new();
        for (i, (op, input)) in batch.iter().enumerate() {
            let request = Request {
                id: first_id + i as u64,
                op: *op,
                input: (*input).clone(),
            };
            serde_json::to_writer(&mut payload, &request)?;
            payload.push(b'\n');
        }
        // A closed stdin shows up below as a crash when stdout ends.
        if let Some(stdin) = &running.stdin {
            let _ = stdin.send(payload);
        }
        let mut answers = Vec::with_capacity(batch.len());
        for i in 0..batch.len() as u64 {
            let answer = match running.lines.recv_timeout(timeout) {
                Ok(line) => parse_answer(&line, first_id + i),
                Err(RecvTimeoutError::Timeout) => Answer::Fault(Fault::Hang {
                    timeout_ms: timeout.as_millis() as u64,
                }),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = running.exit_status();
                    Answer::Fault(Fault::Crash {
                        status,
                        stderr: running.stderr_tail(),
                    })
                }
            };
            let fault = matches!(answer, Answer::Fault(_));
            answers.push(answer);
            if fault {
                break;
            }
        }
        if matches!(answers.last(), Some(Answer::Fault(_))) {
            self.kill();
        }
        Ok(answers)
    }
}

impl Sut for ProcessSut {
    fn name(&self) -> &str {
        &self.handshake.name
    }

    fn ops(&self) -> &[Op] {
        &self.ops
    }

    fn call(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        let mut answers = Vec::with_capacity(batch.len());
        while answers.len() < batch.len() {
            let done = answers.len();
            answers.extend(self.attempt(&batch[done..])?);
        }
        Ok(answers)
    }
}

impl Drop for ProcessSut {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.stdin = None; // closes stdin: the SUT should exit
            let deadline = Instant::now() + EXIT_GRACE;
            while Instant::now() < deadline {
                if matches!(running.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                thread::sleep(Duration::from_millis(10));
            }
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }
}

impl Running {
    fn spawn(argv: &[String]) -> Result<(Self, Handshake)> {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start SUT `{}`", argv.join(" ")))?;
        let stdin = child.stdin.take().context("SUT has no stdin")?;
        let stdout = child.stdout.take().context("SUT has no stdout")?;
        let stderr_pipe = child.stderr.take().context("SUT has no stderr")?;
        let (line_tx, lines) = channel();
        thread::spawn(move || {
            // Bytes, not `lines()`: invalid UTF-8 is a protocol fault to report, not an end of stream.
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(mut line) = line else { break };
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line_tx
                    .send(String::from_utf8_lossy(&line).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::clone(&stderr);
        thread::spawn(move || keep_tail(stderr_pipe, &sink));
        let mut running = Running {
            child,
            stdin: Some(writer(stdin)),
            lines,
            stderr,
        };
        let handshake = running.handshake(argv)?;
        Ok((running, handshake))
    }

    fn handshake(&mut self, argv: &[String]) -> Result<Handshake> {
        let line = match self.lines.recv_timeout(HANDSHAKE_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                bail!(
                    "SUT `{}` sent no handshake within {} s{}",
                    argv.join(" "),
                    HANDSHAKE_TIMEOUT.as_secs(),
                    self.stderr_note()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                bail!(
                    "SUT `{}` exited before its handshake ({}){}",
                    argv.join(" "),
                    self.exit_status(),
                    self.stderr_note()
                )
            }
        };
        let handshake: Handshake = serde_json::from_str(&line).map_err(|e| {
            let _ = self.child.kill();
            anyhow!(
                "SUT handshake is not valid ({e}): {}",
                crate::excerpt::bounded(&line, 300)
            )
        })?;
        if handshake.normfuzz != VERSION {
            let _ = self.child.kill();
            bail!(
                "SUT speaks protocol version {}, normfuzz speaks {VERSION}",
                handshake.normfuzz
            );
        }
        Ok(handshake)
    }

    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.to_string(),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                Ok(None) => return "closed stdout but kept running".into(),
                Err(e) => return format!("unknown ({e})"),
            }
        }
    }

    fn stderr_tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .map(|b| b.iter().copied().collect::<Vec<u8>>())
            .unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
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

fn keep_tail(mut pipe: impl Read, sink: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n @ 1..) = pipe.read(&mut buf) {
        if let Ok(mut tail) = sink.lock() {
            tail.extend(&buf[..n]);
            let excess = tail.len().saturating_sub(STDERR_KEEP);
            tail.drain(..excess);
        }
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Minimal POSIX-style word splitting: whitespace separates words, single quotes are literal,
/// double quotes and backslashes escape. Enough for `node my-shim.mjs --flag "a b"`.
fn shell_words(command: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => bail!("unterminated ' in SUT command"),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => w.push(
                            chars
                                .next()
                                .ok_or_else(|| anyhow!("trailing \\ in SUT command"))?,
                        ),
                        Some(c) => w.push(c),
                        None => bail!("unterminated \" in SUT command"),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(
                chars
                    .next()
                    .ok_or_else(|| anyhow!("trailing \\ in SUT command"))?,
            ),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        bail!("the SUT command is empty");
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands() {
        assert_eq!(shell_words("node shim.mjs").unwrap(), ["node", "shim.mjs"]);
        assert_eq!(
            shell_words(r#"python3 -c 'print(1)' "a b" c\ d"#).unwrap(),
            ["python3", "-c", "print(1)", "a b", "c d"]
        );
        assert!(shell_words("  ").is_err());
        assert!(shell_words("'open").is_err());
    }
}
