//! `report.html`: one self-contained page per run. No script, and nothing fetched: the style is
//! inline, the plots are inline SVG, and a Content-Security-Policy of `default-src 'none'` makes
//! the browser refuse any request or script that hostile text might still smuggle in.
//!
//! Every piece of text from a run (inputs, answers, details, names) goes through `escape` or
//! `text` (`../escape.rs`): HTML-escaped, with control, bidirectional and zero-width characters
//! shown as `\uXXXX` (they are exactly what directive-smuggling inputs are made of). JSON values
//! are shown as pretty JSON, cut at `SHOWN_MAX` bytes; the finding's file holds the full value.
//!
//! `layout.rs` is the page layout (style, head, verdict banner, the blocks every page uses);
//! `campaign.rs`, `fuzz.rs` and `e2e.rs` fill the page for each kind of run, and `plot.rs`
//! draws the charts as SVG.

mod campaign;
mod e2e;
mod fuzz;
mod layout;
mod plot;

pub use campaign::campaign;
pub use e2e::e2e;
pub use fuzz::fuzz;
