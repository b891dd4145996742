//! Systems under test: an external process speaking the SUT protocol, or the reference in
//! process. Both answer batches of requests in order; faults are answers, not errors.
//!
//! The subprocess adapter (`process.rs`) pipelines: a writer thread feeds stdin while the
//! caller reads stdout as bounded lines with a deadline per answer (`lines.rs`), so neither side
//! can block the other and a hung SUT is noticed even while a write is stuck. Each answer is
//! handed to the caller as it arrives, and a batch stops at the caller's deadline. After a hang,
//! crash or protocol fault the process group is killed and restarted, and the rest of the batch
//! (not the faulty request) is sent again. How long an answer is waited for is calibrated on the
//! SUT's latest answers (`patience.rs`); an answer past that wait is given as long again as a
//! restart would cost before it is a hang. Every request line is written by
//! `protocol::write_request`.

mod command;
mod lines;
mod patience;
mod process;
#[cfg(test)]
mod tests;

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::protocol::coverage::Reached;
use crate::protocol::{Answer, Fault, Handshake, Op, parse_answer_line};
use lines::Next;
use patience::Patience;
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
    /// Answers a prefix of `batch` in order, telling `seen` of each answer as it arrives: the
    /// whole batch, unless `until` passes first (a request still waited for then is dropped,
    /// neither answered nor a fault) or `seen` breaks after an answer. Each answer is waited
    /// for as long as `wait` says. `Err` only when the harness itself cannot go on.
    fn call_until(
        &mut self,
        batch: &[(Op, &Value)],
        until: Option<Instant>,
        wait: Wait,
        seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
    ) -> Result<Vec<Answer>>;

    /// Answers the whole of `batch` in order.
    fn call(&mut self, batch: &[(Op, &Value)]) -> Result<Vec<Answer>> {
        self.call_until(batch, None, Wait::Calibrated, &mut |_| {
            ControlFlow::Continue(())
        })
    }

    /// `op`'s calibrated time-out, once the SUT's answers set one below the full one.
    fn calibrated(&self, _op: Op) -> Option<Duration> {
        None
    }

    /// A case of `op` that ran out at the calibrated time-out was answered with the full one:
    /// wait longer for `op`.
    fn slow(&mut self, _op: Op) {}

    /// Time lost to hangs so far: the waits that ran out and the restarts after them.
    fn hang_cost(&self) -> Duration {
        Duration::ZERO
    }

    /// The runtime's own coverage its answers reported so far, for a SUT that offers the
    /// protocol's coverage extension.
    fn coverage(&self) -> Option<&Reached> {
        None
    }

    /// The requests whose answers reached coverage not reached before, since the last call
    /// (at most `NOVEL_KEEP`): what coverage steering learns from.
    fn take_novel(&mut self) -> Vec<(Op, Value)> {
        Vec::new()
    }

    /// Answers so far that came after the calibrated wait, within the grace a restart's cost
    /// bought them: slow answers that cost no restart.
    fn late_answers(&self) -> u64 {
        0
    }
}

/// Novel requests a SUT keeps between two `take_novel` calls (a shrinker's SUT is never asked).
const NOVEL_KEEP: usize = 64;

/// How long each answer of a call is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The SUT's calibrated time-out for the op (the full one until calibrated).
    Calibrated,
    /// The full time-out (`--timeout-ms`): what confirms a hang.
    Full,
    /// This long, or the full time-out if that is shorter.
    At(Duration),
}

impl Sut for Box<dyn Sut> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn ops(&self) -> &[Op] {
        (**self).ops()
    }

    fn call_until(
        &mut self,
        batch: &[(Op, &Value)],
        until: Option<Instant>,
        wait: Wait,
        seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
    ) -> Result<Vec<Answer>> {
        (**self).call_until(batch, until, wait, seen)
    }

    fn calibrated(&self, op: Op) -> Option<Duration> {
        (**self).calibrated(op)
    }

    fn slow(&mut self, op: Op) {
        (**self).slow(op);
    }

    fn hang_cost(&self) -> Duration {
        (**self).hang_cost()
    }

    fn coverage(&self) -> Option<&Reached> {
        (**self).coverage()
    }

    fn take_novel(&mut self) -> Vec<(Op, Value)> {
        (**self).take_novel()
    }

    fn late_answers(&self) -> u64 {
        (**self).late_answers()
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

    /// In process and never hung: the whole batch (unless `seen` breaks), whatever `until`
    /// and `wait` say.
    fn call_until(
        &mut self,
        batch: &[(Op, &Value)],
        _until: Option<Instant>,
        _wait: Wait,
        seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
    ) -> Result<Vec<Answer>> {
        let mut answers = Vec::with_capacity(batch.len());
        for (op, input) in batch {
            let answer = match crate::reference::call(*op, input) {
                Ok(output) => Answer::Output(output),
                Err(message) => Answer::Refused(message),
            };
            let flow = seen(&answer);
            answers.push(answer);
            if flow.is_break() {
                break;
            }
        }
        Ok(answers)
    }
}

