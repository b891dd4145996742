//! Runtime adapter files (`harness/runtimes/<name>/e2e.toml`, or any file `--adapter` names):
//! install steps, the config template, the files and folders the runtime needs in the case's
//! folder before it starts (`[prepare]`), the one-turn command and where its output keeps the
//! delivered reply.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    pub name: String,
    pub version: String,
    /// Baseline file, relative to the adapter file.
    pub baseline: Option<String>,
    pub mcp_tool: String,
    pub model_tool: String,
    pub prompt: String,
    pub turn_timeout: u64,
    /// npm packages, one prefix each; none for a runtime already on the machine.
    #[serde(default)]
    pub install: Vec<InstallStep>,
    /// Installed by the runtime matrix's installer (`cargo xtask matrix` or `cargo xtask e2e`)
    /// from the `runtime.toml` beside this file: the turns reuse that cache folder,
    /// `unit-<name>-<version>`, one install for both levels (pip venvs included).
    #[serde(default)]
    pub unit_install: bool,
    pub run: Run,
    pub flavour: Vec<Flavour>,
    pub config: ConfigTemplate,
    /// Folders and files, beyond `[config].file`, made in the case's folder before every turn.
    #[serde(default)]
    pub prepare: Prepare,
    pub output: Output,
    /// How to run the runtime for a real user behind a chat channel (`e2e --via channel`).
    #[serde(default)]
    pub channel: Option<Channel>,
    /// How to configure a model fallback (`e2e --scenario fallback`).
    #[serde(default)]
    pub fallback: Option<FallbackConfig>,
    /// Where the runtime's own folders lie in a case, for S5 (the profile says which it has).
    #[serde(default)]
    pub folders: Folders,
    /// The runtime's own "send media to the user" tool, which the model's send-style calls
    /// name (`hostile.rs`); without it they call a tool the runtime does not offer.
    #[serde(default)]
    pub send_tool: Option<SendTool>,
    /// How to run a screenshot-vision turn (`e2e --scenario vision`).
    #[serde(default)]
    pub vision: Option<VisionConfig>,
    /// The adapter file's folder (set on load).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The adapter file (set on load): an e2e report names it, so its shards can be merged.
    #[serde(skip)]
    pub file: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallStep {
    pub dir: String,
    pub package: String,
    #[serde(default)]
    pub npm_args: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    #[serde(default)]
    pub path: Vec<String>,
    pub version_command: Vec<String>,
    pub command: Vec<String>,
    #[serde(default)]
    pub media_roots: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flavour {
    /// The runtime's own name for the API.
    pub api: String,
    /// The mock-providers API (`anthropic`, `openai-chat`, ...) judging the requests.
    pub mock: String,
    pub base_url: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigTemplate {
    pub file: String,
    pub template: String,
}

/// What a runtime needs in the case's folder before it starts, beyond `[config].file`: a data
/// folder laid out as its `init` command would, a marker file, a second config file. Paths are
/// relative to the case's folder and stay inside it; files are written atomically, their parent
/// folders made.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prepare {
    /// Folders to make.
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default)]
    pub files: Vec<PreparedFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedFile {
    pub path: String,
    /// Placeholders as in `[config].template` (JSON literals), and in `[channel.prepare]` also
    /// those of `[channel].config`; empty (the default) for a marker file.
    #[serde(default)]
    pub template: String,
}

impl Prepare {
    fn paths(&self) -> impl Iterator<Item = &str> {
        self.dirs
            .iter()
            .map(String::as_str)
            .chain(self.files.iter().map(|f| f.path.as_str()))
    }
}

/// The fallback scenario: the primary model on one flavour, its fallback on another flavour
/// (cross-provider) or as a second model of the primary's (same provider). Every config
/// template also gets, as JSON literals, `${model}` (the primary's model id), `${fallback}`
/// (`null`, or `{"api", "baseUrl", "model"}`), `${fallback_api}`, `${fallback_base_url}`,
/// `${fallback_model}` (`null` outside a fallback case), `${user_image}` (`null`, or
/// `{"mediaType", "data"}`: the image the user's message carries) and `${image_path}` (`null`,
/// or the local image file the prompt may name).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackConfig {
    /// Index of the primary's `[[flavour]]`.
    pub primary: usize,
    /// Index of the cross-provider fallback's `[[flavour]]` (another mock API).
    pub cross: usize,
    /// Replaces `[config].template` in fallback cases (a runtime whose fallback needs more
    /// than a field, such as a second provider entry).
    #[serde(default)]
    pub template: Option<String>,
    /// Replaces `template` for the same-provider variant (the second model under the
    /// primary's own provider entry).
    #[serde(default)]
    pub same_template: Option<String>,
    /// Seconds for one fallback turn (default: `turn_timeout`): a runtime's own same-model
    /// retries with back-off come before its fallback.
    #[serde(default)]
    pub turn_timeout: Option<u64>,
    /// Replaces the adapter's `prompt` in cases with a local image; `${image_path}` expands to
    /// the file (raw), for a runtime that loads image paths its prompt names.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// A runtime's send-media tool: its name as the model calls it, and its arguments as JSON
