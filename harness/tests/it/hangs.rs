//! A hanging SUT never stalls a campaign: the fault catalogue's hang proxy (the reference behind
//! a Python shim that stops answering on some cases) against `--time`. Each campaign must end
//! by its deadline (plus cleanup), report a B1 hang, and give the ops that never hang at least
//! half the cases the same SUT gets without the hang.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use normfuzz::campaign::{Campaign, Outcome, Progress, run};
use normfuzz::protocol::Op;
use normfuzz::rule::Rule;
use normfuzz::sut::{ProcessSut, SutOptions};

const TIME: Duration = Duration::from_secs(6);
/// The full time-out: a hang is confirmed once with it.
const CEILING: Duration = Duration::from_secs(2);
/// The ops whose inputs never hold U+0000.
const NEVER_NUL: [Op; 3] = [
    Op::CheckMediaUrl,
    Op::ResolveRetryImages,
    Op::SanitizeToolNames,
];

fn hang_proxy(mode: &str) -> (Outcome, Duration) {
    let argv: Vec<String> = [
        "python3",
        "-B",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suts/hang_proxy.py"),
        env!("CARGO_BIN_EXE_normfuzz"),
        mode,
    ]
    .map(String::from)
    .into();
    let campaign = Campaign {
        time: Some(TIME),
        ..Campaign::new(Op::ALL.to_vec(), 7)
    };
    let options = SutOptions {
        timeout: CEILING,
        ..SutOptions::default()
    };
    let started = Instant::now();
    let outcome = run(
        &campaign,
        || ProcessSut::start_with(argv.clone(), options),
        &Progress::default(),
    )
    .expect("the campaign runs");
    (outcome, started.elapsed())
}

fn hangs_found(outcome: &Outcome) -> Vec<Op> {
    outcome
        .findings
        .iter()
        .filter(|f| f.rule == Rule::B1 && f.kind == "no answer in time" && f.gate)
        .map(|f| f.op)
        .collect()
}

fn cases(outcome: &Outcome) -> BTreeMap<Op, u64> {
    outcome
        .per_op
        .iter()
        .map(|(op, t)| (*op, t.cases))
        .collect()
}

/// Ends by the deadline, whatever the SUT does: a request still waited for then is dropped.
fn assert_on_time(mode: &str, elapsed: Duration) {
    assert!(
        elapsed < TIME + Duration::from_secs(2),
        "{mode}: {elapsed:?}"
    );
}

#[test]
fn a_sut_hanging_on_nul_costs_its_ops_not_the_others() {
    crate::on_job_stack(|| {
        let (clean, _) = hang_proxy("none");
        assert!(hangs_found(&clean).is_empty());
        let (outcome, elapsed) = hang_proxy("nul");
        assert_on_time("nul", elapsed);
        let hung = hangs_found(&outcome);
        assert!(hung.contains(&Op::NeutralizeText), "{hung:?}");
        let shrunk = outcome
            .findings
            .iter()
            .find(|f| f.op == Op::NeutralizeText && f.rule == Rule::B1)
            .expect("the hang's finding");
        // Confirmed with the full time-out and shrunk for 2 s at most (each step that still hangs
        // costs a wait and a restart): a NUL is still in it, and it is no longer a whole batch's case.
        let shown = shrunk.input.to_string();
        assert!(shown.contains("\\u0000") && shown.len() < 2_000, "{shown}");
        assert!(
            !shrunk.detail.contains("not confirmed") && !shrunk.detail.contains("not shrunk"),
            "{}",
            shrunk.detail
        );
        let (with, without) = (cases(&outcome), cases(&clean));
        for op in NEVER_NUL {
            assert!(
                with[&op] * 2 >= without[&op],
                "{op}: {} cases with the hang, {} without",
                with[&op],
                without[&op]
            );
        }
        let faults = outcome.faults;
        assert!(faults.hangs >= 1 && faults.hang_ms >= CEILING.as_millis() as u64);
        assert!(
            outcome.left_out() > 0,
            "later cases of the ops that hung were left out"
        );
    });
}

#[test]
fn a_sut_hanging_on_a_fraction_of_cases_ends_on_time() {
    crate::on_job_stack(|| {
        for mode in ["fraction:0.01", "fraction:0.3"] {
            let (outcome, elapsed) = hang_proxy(mode);
            assert_on_time(mode, elapsed);
            assert!(
                !hangs_found(&outcome).is_empty(),
                "{mode}: no hang reported"
            );
            assert!(outcome.cases() > 0, "{mode}");
        }
    });
}

#[test]
fn a_sut_hanging_on_every_case_of_one_op_leaves_the_others_their_rate() {
    crate::on_job_stack(|| {
        let (outcome, elapsed) = hang_proxy("op:parse_reply");
        assert_on_time("op", elapsed);
        assert_eq!(hangs_found(&outcome), [Op::ParseReply]);
        let cases = cases(&outcome);
        for op in Op::ALL.into_iter().filter(|op| *op != Op::ParseReply) {
            assert!(
                cases[&op] > 50 * cases[&Op::ParseReply],
                "{op}: {} against parse_reply's {}",
                cases[&op],
                cases[&Op::ParseReply]
            );
        }
    });
}