/// How an external SUT is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SutOptions {
    /// Time each answer has at most, counted from the previous answer (or from sending the
    /// batch): the ceiling of the calibrated time-out, and the wait that confirms a hang.
    pub timeout: Duration,
    /// Longest answer line, newline excluded: a longer one is a `protocol` fault (oversized).
    pub max_answer_bytes: usize,
    /// Calibrate the wait on the SUT's first answers (`patience.rs`); without it every answer
    /// has the whole `timeout`.
    pub calibrate: bool,
    /// How long a (re)started SUT has for its handshake: the protocol's 10 s, longer for a
    /// runtime whose imports take that long on a loaded machine.
    pub handshake_timeout: Duration,
}

impl Default for SutOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_REQUEST_TIMEOUT,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            calibrate: true,
            handshake_timeout: HANDSHAKE_TIMEOUT,
        }
    }
}

/// An external SUT started from an argv list (no shell), in its own process group.
///
/// Faults are answers: a hang (no answer in time), a crash (stdout ended, or the process exited
/// while something else holds its stdout) or a protocol fault (a line that is not UTF-8 JSON,
/// the wrong id, an oversized line) kills the whole process group, and the rest of the batch
/// goes to a new process. Memory stays bounded
/// whatever the SUT writes: one answer line of at most `max_answer_bytes` plus a pipe chunk, and
/// the last 64 KiB of stderr.
pub struct ProcessSut {
    argv: Vec<String>,
    options: SutOptions,
    handshake: Handshake,
    ops: Vec<Op>,
    running: Option<Running>,
    next_id: u64,
    patience: Patience,
    /// How often the process was restarted after a fault.
    pub restarts: u64,
    /// Time lost to hangs: the waits that ran out and the restarts after them.
    hang_cost: Duration,
    /// The process was killed for a hang: its restart is a hang's cost too.
    after_hang: bool,
    /// What the answers reached, when the handshake offered the coverage extension (a
    /// restarted process's coverage adds to it).
    coverage: Option<Reached>,
    /// Requests whose answers reached new coverage, until `take_novel`.
    novel: Vec<(Op, Value)>,
    /// Answers after the calibrated wait, within its grace (`Sut::late_answers`).
    late: u64,
}