/// templates naming a local file (`${path}`) or a URL (`${url}`), each a JSON string.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendTool {
    pub name: String,
    pub path: String,
    pub url: String,
}

/// The screenshot-vision scenario (`e2e/vision.rs`): its own command, environment (placeholders
/// as in `run`) and config template, which gets `${vision_entry}` and `${vision_model}`, the
/// expanded `model_entry` and `image_model` fragments (empty in a case without a vision model;
/// `${vision_model_id}` inside them is the model id as a JSON string); the agent model's
/// calls, `arguments` a JSON template where `${page_url}` is the mock page's URL (a JSON string).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionConfig {
    /// Replaces the adapter's `prompt`.
    pub prompt: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub template: String,
    pub model_entry: String,
    pub image_model: String,
    pub calls: Vec<VisionCall>,
    #[serde(default)]
    pub turn_timeout: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionCall {
    pub name: String,
    pub arguments: String,
}

/// The model id of the same-provider fallback (the primary's is `${model}`).
pub const FALLBACK_MODEL: &str = "mock-model-b";
/// The model id every adapter's primary uses.
pub const PRIMARY_MODEL: &str = "mock-model";

/// The channel mode: the runtime's long-running channel process (a gateway) with a mock chat
/// channel configured; the case's prompt arrives as the user's message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Channel {
    /// The mock channel: `telegram` (the Bot API served by mock-providers).
    pub kind: String,
    /// Replaces `run.command`; it runs until the turn is over and is then stopped.
    pub command: Vec<String>,
    /// Replaces `${channel}` in `[config].template` (empty by default); its own placeholders
    /// expand to JSON literals: `${api_root}` (the mock Bot API's root), `${bot_api_url}` and
    /// `${bot_file_url}` (the Bot API's method and file URLs up to the token:
    /// `<root>/bot`, `<root>/file/bot`), `${bot_token}`, `${user_id}` (a string),
    /// `${user_number}` (the same id as a number, which also fits inside a string: a session id
    /// such as `"telegram:FriendMessage:${user_number}"`), `${gateway_port}`.
    #[serde(default)]
    pub config: String,
    /// Made before the turn in this mode, after the adapter's own `[prepare]`.
    #[serde(default)]
    pub prepare: Prepare,
    /// Variables of `run.env` left out in this mode (a switch that turns channels off).
    #[serde(default)]
    pub env_remove: Vec<String>,
    /// Variables added to `run.env` in this mode (placeholders as in `run.env`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The turn is over once a message reached the channel after the model's last answer and
    /// nothing more arrived for this long (a duplicate send comes within it).
    #[serde(default = "default_quiet_ms")]
    pub quiet_ms: u64,
}

/// The case paths of the profile's folder names (`${state}`, `${workspace}`, `${tmp}`,
/// `${home}`, `${cache}`): a profile entry is one of them, optionally followed by a subpath.
/// `workspace` (the turn's working folder), `home` and `cache` (the install) are fixed; `state`
/// is where the adapter points the runtime's state, `tmp` its own part of the temp folder.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Folders {
    /// The runtime's state folder (placeholders `${case}`, `${cache}`).
    pub state: String,
    /// Its temp folder: the case's `tmp` (its `TMPDIR`, bound over `/tmp`), or the subfolder
    /// the runtime keeps to, so that a write elsewhere in `/tmp` is outside.
    pub tmp: String,
}

impl Default for Folders {
    /// Most runtimes keep their state under the user's home unless told otherwise.
    fn default() -> Folders {
        Folders {
            state: "${case}/home".into(),
            tmp: "${case}/tmp".into(),
        }
    }
}

