//! The harness survives every SUT: one test per fault, each ending with the run going on (the
//! request after the fault answered by the restarted SUT) and the fault under its kind; bounded
//! memory against floods (measured in a process of its own); requests with every line breaker
//! answered by a Node `readline` shim.
//!
//! The fake SUTs are scripts under `harness/tests/suts/`; python3 and node must be installed
//! (a missing one fails the test that needs it, with a message).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use std::ops::ControlFlow;

use super::*;

fn suts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suts")
}

/// `tool`, or a failed test that says it is missing.
fn require(tool: &str) -> &str {
    match Command::new(tool).arg("--version").output() {
        Ok(out) if out.status.success() => tool,
        _ => panic!(
            "`{tool}` is needed to run the fake SUTs of this test and was not found on PATH: \
             install it (it is not optional, the test does not skip)"
        ),
    }
}

/// A fixed time-out: these tests are about faults, not about calibrating the wait.
fn options(timeout_ms: u64) -> SutOptions {
    SutOptions {
        timeout: Duration::from_millis(timeout_ms),
        calibrate: false,
        ..SutOptions::default()
    }
}

/// A fault script from `tests/suts/faults/` (no bytecode written next to it).
fn fault_sut(script: &str, args: &[&str], options: SutOptions) -> ProcessSut {
    ProcessSut::start_with(fault_argv(script, args), options).expect("the fault SUT starts")
}

