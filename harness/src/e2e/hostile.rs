//! The model's own moves (issue 25): the tool calls of a case's scripted turns, and the markers
//! that trace what a turn did back to the field of a call that caused it.
//!
//! Every hostile value a case carries (a tool-call id, a tool name, arguments, the path or URL
//! of a send-style call) embeds [`marker`]`(case, field)`; [`trace`] finds which field's marker
//! a text holds: the name of a file a turn wrote, the path the canary route was fetched at, a
//! delivered file's name. The tables and the builder are `generate::corners::calls`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::adapter::{Adapter, expand};
use super::case::E2eCase;
use super::marker::marker;
use super::plant::{Planted, fingerprint};
pub use crate::generate::corners::calls::{Call, Field, Target, Tool, report_arguments};

/// The tool a send-style call names when the adapter declares no `[send_tool]`: the call still
/// goes out, to a tool the runtime does not offer.
const NO_SEND_TOOL: &str = "send_message_to_user";

/// A script step calling `name` with `arguments` (and the id, when the case sets one).
fn tool_call(name: &str, arguments: &Value, id: Option<&str>) -> Value {
    let mut call = json!({"name": name, "arguments": arguments});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({ "tool_call": call })
}

/// Today's call of the MCP tool, as a script step (the fallback scenario's too).
pub fn plain_step(adapter: &Adapter) -> Value {
    tool_call(&adapter.model_tool, &report_arguments(), None)
}

/// A URL target with the canary route's `port` filled in.
pub fn url(template: &str, port: u16) -> Result<String> {
    expand(template, &BTreeMap::from([("port", port.to_string())]))
}

/// The tool name and arguments of a send-style call naming `target`: the adapter's
/// `[send_tool]` template with `${path}` or `${url}` (a JSON string), or [`NO_SEND_TOOL`].
fn send(adapter: &Adapter, target: &Target, port: u16) -> Result<(String, Value)> {
    let (key, value) = match target {
        Target::Path(path) => ("path", path.clone()),
        Target::Url(template) => ("url", url(template, port)?),
    };
    let Some(tool) = &adapter.send_tool else {
        return Ok((NO_SEND_TOOL.to_string(), json!({ key: value })));
    };
    let template = match target {
        Target::Path(_) => &tool.path,
        Target::Url(_) => &tool.url,
    };
    let text = expand(template, &BTreeMap::from([(key, json!(value).to_string())]))?;
    let arguments = serde_json::from_str(&text).with_context(|| {
        format!(
            "adapter {}: [send_tool].{key} is not JSON once expanded: {text}",
            adapter.label()
        )
    })?;
    Ok((tool.name.clone(), arguments))
}

/// The scripted turns of `case`: each of its tool calls, then its reply. `port` is the mock
/// providers', whose canary route the case's URLs name.
pub fn script(adapter: &Adapter, case: &E2eCase, port: u16) -> Result<Value> {
    let mut turns = call_steps(adapter, case, port)?;
    turns.push(json!({ "chunks": case.reply }));
    Ok(Value::Array(turns))
}

/// Each tool call of `case` as a script step (a fallback case's failed attempt makes them too).
pub fn call_steps(adapter: &Adapter, case: &E2eCase, port: u16) -> Result<Vec<Value>> {
    case.tool_calls()
        .iter()
        .map(|call| {
            let (name, arguments) = match &call.tool {
                Tool::Mcp { arguments } => (adapter.model_tool.clone(), arguments.clone()),
                Tool::Named { name, arguments } => (name.clone(), arguments.clone()),
                Tool::Send { target } => send(adapter, target, port)?,
            };
            Ok(tool_call(&name, &arguments, call.id.as_deref()))
        })
        .collect()
}

/// The canary URLs `case` names, each with the bytes the canary route answers for it: judged
/// with the planted files, so a channel upload of them is found by bytes.
pub fn url_plants(case: &E2eCase, port: u16) -> Result<Vec<Planted>> {
    let mut out = Vec::new();
    for call in case.tool_calls() {
        let Tool::Send {
            target: Target::Url(template),
        } = &call.tool
        else {
            continue;
        };
        let url = url(template, port)?;
        // The route's bytes carry the marker its path names: each URL of a case its own (the
        // Send marker and the URL's number), so an upload is traced to the URL fetched.
        let path = url::Url::parse(&url).map(|u| u.path().to_string());
        let route = path
            .as_deref()
            .ok()
            .and_then(mock_providers::canary::marker);
        let sent = route.map_or_else(|| marker(&case.id, Field::Send), str::to_owned);
        let bytes = mock_providers::canary::png(&sent);
        let mut plant = fingerprint(&url, Path::new(&url), &bytes, Some(sent), false, true);
        plant.field = Some(Field::Send);
        out.push(plant);
    }
    Ok(out)
}
