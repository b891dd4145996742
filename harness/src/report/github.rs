//! GitHub Actions workflow commands for a campaign: one `::error` annotation per finding that
//! fails the run (placed at the SUT's script, so a pull request shows it), one `::warning` per
//! baseline entry the run did not reach. `normfuzz conform` prints them when `GITHUB_ACTIONS`
//! is `true`; the summary goes to `$GITHUB_STEP_SUMMARY` as for every report.

use super::view::CampaignView;

pub(super) fn annotations(campaign: &CampaignView<'_>) -> Vec<String> {
    let outcome = campaign.outcome;
    let file = campaign
        .sut_file()
        .map_or(String::new(), |f| format!("file={},", property(f)));
    let mut lines = Vec::new();
    for f in outcome
        .findings
        .iter()
        .filter(|f| outcome.fails(f, campaign.strict))
    {
        let class = f.impact.as_ref().map_or("unclassed", |i| i.class.as_str());
        let title = format!("normfuzz {} on {} ({class}, new)", f.rule, f.op);
        let input = crate::excerpt::bounded(&f.input.to_string(), 300).into_owned();
        let message = format!(
            "{}: {}\nminimal input: {input}\nrepro: {}",
            f.kind,
            crate::excerpt::bounded(&f.detail, 500),
            campaign.repro(f)
        );
        lines.push(format!(
            "::error {file}title={}::{}",
            property(&title),
            data(&message)
        ));
    }
    if let Some(judged) = &outcome.baseline {
        for k in &judged.not_reached {
            let message = format!(
                "{} on {} ({}) was not reached by this run: stale if the runtime fixed it",
                k.rule, k.op, k.cause
            );
            lines.push(format!(
                "::warning title={}::{}",
                property("normfuzz baseline entry not reached"),
                data(&message)
            ));
        }
    }
    lines
}

/// A workflow command's message, escaped as the Actions toolkit does (`escapeData`).
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`escapeProperty`): also `:` and `,`.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #[test]
    fn workflow_command_text_cannot_end_or_split_a_command() {
        assert_eq!(super::data("50%\r\nMEDIA:/x"), "50%25%0D%0AMEDIA:/x");
        assert_eq!(super::property("a:b,c\n"), "a%3Ab%2Cc%0A");
    }
}
