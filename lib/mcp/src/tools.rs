//! The tool catalogue `tools/list` returns: name, description, JSON schema
//! of the arguments, and hints (read-only, destructive, open-world).

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;

use crate::args::*;

/// Declares [`ToolName`]: each tool's variant and the name clients call it by.
macro_rules! tool_names {
    ($($variant:ident => $name:literal,)*) => {
        /// Every tool the server has: the one list the catalogue
        /// ([`catalogue`]: each entry made from its variant, the order
        /// checked by a test) and the server's dispatch (an exhaustive
        /// match, so a tool without a handler does not compile) are made
        /// from.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ToolName {
            $(
                #[doc = $name]
                $variant,
            )*
        }

        impl ToolName {
            /// Every tool, in catalogue order.
            pub const ALL: &'static [ToolName] = &[$(ToolName::$variant,)*];

            /// The name clients call the tool by.
            pub fn name(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $name,)*
                }
            }

            /// The tool called `name`, if there is one.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|t| t.name() == name)
            }
        }
    };
}

tool_names! {
    BrowserNavigate => "browser_navigate",
    BrowserNavigateBack => "browser_navigate_back",
    BrowserSnapshot => "browser_snapshot",
    BrowserClick => "browser_click",
    BrowserDrag => "browser_drag",
    BrowserType => "browser_type",
    BrowserFillForm => "browser_fill_form",
    BrowserSelectOption => "browser_select_option",
    BrowserHover => "browser_hover",
    BrowserPressKey => "browser_press_key",
    BrowserWaitFor => "browser_wait_for",
    BrowserEvaluate => "browser_evaluate",
    BrowserTakeScreenshot => "browser_take_screenshot",
    BrowserConsoleMessages => "browser_console_messages",
    BrowserNetworkRequests => "browser_network_requests",
    BrowserNetworkRequest => "browser_network_request",
    BrowserFind => "browser_find",
    BrowserHandleDialog => "browser_handle_dialog",
    BrowserFileUpload => "browser_file_upload",
    BrowserTabs => "browser_tabs",
    BrowserResize => "browser_resize",
    BrowserClose => "browser_close",
    PlaywrightNavigate => "playwright_navigate",
    PlaywrightScreenshot => "playwright_screenshot",
    PlaywrightClick => "playwright_click",
    PlaywrightFill => "playwright_fill",
    PlaywrightSelect => "playwright_select",
    PlaywrightHover => "playwright_hover",
    PlaywrightEvaluate => "playwright_evaluate",
    PlaywrightGetContent => "playwright_get_content",
    PlaywrightGetConsoleLogs => "playwright_get_console_logs",
    FetchMarkdown => "fetch_markdown",
    LoadSitemap => "load_sitemap",
    Crawl => "crawl",
    RunWorkflow => "run_workflow",
}

fn tool<T: JsonSchema>(name: ToolName, description: &'static str, read_only: bool) -> Tool {
    // Clients want `type: object` with properties, in the portable form.
    let object = oxwright_jobs::schema::schema_of::<T>();
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(read_only);
    annotations.destructive_hint = Some(false);
    annotations.open_world_hint = Some(true);
    Tool::new(name.name(), description, Arc::new(object)).with_annotations(annotations)
}

/// Every tool, Playwright MCP's names first, then the seed's aliases, then ours.
pub fn catalogue() -> Vec<Tool> {
    let mut tools = playwright_tools();
    tools.extend(playwright_reading_tools());
    tools.extend(seed_aliases());
    tools.extend(own_tools());
    tools
}

/// Playwright MCP's tools that navigate and act, by its names.
fn playwright_tools() -> Vec<Tool> {
    vec![
        tool::<NavigateArgs>(
            ToolName::BrowserNavigate,
            "Navigate to a URL (the URL policy applies to it and to every request the page makes).",
            false,
        ),
        tool::<BackArgs>(
            ToolName::BrowserNavigateBack,
            "Go back to the previous page.",
            false,
        ),
        tool::<SnapshotArgs>(
            ToolName::BrowserSnapshot,
            "Accessibility snapshot of the page: roles, names and refs (e12) to target. Capped in size (text goes before controls); diff: true returns only what changed since the last snapshot; scope: a ref returns only that region; find: a text returns only the matching lines with what they sit under.",
            true,
        ),
        tool::<ClickArgs>(
            ToolName::BrowserClick,
            "Click an element (target: a snapshot ref or a unique selector).",
            false,
        ),
        tool::<DragArgs>(
            ToolName::BrowserDrag,
            "Drag one element onto another (HTML drag and drop, or a pointer-driven drag such as a \
             sortable list or a slider).",
            false,
        ),
        tool::<TypeArgs>(
            ToolName::BrowserType,
            "Type text into an editable element (replaces its content; slowly: key by key). {{NAME}} stands for a secret.",
            false,
        ),
        tool::<FillFormArgs>(
            ToolName::BrowserFillForm,
            "Fill several form fields in order.",
            false,
        ),
        tool::<SelectArgs>(
            ToolName::BrowserSelectOption,
            "Select options in a dropdown (replaces the selection).",
            false,
        ),
        tool::<HoverArgs>(ToolName::BrowserHover, "Hover over an element.", false),
        tool::<PressKeyArgs>(
            ToolName::BrowserPressKey,
            "Press a key on the focused element (or the page).",
            false,
        ),
    ]
}

