//! `normfuzz e2e --scenario vision` against a stand-in runtime (tests/runtimes/fake_vision.py):
//! the loopback page, the agent and vision models' queues, the judge. One that neutralizes the
//! vision text and downscales the screenshot passes; one that forwards the vision text as it came,
//! or neutralizes it on "\n" only, is caught under S1, one that sends the full-size screenshot
//! under S2. The real one is openclaw's `[vision]` (`cargo xtask e2e --runtime openclaw
//! --scenario vision`).

use super::e2e_fake::{found, has, run_e2e, stand_in};

#[test]
fn a_runtime_forwarding_vision_text_or_an_oversized_screenshot_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--scenario", "vision", "--cases", "4", "--jobs", "2"];
    let run = |mode: &str| {
        let adapter = stand_in(dir.path(), "fake-vision.toml", "fake_vision.py", mode);
        let report = dir.path().join(format!("report-vision-{mode}"));
        run_e2e(dir.path(), &adapter, &report, &args, None)
    };
    let (code, good) = run("good");
    assert_eq!(good["errors"], 0, "{good:#}");
    assert_eq!(found(&good), [], "{good:#}");
    assert_eq!((code, good["cases"].as_array().unwrap().len()), (0, 4));

    // Raw, or neutralized on "\n" only as openclaw does: the lines after a CR, U+2028, U+2029
    // or NEL stay live.
    for mode in ["raw", "lf-only"] {
        let (code, index) = run(mode);
        assert_eq!(code, 1, "{mode}");
        let found = found(&index);
        for case in [
            "vision-describes-directives",
            "vision-fails-400",
            "vision-fails-500",
        ] {
            assert!(
                has(&found, case, "S1", "model"),
                "{mode}: {case} S1 missing from {found:?}"
            );
        }
    }

    let (code, oversized) = run("oversized");
    assert_eq!(code, 1);
    assert_eq!(
        found(&oversized),
        [
            ("vision-fails-400".into(), "S2".into(), "model".into()),
            ("vision-fails-500".into(), "S2".into(), "model".into()),
        ],
    );
}