fn default_quiet_ms() -> u64 {
    4000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    pub items: String,
    pub text: String,
    pub media: Vec<String>,
    /// The runtime acts on reply directives (a `MEDIA:` line becomes a delivery), so S1, S3 and
    /// D3 judge what it delivered. False for an SDK that hands the reply text back to the app:
    /// a directive line there is inert text, and the output is only read for B1.
    #[serde(default = "directives_default")]
    pub directives: bool,
}

fn directives_default() -> bool {
    true
}

impl Adapter {
    pub fn load(path: &Path) -> Result<Adapter> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read adapter {}", path.display()))?;
        let mut adapter: Adapter =
            toml::from_str(&text).with_context(|| format!("invalid adapter {}", path.display()))?;
        adapter.file = path.to_path_buf();
        adapter.dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        if adapter.run.command.is_empty() || adapter.run.version_command.is_empty() {
            bail!(
                "adapter {}: `run.command` and `run.version_command` must not be empty",
                path.display()
            );
        }
        if adapter.unit_install && !adapter.install.is_empty() {
            bail!(
                "adapter {}: `unit_install` and [[install]] steps exclude each other",
                path.display()
            );
        }
        if adapter.flavour.is_empty() {
            bail!(
                "adapter {}: at least one [[flavour]] is needed",
                path.display()
            );
        }
        if adapter
            .channel
            .as_ref()
            .is_some_and(|c| c.kind != "telegram" || c.command.is_empty())
        {
            bail!(
                "adapter {}: [channel] needs kind = \"telegram\" (the one mock channel) and a command",
                path.display()
            );
        }
        let prepares =
            std::iter::once(&adapter.prepare).chain(adapter.channel.as_ref().map(|c| &c.prepare));
        for rel in prepares.flat_map(Prepare::paths) {
            if !inside(rel) {
                bail!(
                    "adapter {}: [prepare] path {rel:?} must be relative to the case's folder and \
                     stay inside it",
                    path.display()
                );
            }
        }
        if let Some(fb) = &adapter.fallback {
            let mock = |i: usize| adapter.flavour.get(i).map(|f| f.mock.as_str());
            match (mock(fb.primary), mock(fb.cross)) {
                (Some(a), Some(b)) if a != b => {}
                _ => bail!(
                    "adapter {}: [fallback] `primary` and `cross` must be indexes of two [[flavour]]s \
                     of different mock APIs",
                    path.display()
                ),
            }
        }
        for flavour in &adapter.flavour {
            if mock_providers::Provider::from_name(&flavour.mock).is_none() {
                bail!(
                    "adapter {}: flavour {:?} names unknown mock API {:?}",
                    path.display(),
                    flavour.api,
                    flavour.mock
                );
            }
        }
        Ok(adapter)
    }

    /// Seconds one turn of `case` may take.
    pub fn turn_timeout_for(&self, case: &super::case::E2eCase) -> u64 {
        match (&case.fallback, &self.fallback, &case.vision, &self.vision) {
            (Some(_), Some(f), _, _) => f.turn_timeout.unwrap_or(self.turn_timeout),
            (_, _, Some(_), Some(v)) => v.turn_timeout.unwrap_or(self.turn_timeout),
            _ => self.turn_timeout,
        }
    }

    /// The folders `profile` names as the runtime's own, in the case folder `case` (S5).
    pub fn own_folders(
        &self,
        profile: &[String],
        case: &Path,
        cache: &Path,
    ) -> Result<Vec<PathBuf>> {
        let case_var = BTreeMap::from([
            ("case", case.display().to_string()),
            ("cache", cache.display().to_string()),
        ]);
        let mut vars = case_var.clone();
        vars.insert("state", expand(&self.folders.state, &case_var)?);
        vars.insert("tmp", expand(&self.folders.tmp, &case_var)?);
        for sub in ["workspace", "home"] {
            vars.insert(sub, case.join(sub).display().to_string());
        }
        profile
            .iter()
            .map(|f| {
                expand(f, &vars)
                    .map(PathBuf::from)
                    .with_context(|| format!("profile folder {f:?}"))
            })
            .collect()
    }

    pub fn baseline_path(&self) -> Option<PathBuf> {
        self.baseline.as_ref().map(|b| self.dir.join(b))
    }

    /// The name `cargo xtask e2e --runtime` takes: the runtime's for `<name>/e2e.toml`, the
    /// file's stem for an adapter file of another name (one a user keeps elsewhere).
    pub fn runtime_name(&self) -> String {
        match self.file.file_stem() {
            Some(stem) if stem != "e2e" => stem.to_string_lossy().into_owned(),
            _ => self.name.clone(),
        }
    }

    /// `name@version`, the cache folder's and the report's label.
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// A non-empty relative path with no `..`, `.` or root: one that stays below the folder it is
/// joined to.
fn inside(rel: &str) -> bool {
    let path = Path::new(rel);
    !rel.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Replaces every `${name}` in `template` with `vars[name]` (raw); unknown names are an error so
/// a typo in an adapter fails loudly instead of reaching the runtime.
pub fn expand(template: &str, vars: &BTreeMap<&str, String>) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .with_context(|| format!("unclosed `${{` in {template:?}"))?;
        let name = &after[..end];
        let value = vars
            .get(name)
            .with_context(|| format!("unknown placeholder `${{{name}}}`"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`expand`] over each of `templates` (an argv, a list of roots).
pub fn expand_all(templates: &[String], vars: &BTreeMap<&str, String>) -> Result<Vec<String>> {
    templates.iter().map(|t| expand(t, vars)).collect()
}

/// Values reached by a JSON pointer whose `*` segments walk every element of an array.
pub fn select<'v>(value: &'v Value, pointer: &str) -> Vec<&'v Value> {
    let mut current = vec![value];
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        current = current
            .into_iter()
            .flat_map(|v| -> Vec<&Value> {
                match (v, segment.as_str()) {
                    (Value::Array(items), "*") => items.iter().collect(),
                    (Value::Array(items), index) => index
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| items.get(i))
                        .into_iter()
                        .collect(),
                    (Value::Object(map), key) => map.get(key).into_iter().collect(),
                    _ => Vec::new(),
                }
            })
            .collect();
    }
    current.retain(|v| !v.is_null());
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expands_known_placeholders_and_refuses_unknown_ones() {
        let vars = BTreeMap::from([("case", "/w/c1".to_string())]);
        assert_eq!(expand("${case}/home", &vars).unwrap(), "/w/c1/home");
        assert!(expand("${cas}/home", &vars).is_err());
        assert!(expand("${case", &vars).is_err());
    }

    #[test]
    fn prepared_paths_stay_in_the_case() {
        for ok in ["data", "workspace/data/cmd_config.json", ".astrbot"] {
            assert!(inside(ok), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../x", "data/../../x", "./x"] {
            assert!(!inside(bad), "{bad}");
        }
    }

    #[test]
    fn an_adapter_with_a_prepared_path_outside_the_case_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("runtimes/astrbot/e2e.toml"),
        )
        .unwrap();
        let path = dir.path().join("e2e.toml");
        std::fs::write(&path, &text).unwrap();
        assert!(
            Adapter::load(&path)
                .unwrap()
                .channel
                .unwrap()
                .prepare
                .files
                .len()
                > 1
        );
        text.push_str("\n[prepare]\ndirs = [\"../outside\"]\n");
        std::fs::write(&path, &text).unwrap();
        let err = Adapter::load(&path).unwrap_err();
        assert!(format!("{err:#}").contains("\"../outside\""), "{err:#}");
    }

    #[test]
    fn pointers_walk_arrays() {
        let v = json!({"payloads": [{"mediaUrls": ["a", "b"]}, {"mediaUrl": "c"}, {"text": null}]});
        let items = select(&v, "/payloads/*");
        assert_eq!(items.len(), 3);
        assert_eq!(select(items[0], "/mediaUrls/*"), [&json!("a"), &json!("b")]);
        assert_eq!(select(items[1], "/mediaUrl"), [&json!("c")]);
        assert!(select(items[2], "/text").is_empty());
    }

    #[test]
    fn the_checked_in_adapters_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtimes");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            // An SDK's adapter sits in its folder, next to its unit-level runtime.toml.
            let path = if path.is_dir() {
                path.join("e2e.toml")
            } else {
                path
            };
            let name = path.display().to_string();
            if path.is_file() && name.ends_with(".toml") && !name.ends_with(".baseline.toml") {
                let adapter = Adapter::load(&path).unwrap();
                assert!(
                    adapter.baseline_path().is_none_or(|b| b.is_file()),
                    "{name}"
                );
                seen += 1;
            }
        }
        assert!(seen >= 1);
    }
}