/// Playwright MCP's tools that wait, read and manage the browser.
fn playwright_reading_tools() -> Vec<Tool> {
    vec![
        tool::<WaitForArgs>(
            ToolName::BrowserWaitFor,
            "Wait for text to appear or disappear, or for a number of seconds.",
            true,
        ),
        tool::<EvaluateArgs>(
            ToolName::BrowserEvaluate,
            "Evaluate a JavaScript function on the page (or on the element a CSS selector target names) and return its JSON result.",
            false,
        ),
        tool::<ScreenshotArgs>(
            ToolName::BrowserTakeScreenshot,
            "Take a PNG screenshot of the viewport, the full page or one element; saved under the server's screenshot directory and returned as an image.",
            true,
        ),
        tool::<ConsoleArgs>(
            ToolName::BrowserConsoleMessages,
            "The page's console messages and uncaught errors.",
            true,
        ),
        tool::<NetworkArgs>(
            ToolName::BrowserNetworkRequests,
            "Requests the page made since it loaded, and those the URL policy refused.",
            true,
        ),
        tool::<RequestArgs>(
            ToolName::BrowserNetworkRequest,
            "One request of browser_network_requests' numbered list in full: headers and body sent, \
             status, headers and body received (or one `part`). Cookies and tokens come back masked.",
            true,
        ),
        tool::<FindArgs>(
            ToolName::BrowserFind,
            "Search the page's accessibility snapshot for text or a regular expression: the matching \
             lines, each under the lines it sits in, with refs to act on. Cheaper than a whole snapshot \
             when you know what you look for.",
            true,
        ),
        tool::<DialogArgs>(
            ToolName::BrowserHandleDialog,
            "Set how the page's alert/confirm/prompt dialogs are answered (they never block: each is answered as it opens).",
            false,
        ),
        tool::<UploadArgs>(
            ToolName::BrowserFileUpload,
            "Set the files of a file input (files only from the server's upload directory).",
            false,
        ),
        tool::<TabsArgs>(
            ToolName::BrowserTabs,
            "List, open, select or close this session's tabs.",
            false,
        ),
        tool::<ResizeArgs>(ToolName::BrowserResize, "Resize the viewport.", false),
        tool::<NoArgs>(
            ToolName::BrowserClose,
            "Close this session's tabs (the next tool opens a fresh page).",
            false,
        ),
    ]
}

/// The seed's (executeautomation) names, for prompts written for that server.
fn seed_aliases() -> Vec<Tool> {
    vec![
        tool::<NavigateArgs>(ToolName::PlaywrightNavigate, "Alias of browser_navigate.", false),
        tool::<ScreenshotArgs>(
            ToolName::PlaywrightScreenshot,
            "Alias of browser_take_screenshot (name, width, height).",
            true,
        ),
        tool::<SelectorArgs>(
            ToolName::PlaywrightClick,
            "Click the element a CSS selector names.",
            false,
        ),
        tool::<SelectorValueArgs>(
            ToolName::PlaywrightFill,
            "Fill the input a CSS selector names.",
            false,
        ),
        tool::<SelectorValueArgs>(
            ToolName::PlaywrightSelect,
            "Select an option of the dropdown a CSS selector names.",
            false,
        ),
        tool::<SelectorArgs>(
            ToolName::PlaywrightHover,
            "Hover over the element a CSS selector names.",
            false,
        ),
        tool::<EvaluateArgs>(
            ToolName::PlaywrightEvaluate,
            "Alias of browser_evaluate (script).",
            false,
        ),
        tool::<NoArgs>(ToolName::PlaywrightGetContent, "The page's rendered HTML.", true),
        tool::<ConsoleArgs>(
            ToolName::PlaywrightGetConsoleLogs,
            "Alias of browser_console_messages.",
            true,
        ),
    ]
}