fn fault_argv(script: &str, args: &[&str]) -> Vec<String> {
    let path = suts().join("faults").join(script);
    [require("python3"), "-B", path.to_str().expect("UTF-8 path")]
        .into_iter()
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

fn call(sut: &mut ProcessSut, texts: &[&str]) -> Vec<Answer> {
    let inputs: Vec<Value> = texts.iter().map(|t| json!({ "text": t })).collect();
    let batch: Vec<(Op, &Value)> = inputs.iter().map(|i| (Op::NeutralizeText, i)).collect();
    let answers = sut.call(&batch).expect("the harness goes on");
    assert_eq!(answers.len(), texts.len());
    answers
}

fn echo(text: &str) -> Answer {
    Answer::Output(json!({ "text": text }))
}

/// A batch with the fault in the middle: the fault comes back, the rest of the batch is answered
/// by the restarted process, and so is the next batch.
fn fault_then_run_goes_on(sut: &mut ProcessSut) -> Fault {
    let answers = call(sut, &["before", "FAULT", "after"]);
    assert_eq!(answers[0], echo("before"));
    assert_eq!(answers[2], echo("after"), "{answers:?}");
    assert_eq!(sut.restarts, 1);
    assert_eq!(
        call(sut, &["next", "and next"]),
        [echo("next"), echo("and next")]
    );
    match &answers[1] {
        Answer::Fault(fault) => fault.clone(),
        other => panic!("not a fault: {other:?}"),
    }
}

fn gone(pid: &str) -> bool {
    // Killed: no such process, or a zombie waiting for whoever adopted it.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[test]
fn exit_before_the_handshake_is_a_clear_error() {
    let err = ProcessSut::start_with(fault_argv("exit_before_handshake.py", &[]), options(500))
        .err()
        .expect("no handshake");
    let message = format!("{err:#}");
    assert!(message.contains("exited before its handshake"), "{message}");
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(
        message.contains("fatal: no configuration found"),
        "{message}"
    );
    // The same on a restart: an error for the caller, not a panic.
    let state = tempfile::tempdir().expect("temp dir");
    let state = state.path().join("started");
    let mut sut = fault_sut(
        "exit_before_handshake.py",
        &[state.to_str().expect("UTF-8")],
        options(500),
    );
    let inputs = [json!({"text": "FAULT"}), json!({"text": "after"})];
    let batch: Vec<(Op, &Value)> = inputs.iter().map(|i| (Op::NeutralizeText, i)).collect();
    let err = sut.call(&batch).expect_err("the restart fails");
    let message = format!("{err:#}");
    assert!(
        message.contains("restarting the SUT") && message.contains("exited before its handshake"),
        "{message}"
    );
}

/// The handshake has `handshake_timeout`: a SUT that imports for longer is refused with a
/// message naming the flag that gives it more, and started when given it.
#[test]
fn a_slow_start_gets_the_handshake_time_it_is_given() {
    let quick = SutOptions {
        handshake_timeout: Duration::from_millis(300),
        ..options(1_000)
    };
    let err = ProcessSut::start_with(fault_argv("slow_start.py", &["1.5"]), quick)
        .err()
        .expect("no handshake within 300 ms");
    let message = format!("{err:#}");
    assert!(message.contains("no handshake within 0.3 s"), "{message}");
    assert!(message.contains("--handshake-timeout-ms"), "{message}");
    let patient = SutOptions {
        handshake_timeout: Duration::from_secs(10),
        ..options(1_000)
    };
    let mut sut = fault_sut("slow_start.py", &["1.5"], patient);
    let input = json!({"text": "hello"});
    let answers = sut.call(&[(Op::NeutralizeText, &input)]).expect("answers");
    assert_eq!(answers, [Answer::Output(json!({"text": "hello"}))]);
}

#[test]
fn exit_mid_answer_is_a_crash() {
    let mut sut = fault_sut("exit_mid_answer.py", &[], options(5_000));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Crash { status, stderr } => {
            assert!(status.contains("exit status: 4"), "{status}");
            assert!(stderr.contains("giving up on request 1"), "{stderr}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn exit_after_a_partial_line_is_a_crash() {
    let mut sut = fault_sut("partial_line.py", &[], options(5_000));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Crash { status, .. } => {
            assert!(status.contains("exit status: 5"), "{status}");
            assert!(
                status.contains("stdout ended inside an answer line (24 bytes): {\"id\": 1"),
                "{status}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_utf8_is_a_protocol_fault() {
    let mut sut = fault_sut("invalid_utf8.py", &[], options(5_000));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Protocol { problem, line } => {
            assert_eq!(problem, "not valid UTF-8");
            assert!(line.contains("invalid byte at offset 30"), "{line}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn answers_out_of_order_are_a_protocol_fault() {
    let mut sut = fault_sut("out_of_order.py", &[], options(5_000));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Protocol { problem, line } => {
            assert_eq!(
                problem,
                "wrong id: a later request's (answers out of order)"
            );
            assert!(line.contains("\"id\": 2"), "{line}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_answer_given_twice_is_a_protocol_fault() {
    let mut sut = fault_sut("answer_twice.py", &[], options(5_000));
    let answers = call(&mut sut, &["FAULT", "after", "last"]);
    assert_eq!(answers[0], echo("FAULT"));
    match &answers[1] {
        Answer::Fault(Fault::Protocol { problem, line }) => {
            assert_eq!(
                problem,
                "wrong id: an earlier request's (answered twice, or late)"
            );
            assert!(line.contains("\"id\": 0"), "{line}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(answers[2], echo("last"));
    // Also across batches: the second answer is waiting when the next batch is sent.
    let answers = call(&mut sut, &["FAULT"]);
    assert_eq!(answers, [echo("FAULT")]);
    let answers = call(&mut sut, &["after"]);
    assert!(
        matches!(&answers[0], Answer::Fault(Fault::Protocol { problem, .. }) if problem.starts_with("wrong id")),
        "{answers:?}"
    );
    assert_eq!(call(&mut sut, &["next"]), [echo("next")]);
    assert_eq!(sut.restarts, 2);
}

#[test]
fn a_stderr_flood_keeps_its_last_64_kib() {
    let mut sut = fault_sut("stderr_flood.py", &[], options(20_000));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Crash { status, stderr } => {
            assert!(status.contains("exit status: 6"), "{status}");
            assert!(stderr.len() <= STDERR_KEEP, "{}", stderr.len());
            assert!(
                stderr.ends_with("\nLAST STDERR LINE\n"),
                "{}",
                crate::excerpt::tail(&stderr, 100)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_grandchild_holding_the_pipes_neither_blocks_nor_survives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("grandchild.pid");
    let mut sut = fault_sut(
        "grandchild.py",
        &[pid_file.to_str().expect("UTF-8")],
        options(5_000),
    );
    let t = Instant::now();
    let fault = fault_then_run_goes_on(&mut sut);
    // Noticed by the exit, not by the 5 s timeout nor by waiting for the pipes to close.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    match fault {
        Fault::Crash { status, .. } => {
            assert!(status.contains("exit status: 7"), "{status}");
            assert!(status.contains("held its stdout open"), "{status}");
        }
        other => panic!("{other:?}"),
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the grandchild's pid");
    let deadline = Instant::now() + Duration::from_secs(2);
    while !gone(&pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        gone(&pid),
        "grandchild {pid} survived the process group kill"
    );
}

#[test]
fn a_sut_ignoring_sigterm_is_killed_on_hang_and_on_close() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("sut.pid");
    let mut sut = fault_sut(
        "ignore_sigterm.py",
        &[pid_file.to_str().expect("UTF-8")],
        options(300),
    );
    let first = std::fs::read_to_string(&pid_file).expect("pid");
    match fault_then_run_goes_on(&mut sut) {
        Fault::Hang { timeout_ms, .. } => assert_eq!(timeout_ms, 300),
        other => panic!("{other:?}"),
    }
    assert!(gone(&first), "the hung process survived");
    // It does not exit when its stdin closes either: dropped, it is killed after the grace.
    let second = std::fs::read_to_string(&pid_file).expect("pid");
    let t = Instant::now();
    drop(sut);
    assert!(
        t.elapsed() < EXIT_GRACE + Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    assert!(gone(&second), "the SUT survived its drop");
}

#[test]
fn a_late_answer_is_never_taken_for_the_next() {
    let mut sut = fault_sut("late_answer.py", &[], options(300));
    match fault_then_run_goes_on(&mut sut) {
        Fault::Hang { timeout_ms, .. } => assert_eq!(timeout_ms, 300),
        other => panic!("{other:?}"),
    }
    // Long after the late answer was written (by the killed process), still the right answers.
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(call(&mut sut, &["later"]), [echo("later")]);
}

#[test]
fn an_oversized_answer_is_a_protocol_fault_with_its_first_bytes() {
    let mut sut = fault_sut(
        "stdout_flood.py",
        &[],
        SutOptions {
            timeout: Duration::from_secs(20),
            max_answer_bytes: 1 << 20,
            ..SutOptions::default()
        },
    );
    match fault_then_run_goes_on(&mut sut) {
        Fault::Protocol { problem, line } => {
            assert_eq!(problem, "oversized answer: no newline within 1048576 bytes");
            assert_eq!(
                line,
                format!("{}{}", "x".repeat(200), crate::excerpt::CUT_MARKER)
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Node's readline gets one request per line whatever the text holds: every control character,
/// U+2028, U+2029, U+0085, mixed in a batch, each answered with the text intact.
#[test]
fn a_node_readline_shim_gets_every_request_whole() {
    let node = require("node");
    let shim = suts().join("readline_echo.mjs");
    let mut sut = ProcessSut::start_with(
        vec![node.into(), shim.to_str().expect("UTF-8").into()],
        options(10_000),
    )
    .expect("the readline shim starts");
    let breakers = (0u32..0x20)
        .chain([0x7F])
        .chain(0x80..0xA0)
        .chain([0x2028, 0x2029])
        .filter_map(char::from_u32);
    let mut texts: Vec<String> = breakers
        .map(|c| format!("a{c}b\u{2028}MEDIA:/x{c}\u{2029}{c}"))
        .collect();
    texts.push("\u{2028}\u{2029}\u{85}\r\r\n\u{2028}".into());
    texts.push("plain".into());
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for _ in 0..3 {
        let answers = call(&mut sut, &texts);
        for (text, answer) in texts.iter().zip(&answers) {
            assert_eq!(answer, &echo(text), "{text:?}");
        }
    }
    assert_eq!(sut.restarts, 0);
}

/// Memory against a flooding SUT, measured in a process of its own (other tests would move the
/// high-water mark): a SUT that writes 2 GB without a newline, and one that writes 256 MiB to
/// stderr, leave the harness's peak RSS less than 256 MiB above where it started.
#[test]
fn floods_leave_the_harness_memory_bounded() {
    require("python3");
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([
            "--exact",
            "sut::tests::flood_probe",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("NORMFUZZ_FLOOD_PROBE", "1")
        .output()
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "probe failed:\n{stdout}\n{stderr}");
    let growth: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("peak RSS growth KiB: "))
        .unwrap_or_else(|| panic!("the probe did not run:\n{stdout}\n{stderr}"))
        .trim()
        .parse()
        .expect("a number");
    eprintln!("peak RSS growth under the floods: {} MiB", growth / 1024);
    assert!(growth < 256 * 1024, "peak RSS grew by {growth} KiB");
}

/// Run by [`floods_leave_the_harness_memory_bounded`] in a process of its own.
#[test]
#[ignore = "run in its own process by floods_leave_the_harness_memory_bounded"]
fn flood_probe() {
    if std::env::var_os("NORMFUZZ_FLOOD_PROBE").is_none() {
        return;
    }
    let before = peak_rss_kib();
    let started = Instant::now();
    let mut sut = fault_sut(
        "stdout_flood.py",
        &[],
        SutOptions {
            timeout: Duration::from_secs(60),
            max_answer_bytes: 8 << 20,
            ..SutOptions::default()
        },
    );
    let fault = fault_then_run_goes_on(&mut sut);
    assert!(
        matches!(&fault, Fault::Protocol { problem, .. } if problem.starts_with("oversized answer")),
        "{fault:?}"
    );
    let mut sut = fault_sut("stderr_flood.py", &["--answer"], options(60_000));
    assert_eq!(
        call(&mut sut, &["FAULT", "after"]),
        [echo("FAULT"), echo("after")]
    );
    drop(sut);
    let after = peak_rss_kib();
    println!(
        "peak RSS KiB before: {before}, after: {after}, in {:?}",
        started.elapsed()
    );
    println!("peak RSS growth KiB: {}", after.saturating_sub(before));
}

/// This process's peak resident set (VmHWM), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// The wait calibrated on the SUT's answers, under a `ceiling_ms` ceiling.
fn calibrated(ceiling_ms: u64) -> SutOptions {
    SutOptions {
        timeout: Duration::from_millis(ceiling_ms),
        ..SutOptions::default()
    }
}

fn inputs(texts: &[&str]) -> Vec<Value> {
    texts.iter().map(|t| json!({ "text": t })).collect()
}

#[test]
fn a_hang_costs_the_calibrated_time_out_once_the_sut_has_answered() {
    let ceiling = Duration::from_secs(20);
    let mut sut = fault_sut("hang.py", &[], calibrated(20_000));
    let t = Instant::now();
    call(&mut sut, &["a", "b", "c"]);
    // Three answers set the wait to a multiple of theirs (the floor on a quiet machine).
    let calibrated = sut.calibrated(Op::NeutralizeText).expect("calibrated");
    let answers = call(&mut sut, &["FAULT", "d"]);
    let waited = match &answers[0] {
        Answer::Fault(Fault::Hang {
            timeout_ms,
            full_ms: Some(20_000),
        }) => Duration::from_millis(*timeout_ms),
        other => panic!("{other:?}"),
    };
    // The calibrated wait, then the grace: what a restart of this SUT cost (its start-up, on a
    // loaded machine a second or two), never the 20 s ceiling.
    assert!(waited > calibrated, "{waited:?} after {calibrated:?}");
    assert!(waited < ceiling / 4, "{waited:?}");
    assert!(t.elapsed() < ceiling / 2, "{:?}", t.elapsed());
    assert_eq!(answers[1], echo("d"));
    assert_eq!(sut.restarts, 1);
    assert!(sut.hang_cost() >= waited);
    assert_eq!(sut.late_answers(), 0);
}

#[test]
fn a_slow_answer_past_the_calibrated_wait_costs_no_restart() {
    // A SUT that takes 3 s to start answers one request in 1 s: past the wait its fast answers
    // set, within what a restart would cost.
    let mut sut = fault_sut("slow_answer.py", &["3", "1"], calibrated(20_000));
    call(&mut sut, &["a", "b", "c"]);
    let calibrated = sut.calibrated(Op::NeutralizeText).expect("calibrated");
    assert!(calibrated < Duration::from_secs(1), "{calibrated:?}");
    assert_eq!(call(&mut sut, &["FAULT", "d"]), [echo("FAULT"), echo("d")]);
    assert_eq!(sut.restarts, 0);
    assert_eq!(sut.late_answers(), 1);
    assert_eq!(sut.hang_cost(), Duration::ZERO);
    // The slow answer raised the wait at once: three times it.
    assert!(
        sut.calibrated(Op::NeutralizeText)
            .is_some_and(|t| t >= Duration::from_secs(3)),
        "{:?}",
        sut.calibrated(Op::NeutralizeText)
    );
}

#[test]
fn a_full_wait_confirms_a_hang_with_the_whole_time_out() {
    let mut sut = fault_sut("hang.py", &[], calibrated(1_500));
    call(&mut sut, &["a", "b"]);
    let input = inputs(&["FAULT"]);
    let t = Instant::now();
    let answers = sut
        .call_until(
            &[(Op::NeutralizeText, &input[0])],
            None,
            Wait::Full,
            &mut |_| ControlFlow::Continue(()),
        )
        .expect("the harness goes on");
    assert!(
        t.elapsed() >= Duration::from_millis(1_500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        answers,
        [Answer::Fault(Fault::Hang {
            timeout_ms: 1_500,
            full_ms: None
        })]
    );
}

#[test]
fn a_slow_op_waits_twice_as_long() {
    let mut sut = fault_sut("hang.py", &[], calibrated(20_000));
    call(&mut sut, &["a"]);
    let before = sut.calibrated(Op::NeutralizeText).expect("calibrated");
    sut.slow(Op::NeutralizeText);
    assert_eq!(sut.calibrated(Op::NeutralizeText), Some(before * 2));
}

#[test]
fn the_deadline_cuts_a_batch_and_drops_the_request_waited_for() {
    let mut sut = fault_sut("hang.py", &[], options(20_000));
    let inputs = inputs(&["a", "FAULT", "b"]);
    let batch: Vec<(Op, &Value)> = inputs.iter().map(|i| (Op::NeutralizeText, i)).collect();
    let t = Instant::now();
    let mut seen = 0;
    let answers = sut
        .call_until(
            &batch,
            Some(t + Duration::from_millis(500)),
            Wait::Calibrated,
            &mut |_| {
                seen += 1;
                ControlFlow::Continue(())
            },
        )
        .expect("the harness goes on");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(
        answers,
        [echo("a")],
        "the hanging request is neither answered nor a fault"
    );
    assert_eq!(seen, 1);
    assert_eq!(call(&mut sut, &["next"]), [echo("next")]);
}

#[test]
fn a_break_stops_the_batch_after_that_answer() {
    let mut sut = fault_sut("hang.py", &[], options(5_000));
    let inputs = inputs(&["a", "b", "c"]);
    let batch: Vec<(Op, &Value)> = inputs.iter().map(|i| (Op::NeutralizeText, i)).collect();
    let answers = sut
        .call_until(&batch, None, Wait::Calibrated, &mut |answer| {
            if *answer == echo("b") {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .expect("the harness goes on");
    assert_eq!(answers, [echo("a"), echo("b")]);
    assert_eq!(call(&mut sut, &["c"]), [echo("c")]);
}

#[test]
fn a_sut_that_stops_reading_its_stdin_is_a_hang_and_the_run_goes_on() {
    let mut sut = fault_sut("stop_reading.py", &[], options(500));
    // Megabyte texts: the harness's writes block once the pipe is full.
    let big = "x".repeat(1 << 20);
    let t = Instant::now();
    let answers = call(&mut sut, &["first", &big, &big, &big]);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(answers[0], echo("first"));
    assert!(
        matches!(
            answers[1],
            Answer::Fault(Fault::Hang {
                timeout_ms: 500,
                ..
            })
        ),
        "{:?}",
        answers[1]
    );
    // Each restarted process answers its first request, then stops reading again.
    assert_eq!(answers[2], echo(&big));
    assert!(matches!(answers[3], Answer::Fault(Fault::Hang { .. })));
    // The second hang's process is replaced when the next request comes.
    assert_eq!(sut.restarts, 1);
}

/// The coverage extension through the shared shims' own coverage code (`runtimes/lib/`): the
/// Python one (`sys.settrace` before 3.12, `sys.monitoring` from it) and V8's in Node. The line
/// that prefixes a directive, and the branch to it, are reached only by the case that has one.
#[test]
fn shims_report_the_coverage_each_answer_reached() {
    let dir = suts().join("coverage");
    let scope = "NORMFUZZ_COVERAGE=coverage/*.*:neutralize";
    for (tool, script) in [("python3", "sut.py"), ("node", "sut.mjs")] {
        let path = dir.join(script).to_string_lossy().into_owned();
        let argv = ["env", scope, require(tool), path.as_str()].map(String::from);
        let mut sut = ProcessSut::start_with(argv.to_vec(), options(20_000)).expect("starts");
        call(&mut sut, &["a", "b"]);
        let reached = sut.coverage().expect("the extension is offered").report();
        assert_eq!(reached.len(), 1, "{script}: one unit, `neutralize`");
        let before = reached[0].clone();
        assert!(
            before.lines_reached > 0 && !before.unreached.is_empty(),
            "{script}: {before:?}"
        );
        call(&mut sut, &["MEDIA:/x"]);
        let after = &sut.coverage().expect("offered").report()[0];
        assert!(after.unreached.is_empty(), "{script}: {after:?}");
        assert!(
            after.branches_reached > before.branches_reached,
            "{script}: {after:?}"
        );
        assert_eq!(after.branches, Some(after.branches_reached), "{script}");
        // Without a scope nothing is measured and nothing is offered.
        let argv = [require(tool), path.as_str()].map(String::from);
        let sut = ProcessSut::start_with(argv.to_vec(), options(20_000)).expect("starts");
        assert!(sut.coverage().is_none(), "{script}");
    }
}

/// The shared Python shim loop keeps the garbage collector off while the runtime is imported
/// and freezes what the imports left before the cases run with it on again (`runtimes/lib/shim.py`):
/// a tenth of a Python shim's start-up CPU went to collections rescanning the import's objects.
#[test]
fn the_shared_python_shim_loop_collects_no_garbage_while_the_runtime_imports() {
    let path = suts().join("gc_startup.py").to_string_lossy().into_owned();
    let argv = [require("python3"), "-B", path.as_str()].map(String::from);
    let mut sut = ProcessSut::start_with(argv.to_vec(), options(20_000)).expect("starts");
    assert_eq!(
        call(&mut sut, &["state"]),
        vec![echo("imports: off, cases: on, frozen: True")]
    );
}

/// The shared Python shim loop exits as soon as stdin closes (`leave()` in
/// `runtimes/lib/shim.py`): a runtime's slow interpreter teardown (here an exit handler that
/// sleeps 3 s) costs the campaign nothing, where it would cost the whole `EXIT_GRACE`.
#[test]
fn the_shared_python_shim_loop_exits_without_its_teardown() {
    let path = suts().join("leave.py").to_string_lossy().into_owned();
    let argv = [require("python3"), "-B", path.as_str()].map(String::from);
    let mut sut = ProcessSut::start_with(argv.to_vec(), options(20_000)).expect("starts");
    assert_eq!(call(&mut sut, &["a"]), vec![echo("a")]);
    let stopping = Instant::now();
    drop(sut);
    assert!(
        stopping.elapsed() < EXIT_GRACE / 2,
        "stopped in {:?}",
        stopping.elapsed()
    );
}
