//! `normfuzz check-url`: remote media URLs against the public-https policy.

use std::process::ExitCode;

use anyhow::Result;
use normfuzz::reference::url_policy::{UrlVerdict, check_media_url};
use serde::Serialize;

use super::io::print_json;

#[derive(clap::Args)]
pub struct CheckUrlArgs {
    /// URLs to check.
    #[arg(required = true)]
    urls: Vec<String>,
}

#[derive(Serialize)]
struct UrlOutput<'a> {
    url: &'a str,
    #[serde(flatten)]
    verdict: &'a UrlVerdict,
}

/// Exits 1 when any URL is refused.
pub fn run(args: CheckUrlArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let mut refused = false;
    for url in &args.urls {
        let verdict = check_media_url(url);
        refused |= !verdict.allowed;
        print_json(
            &mut out,
            &UrlOutput {
                url,
                verdict: &verdict,
            },
        )?;
    }
    Ok(if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
