//! The time series a campaign samples for the report's plots: taken while the jobs run, ending
//! with the final state, never going backwards.

use std::time::Duration;

use normfuzz::campaign::{Campaign, Progress, run};
use normfuzz::protocol::Op;
use normfuzz::sut::ReferenceSut;

#[test]
fn a_campaign_samples_its_progress_until_the_end() {
    let campaign = Campaign {
        time: Some(Duration::from_millis(1_200)),
        jobs: 2,
        ..Campaign::new(Op::ALL.to_vec(), 3)
    };
    let outcome = run(&campaign, || Ok(ReferenceSut), &Progress::default()).expect("runs");
    let timeline = &outcome.timeline;
    // About every 250 ms for 1.2 s, plus the final sample.
    assert!((3..=7).contains(&timeline.len()), "{timeline:?}");
    let last = timeline.last().unwrap();
    assert_eq!(last.cases, outcome.cases());
    assert_eq!(last.findings, outcome.findings.len() as u64);
    assert!(
        timeline
            .windows(2)
            .all(|w| w[0].elapsed_ms <= w[1].elapsed_ms
                && w[0].cases <= w[1].cases
                && w[0].reference_shapes <= w[1].reference_shapes
                && w[0].verdict_cells <= w[1].verdict_cells),
        "{timeline:?}"
    );
    // The clean reference passes on every op and breaks nothing: one verdict per op.
    assert_eq!(last.verdict_cells, Op::ALL.len() as u64, "{last:?}");
    // Every op answers in more than one way (text and image blocks, allowed and refused URLs...).
    assert!(last.reference_shapes > 2 * Op::ALL.len() as u64, "{last:?}");
}
