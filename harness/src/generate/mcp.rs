//! Typed MCP content model, per the official schemas vendored in `harness/schemas/mcp/`
//! (2025-03-26 to 2026-07-28). Generators build valid results from these types; the reference
//! coercion never parses into them (it reads arbitrary JSON), so nothing here can reject input.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// MCP protocol revisions whose schemas normfuzz knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum McpVersion {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl McpVersion {
    pub const ALL: [McpVersion; 4] = [
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// `resource_link` blocks, `_meta` on blocks and `annotations.lastModified` arrived in 2025-06-18.
    pub fn has_resource_links(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// `icons` on resource links arrived in 2025-11-25.
    pub fn has_icons(self) -> bool {
        self >= Self::V2025_11_25
    }

    /// 2026-07-28 requires `resultType` on every result.
    pub fn requires_result_type(self) -> bool {
        self >= Self::V2026_07_28
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// 0.0 to 1.0 inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ISO 8601 timestamp (2025-06-18 and later).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    pub src: String,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Fields every content block may carry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Common {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(flatten)]
        common: Common,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(flatten)]
        common: Common,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(flatten)]
        common: Common,
    },
    ResourceLink {
        uri: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        icons: Option<Vec<Icon>>,
        #[serde(flatten)]
        common: Common,
    },
    Resource {
        resource: ResourceContents,
        #[serde(flatten)]
        common: Common,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    Text {
        uri: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        text: String,
    },
    Blob {
        uri: String,
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        blob: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<ContentBlock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Required from 2026-07-28 (`"complete"` for a finished call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
}

impl CallToolResult {
    /// A finished call's result as `version` spells it (`resultType` where it is required).
    pub fn finished(
        version: McpVersion,
        content: Vec<ContentBlock>,
        structured_content: Option<Value>,
        is_error: Option<bool>,
    ) -> Self {
        CallToolResult {
            content,
            structured_content,
            is_error,
            result_type: version
                .requires_result_type()
                .then(|| "complete".to_string()),
        }
    }
}