/// How one attempt at (the rest of) a batch ended.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// Every request answered.
    Done,
    /// A fault (the last answer) ended it; the process is gone.
    Fault,
    /// The caller's deadline passed, or the caller broke off; the process is gone.
    Stopped,
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
        let spawned = Instant::now();
        let (running, handshake) =
            Running::spawn(&argv, options.max_answer_bytes, options.handshake_timeout)?;
        let mut patience = Patience::new(options.timeout, options.calibrate);
        patience.started(spawned.elapsed());
        let ops = handshake.known_ops();
        if ops.is_empty() {
            bail!(
                "SUT `{}` offers none of the known ops (it listed {:?})",
                handshake.name,
                handshake.ops
            );
        }
        Ok(Self {
            coverage: Reached::offered(handshake.coverage.as_ref()),
            novel: Vec::new(),
            argv,
            options,
            handshake,
            ops,
            running: Some(running),
            next_id: 0,
            patience,
            restarts: 0,
            hang_cost: Duration::ZERO,
            after_hang: false,
            late: 0,
        })
    }

    /// Splits a command line the way a POSIX shell would for simple words and quotes.
    pub fn parse_command(command: &str) -> Result<Vec<String>> {
        command::shell_words(command)
    }

    fn running(&mut self) -> Result<&mut Running> {
        if self.running.is_none() {
            let started = Instant::now();
            let (running, _) = Running::spawn(
                &self.argv,
                self.options.max_answer_bytes,
                self.options.handshake_timeout,
            )
            .context("restarting the SUT")?;
            self.running = Some(running);
            self.restarts += 1;
            self.patience.started(started.elapsed());
            if std::mem::take(&mut self.after_hang) {
                self.hang_cost += started.elapsed();
            }
        }
        self.running
            .as_mut()
            .ok_or_else(|| anyhow!("SUT not running"))
    }

    /// Sends `batch` and pushes its answers to `answers` until a fault, the end of the batch,
    /// `until` or a break from `seen`. After a fault, at `until` or at a break with requests
    /// outstanding the process group is killed: no late answer reaches the next request (the
    /// next process has pipes of its own), no grandchild keeps a pipe.
    fn attempt(
        &mut self,
        batch: &[(Op, &Value)],
        until: Option<Instant>,
        wait: Wait,
        answers: &mut Vec<Answer>,
        seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
    ) -> Result<Attempt> {
        let first_id = self.next_id;
        self.next_id += batch.len() as u64;
        let max_answer_bytes = self.options.max_answer_bytes;
        let ceiling = self.options.timeout;
        let mut payload = Vec::new();
        for (i, (op, input)) in batch.iter().enumerate() {
            crate::protocol::write_request(&mut payload, first_id + i as u64, *op, input);
        }
        self.running()?.send(payload);
        for (i, &(op, _)) in batch.iter().enumerate() {
            let suspect = match wait {
                Wait::Calibrated => self.patience.wait(op),
                Wait::Full => ceiling,
                Wait::At(wait) => wait.min(ceiling),
            };
            // Past `suspect` the answer may be slow rather than hung: the process is kept for as
            // long as replacing it would cost (`Patience::grace`), and only then is it a hang.
            let wait = suspect + self.patience.grace(op, suspect).unwrap_or_default();
            let started = Instant::now();
            let give_up = started + wait;
            let deadline = until.map_or(give_up, |u| u.min(give_up));
            let running = self.running()?;
            let answer = match next_answer(running, deadline, first_id + i as u64, max_answer_bytes)
            {
                Some((answer, covered)) => {
                    if let (Some(reached), Some(covered)) = (&mut self.coverage, covered)
                        && reached.fold(&covered)
                        && self.novel.len() < NOVEL_KEEP
                    {
                        self.novel.push((op, batch[i].1.clone()));
                    }
                    if !matches!(answer, Answer::Fault(_)) {
                        let waited = started.elapsed();
                        self.late += u64::from(waited > suspect);
                        self.patience.answered(op, waited);
                    }
                    answer
                }
                None if deadline < give_up => {
                    self.running = None;
                    return Ok(Attempt::Stopped);
                }
                None => {
                    self.hang_cost += wait;
                    self.after_hang = true;
                    self.patience.hung(op);
                    Answer::Fault(Fault::Hang {
                        timeout_ms: millis(wait),
                        full_ms: (wait < ceiling).then(|| millis(ceiling)),
                    })
                }
            };
            let fault = matches!(answer, Answer::Fault(_));
            let flow = seen(&answer);
            answers.push(answer);
            if fault || (flow.is_break() && i + 1 < batch.len()) {
                self.running = None;
            }
            if flow.is_break() {
                return Ok(Attempt::Stopped);
            }
            if fault {
                return Ok(Attempt::Fault);
            }
        }
        Ok(Attempt::Done)
    }
}

/// The answer to request `id` (a fault among them) and the coverage it reported, or `None` when
/// `deadline` passed first.
fn next_answer(
    running: &mut Running,
    deadline: Instant,
    id: u64,
    max_answer_bytes: usize,
) -> Option<(Answer, Option<Value>)> {
    let fault = match running.next_line(deadline) {
        Ok(Next::Line(line)) => return Some(parse_answer_line(line, id)),
        Ok(Next::TimedOut) => return None,
        Ok(Next::Oversized(head)) => Answer::Fault(Fault::Protocol {
            line: format!(
                "{}{}",
                String::from_utf8_lossy(&head),
                crate::excerpt::CUT_MARKER
            ),
            problem: format!("oversized answer: no newline within {max_answer_bytes} bytes"),
        }),
        Ok(Next::Ended { partial }) => Answer::Fault(running.crash(&partial, false)),
        Ok(Next::Exited) => Answer::Fault(running.crash(&[], true)),
        Err(e) => Answer::Fault(Fault::Crash {
            status: format!("stdout unreadable: {e}"),
            stderr: running.stderr_tail(),
        }),
    };
    Some((fault, None))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Sut for ProcessSut {
    fn name(&self) -> &str {
        &self.handshake.name
    }

    fn ops(&self) -> &[Op] {
        &self.ops
    }

    fn call_until(
        &mut self,
        batch: &[(Op, &Value)],
        until: Option<Instant>,
        wait: Wait,
        seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
    ) -> Result<Vec<Answer>> {
        let mut answers = Vec::with_capacity(batch.len());
        while answers.len() < batch.len() && until.is_none_or(|u| Instant::now() < u) {
            let done = answers.len();
            if self.attempt(&batch[done..], until, wait, &mut answers, seen)? == Attempt::Stopped {
                break;
            }
        }
        Ok(answers)
    }

    fn calibrated(&self, op: Op) -> Option<Duration> {
        self.patience.calibrated(op)
    }

    fn slow(&mut self, op: Op) {
        self.patience.slow(op);
    }

    fn hang_cost(&self) -> Duration {
        self.hang_cost
    }

    fn coverage(&self) -> Option<&Reached> {
        self.coverage.as_ref()
    }

    fn take_novel(&mut self) -> Vec<(Op, Value)> {
        std::mem::take(&mut self.novel)
    }

    fn late_answers(&self) -> u64 {
        self.late
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
