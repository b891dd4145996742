//! Systems under test: an external process speaking the SUT protocol, or the reference in
//! process. Both answer batches of requests in order; faults are answers, not errors.
//!
//! The subprocess adapter (`process.rs`) pipelines: a writer thread feeds stdin while the
//! caller reads stdout as bounded lines with a deadline per answer (`lines.rs`), so neither side
//! can block the other and a hung SUT is noticed even while a write is stuck. After a hang,
//! crash or protocol fault the process group is killed and restarted, and the rest of the batch
//! is sent again. Every request line is written by `protocol::write_request`.

mod command;
mod lines;
mod process;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::protocol::{Answer, Fault, Handshake, Op, parse_answer_line};
use lines::Next;
use process::Running;
pub use process::{EXIT_GRACE, HANDSHAKE_TIMEOUT, STDERR_KEEP};

/// Default time a SUT has to answer one request.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound of one answer line (`--max-answer-bytes`).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 << 20;

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

/// How an external SUT is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SutOptions {
    /// Time each answer has, counted from the previous answer (or from sending the batch).
    pub timeout: Duration,
    /// Longest answer line, newline excluded: a longer one is a `protocol` fault (oversized).
    pub max_answer_bytes: usize,
}

impl Default for SutOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_REQUEST_TIMEOUT,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// An external SUT started from an argv list (no shell), in its own process group.
///
/// Faults are answers: a hang (no answer in time), a crash (stdout ended, or the process exited
/// while something else holds its stdout) or a protocol fault (a line that is not UTF-8 JSON,
/// the wrong id, an oversized line) kills the whole process group, and the rest of the batch
/// goes to a new process. Memory stays bounded whatever the SUT writes: one answer line of at
/// most `max_answer_bytes` plus a pipe chunk, and the last 64 KiB of stderr.
pub struct ProcessSut {
    argv: Vec<String>,
    options: SutOptions,
    handshake: Handshake,
    ops: Vec<Op>,
    running: Option<Running>,
    next_id: u64,
    /// How often the process was restarted after a fault.
    pub restarts: u64,
}

impl ProcessSut {
    /// Starts the SUT and reads its handshake, with the default answer bound.
    pub fn start(argv: Vec<String>, timeout: Duration) -> Result<Self> {
        Self::start_with(
            argv,
            SutOptions {
                timeout,
                ..SutOptions::default()
            },
        )
    }

    /// Starts the SUT and reads its handshake.
    pub fn start_with(argv: Vec<String>, options: SutOptions) -> Result<Self> {
        if argv.is_empty() {
            bail!("the SUT command is empty");
        }
        let (running, handshake) = Running::spawn(&argv, options.max_answer_bytes)?;
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
            options,
            handshake,
            ops,
            running: Some(running),
            next_id: 0,
            restarts: 0,
        })
    }

    /// Splits a command line the way a POSIX shell would for simple words and quotes.
    pub fn parse_command(command: &str) -> Result<Vec<String>> {
        command::shell_words(command)
    }

    fn running(&mut self) -> Result<&mut Running> {
        if self.running.is_none() {
            let (running, _) = Running::spawn(&self.argv, self.options.max_answer_bytes)
                .context("restarting the SUT")?;
            self.running = Some(running);
            self.restarts += 1;
        }
        self.running
            .as_mut()
            .ok_or_else(|| anyhow!("SUT not running"))
    }

    /// Sends `batch`, reads answers until a fault; returns the answers so far (the last one may
    /// be the fault, after which the process group is killed).
    fn attempt(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        let first_id = self.next_id;
        self.next_id += batch.len() as u64;
        let SutOptions {
            timeout,
            max_answer_bytes,
        } = self.options;
        let running = self.running()?;
        let mut payload = Vec::new();
        for (i, (op, input)) in batch.iter().enumerate() {
            crate::protocol::write_request(&mut payload, first_id + i as u64, *op, input);
        }
        running.send(payload);
        let mut answers = Vec::with_capacity(batch.len());
        for i in 0..batch.len() as u64 {
            let answer = match running.next_line(Instant::now() + timeout) {
                Ok(Next::Line(line)) => parse_answer_line(line, first_id + i),
                Ok(Next::TimedOut) => Answer::Fault(Fault::Hang {
                    timeout_ms: timeout.as_millis() as u64,
                }),
                Ok(Next::Oversized(head)) => Answer::Fault(Fault::Protocol {
                    line: format!(
                        "{}{}",
                        String::from_utf8_lossy(&head),
                        crate::excerpt::CUT_MARKER
                    ),
                    problem: format!(
                        "oversized answer: no newline within {max_answer_bytes} bytes"
                    ),
                }),
                Ok(Next::Ended { partial }) => Answer::Fault(running.crash(&partial, false)),
                Ok(Next::Exited) => Answer::Fault(running.crash(&[], true)),
                Err(e) => Answer::Fault(Fault::Crash {
                    status: format!("stdout unreadable: {e}"),
                    stderr: running.stderr_tail(),
                }),
            };
            let fault = matches!(answer, Answer::Fault(_));
            answers.push(answer);
            if fault {
                // The whole group: no grandchild keeps a pipe, and no late answer reaches the
                // next request (the next process has pipes of its own).
                self.running = None;
                break;
            }
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
            running.close_stdin();
            running.stop(EXIT_GRACE);
        }
    }
}
