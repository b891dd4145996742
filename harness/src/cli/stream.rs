//! `normfuzz stream`: a captured provider SSE stream decoded and neutralized as streamed output.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use normfuzz::reference::media_policy::MediaRoots;
use normfuzz::reference::sse::{ProviderFormat, ProviderStream, StreamItem};
use normfuzz::reference::turn::{Delivery, Turn};
use serde::Serialize;

use super::io::print_json;

#[derive(clap::Args)]
pub struct StreamArgs {
    /// Wire format: anthropic, openai-chat, openai-responses or gemini; recognized from the
    /// first events when omitted.
    #[arg(long, value_parser = str::parse::<ProviderFormat>)]
    format: Option<ProviderFormat>,
    /// SSE body to read; `-` or nothing reads standard input.
    file: Option<PathBuf>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StreamOutput {
    format: &'static str,
    text: String,
    deliveries: Vec<Delivery>,
    provider_error: Option<String>,
}

pub fn run(args: StreamArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let result = normalize_sse(args.format, args.file.as_ref())?;
    print_json(&mut out, &result)?;
    Ok(ExitCode::SUCCESS)
}

/// Decodes an SSE body read in pieces and streams its text deltas through one turn.
fn normalize_sse(format: Option<ProviderFormat>, file: Option<&PathBuf>) -> Result<StreamOutput> {
    let mut reader: Box<dyn Read> = match file {
        Some(path) if path.as_os_str() != "-" => Box::new(
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?,
        ),
        _ => Box::new(std::io::stdin().lock()),
    };
    let roots = MediaRoots::default();
    let mut turn = Turn::new(&roots);
    let mut decoder = ProviderStream::new(format);
    let mut items = Vec::new();
    let mut provider_error = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf).context("cannot read the stream")?;
        let last = n == 0;
        if last {
            let format = decoder.finish(&mut items)?;
            take_items(&mut items, &mut turn, &mut provider_error);
            let deliveries = turn.finish(None).deliveries;
            let text = deliveries.iter().map(|d| d.text.as_str()).collect();
            return Ok(StreamOutput {
                format: format.as_str(),
                text,
                deliveries,
                provider_error,
            });
        }
        decoder.push(&buf[..n], &mut items)?;
        take_items(&mut items, &mut turn, &mut provider_error);
    }
}

fn take_items(
    items: &mut Vec<StreamItem>,
    turn: &mut Turn<'_>,
    provider_error: &mut Option<String>,
) {
    for item in items.drain(..) {
        match item {
            StreamItem::Text(text) => turn.stream_text(&text),
            StreamItem::ProviderError(message) => *provider_error = Some(message),
        }
    }
}