/// oxwright's own: fetch, sitemaps, crawls, workflows.
fn own_tools() -> Vec<Tool> {
    vec![
        tool::<FetchArgs>(
            ToolName::FetchMarkdown,
            "Fetch a page in a fresh isolated page and return it as LLM-ready Markdown (main content or full page), with title, status and token counts.",
            true,
        ),
        tool::<SitemapArgs>(
            ToolName::LoadSitemap,
            "Discover and load a site's sitemaps; returns the URLs.",
            true,
        ),
        tool::<crate::CrawlArgs>(
            ToolName::Crawl,
            "Crawl a site from a URL: follow its links (on its host, within maxDepth and limit, obeying robots.txt, \
             at a polite pace) and return every page taken as Markdown, with the URLs not taken counted by reason. \
             Takes every fetch_markdown option for the pages.",
            true,
        ),
        tool::<WorkflowArgs>(
            ToolName::RunWorkflow,
            "Run a workflow (plain-language instructions or structured steps) in this session's current tab; returns the run's result and its artefact keys.",
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_lists_every_tool_name_once_in_order() {
        let listed: Vec<String> = catalogue().iter().map(|t| t.name.to_string()).collect();
        let declared: Vec<String> = ToolName::ALL.iter().map(|t| t.name().to_string()).collect();
        assert_eq!(listed, declared);
        for t in ToolName::ALL {
            assert_eq!(ToolName::from_name(t.name()), Some(*t));
        }
        assert_eq!(ToolName::from_name("browser_nope"), None);
    }

    #[test]
    fn every_tool_has_an_object_schema() {
        let tools = catalogue();
        assert_eq!(tools.len(), 35);
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 35, "duplicate tool names");
        for t in &tools {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(t.input_schema.get("properties").is_some(), "{}", t.name);
        }
        let click = tools.iter().find(|t| t.name == "browser_click").unwrap();
        let props = click.input_schema["properties"].as_object().unwrap();
        assert!(
            props.contains_key("target") && props.contains_key("element"),
            "{props:?}"
        );
        let nav = tools.iter().find(|t| t.name == "browser_navigate").unwrap();
        assert_eq!(nav.input_schema["required"], serde_json::json!(["url"]));
    }

    /// What model providers refuse in a tool schema (Gemini: type lists;
    /// strict validators: unknown formats; OpenAI: arrays without items).
    fn faults(schema: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        use serde_json::Value;
        match schema {
            Value::Object(map) => {
                if map.get("type").is_some_and(Value::is_array) {
                    out.push(format!("{path}: type list"));
                }
                if map.get("default") == Some(&Value::Null) {
                    out.push(format!("{path}: default null"));
                }
                if let Some(f) = map.get("format").and_then(Value::as_str)
                    && !matches!(f, "uri" | "date-time" | "email" | "int32" | "int64")
                {
                    out.push(format!("{path}: format {f}"));
                }
                if map.get("type") == Some(&Value::from("array")) && !map.contains_key("items") {
                    out.push(format!("{path}: array without items"));
                }
                for key in ["$ref", "$defs", "definitions", "oneOf", "allOf"] {
                    if map.contains_key(key) {
                        out.push(format!("{path}: {key}"));
                    }
                }
                for (k, v) in map {
                    faults(v, &format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    faults(v, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_schema_is_one_any_provider_takes() {
        let mut found = Vec::new();
        for t in catalogue() {
            faults(
                &serde_json::Value::Object((*t.input_schema).clone()),
                &t.name,
                &mut found,
            );
        }
        assert!(found.is_empty(), "{found:#?}");
        // The rewrite keeps what a field is and says.
        let tools = catalogue();
        let shot = tools
            .iter()
            .find(|t| t.name == "browser_take_screenshot")
            .unwrap();
        let width = &shot.input_schema["properties"]["width"];
        assert_eq!(width["type"], "integer", "{width}");
        assert_eq!(width["minimum"], 0, "{width}");
        let click = tools.iter().find(|t| t.name == "browser_click").unwrap();
        let target = &click.input_schema["properties"]["target"];
        assert_eq!(target["type"], "string", "{target}");
        assert!(
            target["description"].as_str().is_some_and(|d| d.contains("ref")),
            "{target}"
        );
    }
}
