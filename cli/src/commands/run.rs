//! `oxwright run WORKFLOW_FILE --url START`: runs a workflow embedded, in one
//! pooled page. Plain-language files need an LLM endpoint; structured files
//! run with none. Console lines pass through the run's sanitiser; the
//! session's artefacts land under `<out>/sessions/<id>/`.

use oxwright_telemetry::printable;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use oxwright_engine::{BrowserEngine, EngineErrorKind, OpenOptions};
use oxwright_jobs::{JobId, RunStatus};
use oxwright_secrets::{EnvSecrets, FileSecrets, Sanitizer, SecretStore};
use oxwright_workflow::{
    CHECKPOINT, Checkpoint, CheckpointKey, Checkpoints, ConsoleSink, RunDeps, Workflow, WorkflowError,
    WorkflowOptions, run_workflow,
};

use crate::exit::{self, usage};

pub(crate) mod login_state;

use oxwright_config::Setup;
use oxwright_worker::BrowserSetup;

/// The structured grammar, for `run --help`.
const STEP_GRAMMAR: &str = "\
Structured steps (one per line; a file with no `verb:` line is plain language for the LLM):
  goto: /app/search                      click: button \"Sign in\"
  dblclick: text \"Untitled\"              hover: button \"Account\"
  fill: textbox \"Username\" = {{LOGIN_ID}}  select: combobox \"Country\" = Japan
  check: checkbox \"Remember me\"          uncheck: checkbox \"Remember me\"
  press: Enter                           press: textbox \"Search\" = Control+a
  scroll: bottom                         scroll: button \"Load more\"
  dialog: accept                         dialog: dismiss
  wait: button \"Next\"                    wait: 500ms
  expect: text \"Ships to Japan\"          expect: hidden dialog \"Added\"
  expect: text status = \"Hello\"          expect: value textbox \"Username\" = alice
  expect: checked checkbox \"News\"        expect: count listitem = 3
  expect: url includes /app/search
  extract: text heading \"Order\" as title  extract: table \"Orders\" as orders
  extract: text each listitem as items   extract: value textbox \"Company\" as company
  expect: output title includes \"Order\"  expect: output orders count >= 1
  expect: output orders[0].Total = 9.99  expect: output orders[-1][\"Order date\"] includes 2026
`extract:` reads into result.json's outputs (`extract: product.json as product` reads the page through
the LLM into the JSON Schema in product.json, beside the workflow); `expect: output` checks what was
read (`=` a text or number, `includes`, `<`, `<=`, `>`, `>=`, `!=`, `count`).
`scroll:` also takes top, up and down; `dialog: accept \"text\"` answers a prompt.
Targets: ROLE \"name\", text|testid|label|placeholder|css|xpath \"…\"; then `exact` (the whole name)
and `nth N` to pick one of several matches: 0 is the first, 1 the second, -1 the last, -2 the one
before it. `each TARGET` acts on every match in turn (any step with a target but expect:) and
takes no nth. After the target of click, dblclick, hover, check, uncheck, scroll
and wait, `if present` skips the step when nothing matches, and `if present then stop` ends the
workflow, completed, once the step acted. `STEP else STEP` runs the second step when the first
fails (one `else` a line); the step is done when either succeeds, and result.json says why the
`else` step ran. `once: STEP` marks a step that must never act twice when a run is continued with
--resume or on another worker.
  click: button \"Delete\" nth -1           check: each checkbox \"Done\"
  click: button \"Accept cookies\" if present
  click: tab \"Shipping\" if present then stop
  fill: textbox \"Coupon\" = SAVE10 else click: button \"Cancel\"
  once: click: button \"Place order\"

Examples:
  oxwright --allow-host 127.0.0.1:8765 run login.steps --url http://127.0.0.1:8765/app/login --secrets secrets.env
  oxwright run checkout.txt --url https://shop.example/ --llm-base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b";

/// Arguments of `oxwright run`.
#[derive(Debug, Args)]
#[command(after_help = STEP_GRAMMAR)]
pub struct RunCmd {
    /// The workflow file: plain-language instructions, or structured steps.
    pub workflow: PathBuf,
    /// The page the run starts on.
    #[arg(long)]
    pub url: url::Url,
    /// The workflow's id in the action cache (`workflows/<id>/`, where a
    /// plain-language run records each verified step's action for
    /// `oxwright replay`); default: the file's name.
    #[arg(long)]
    pub workflow_id: Option<String>,
    #[command(flatten)]
    pub common: RunArgs,
}

/// What `run` and `replay` share.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub llm: crate::options::LlmArgs,
    /// File of NAME=value secrets for {{NAME}} placeholders (default:
    /// OXWRIGHT_SECRET_<NAME> environment variables).
    #[arg(long)]
    pub secrets: Option<PathBuf>,
    /// Session id (default: a new id).
    #[arg(long, conflicts_with = "resume")]
    pub session: Option<String>,
    /// Continue session SESSION from its checkpoint (a run stopped by a
    /// crash, a kill or Ctrl-C leaves one under `sessions/SESSION/`): the
    /// page is reopened with its cookies and storage, and the run goes on
    /// at the step after the last one completed. Give the same workflow.
    #[arg(long, value_name = "SESSION")]
    pub resume: Option<String>,
    /// Start with a saved login: cookies and each origin's localStorage
    /// from a Playwright `storageState` JSON file (one saved by
    /// Playwright's `context.storageState({ path })` or by
    /// --save-storage-state), set before the first page opens.
    #[arg(long, value_name = "FILE", conflicts_with = "resume")]
    pub storage_state: Option<PathBuf>,
    /// When the run completes, save the browser's cookies and the last
    /// page's localStorage to FILE (Playwright's `storageState` shape,
    /// mode 0600: it holds credentials). A run that fails saves nothing.
    #[arg(long, value_name = "FILE")]
    pub save_storage_state: Option<PathBuf>,
    /// Deadline of one action (auto-wait, input, settle), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(
        oxwright_jobs::limits::MIN_ACTION_TIMEOUT_MS..=oxwright_jobs::limits::MAX_ACTION_TIMEOUT_MS))]
    pub action_timeout_ms: u64,
    /// Print the WorkflowResult JSON at the end.
    #[arg(long)]
    pub json: bool,
    /// Site profiles (`sites.yaml`: url, name, characteristics,
    /// common_selectors, login_hints) added to the decision prompt on the
    /// pages they apply to.
    #[arg(long, value_name = "FILE")]
    pub sites: Option<PathBuf>,
    /// Add the site's sitemap URLs (robots.txt, then /sitemap.xml; at most
    /// 300 URLs or 10,000 characters, fewer when the step's token budget
    /// needs the room) to the decision prompt.
    #[arg(long)]
    pub sitemap_hints: bool,
    /// Run a visible browser (needs a display).
    #[arg(long)]
    pub headed: bool,
    /// The browser engine: the owned Chromium pool, or an external
    /// Playwright MCP server (`@playwright/mcp` from `infra/node`, driving
    /// the same Chromium executable).
    #[arg(long, value_enum, default_value_t = BrowserKind::Chromium)]
    pub browser: BrowserKind,
}

/// Which engine runs the workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BrowserKind {
    /// Chromium driven over DevTools (`lib/browser`).
    Chromium,
    /// `@playwright/mcp` over MCP (`lib/playwright_mcp`).
    PlaywrightMcp,
}

/// Runs the command; returns the process exit code.
pub async fn run(setup: Setup, cmd: RunCmd) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&cmd.workflow)
        .with_context(|| format!("reading workflow {}", cmd.workflow.display()))
        .map_err(usage)?;
    let workflow = Workflow::parse(&text)
        .with_context(|| format!("workflow {}", cmd.workflow.display()))
        .map_err(usage)?;
    let name = cmd.workflow.file_stem().map(|s| s.to_string_lossy().into_owned());
    let id = cmd
        .workflow_id
        .clone()
        .unwrap_or_else(|| oxwright_workflow::workflow_id(name.as_deref(), cmd.url.as_str(), &text));
    let dir = cmd.workflow.parent().unwrap_or(std::path::Path::new("."));
    let schemas = workflow.read_schemas(dir).map_err(usage)?;
    let plan = Plan {
        workflow,
        start_url: cmd.url.clone(),
        name,
        workflow_id: id,
        replay: None,
        schemas,
    };
    execute(setup, &cmd.common, plan).await
}

/// What one embedded run does.
pub(crate) struct Plan {
    pub(crate) workflow: Workflow,
    pub(crate) start_url: url::Url,
    pub(crate) name: Option<String>,
    pub(crate) workflow_id: String,
    pub(crate) replay: Option<oxwright_workflow::ReplayOptions>,
    /// The JSON Schemas its `extract: FILE.json` steps read into.
    pub(crate) schemas: std::collections::BTreeMap<String, oxwright_jobs::JsonSchema>,
}

/// Runs `plan` in one pooled page and prints its outcome; returns the exit code.
pub(crate) async fn execute(setup: Setup, cmd: &RunArgs, plan: Plan) -> anyhow::Result<i32> {
    let workflow = plan.workflow;
    // Read before a browser starts: a bad file is a usage error.
    let sites = site_profiles(cmd)?;
    let state = cmd.storage_state.as_deref().map(login_state::read).transpose()?;
    let secrets = secret_store(&setup, cmd.secrets.as_deref())?;
    // Checked before a browser starts: a missing secret would fail the run
    // only when its step is reached, after the earlier steps ran.
    let missing = oxwright_secrets::missing(&workflow.placeholders(), secrets.as_ref())
        .await
        .map_err(usage)?;
    if !missing.is_empty() {
        return Err(usage(missing_secrets_message(&missing, &secrets.describe())));
    }
    let llm = cmd.llm.model(&setup.env, &setup.config.llm)?;
    if let (Some(file), None) = (plan.schemas.keys().next(), &llm) {
        return Err(usage(format!(
            "extract: {file} reads the page through an LLM: give --llm-base-url and --model (or [llm])"
        )));
    }
    let session = cmd
        .resume
        .clone()
        .or_else(|| cmd.session.clone())
        .unwrap_or_else(|| JobId::new().to_string());
    let key = CheckpointKey::from_env(&setup.env).map_err(usage)?;
    let store = setup.store().await?;
    let mut checkpoints = Checkpoints::new(key, oxwright_workflow::this_worker());
    if let Some(resume) = &cmd.resume {
        checkpoints.resume = Some((saved_checkpoint(store.as_ref(), resume).await?, "by_hand".into()));
    }
    let sanitizer = Sanitizer::new();
    // With --json, stdout carries the result alone; progress goes to stderr.
    let console: ConsoleSink = if cmd.json {
        Arc::new(|line: &str| eprintln!("{}", printable(line)))
    } else {
        Arc::new(|line: &str| println!("{}", printable(line)))
    };
    let mut open = OpenOptions::new(setup.policy.clone());
    open.headless = !cmd.headed;
    let (pool, page) = open_page(&setup, cmd, &open).await?;
    let deps = RunDeps {
        llm,
        secrets,
        store: store.clone(),
        sanitizer: sanitizer.clone(),
    };
    let mut opts = WorkflowOptions::new(session.clone(), plan.start_url.clone());
    opts.hints.sites = sites;
    if cmd.sitemap_hints {
        opts.hints.sitemaps = Some(Arc::new(oxwright_workflow::SitemapHints::new(
            setup.policy.clone(),
        )));
    }
    opts.name = plan.name;
    opts.workflow_id = Some(plan.workflow_id);
    opts.replay = plan.replay;
    opts.action_timeout = Duration::from_millis(cmd.action_timeout_ms);
    opts.console = Some(console);
    opts.checkpoints = Some(checkpoints);
    opts.storage_state = state;
    opts.schemas = plan.schemas;
    let outcome = run_workflow(page.as_ref(), &workflow, deps, opts).await;
    let saved = match (&cmd.save_storage_state, &outcome) {
        (Some(path), Ok(r)) if r.status == RunStatus::Completed => {
            Some(save_state(page.as_ref(), path).await)
        }
        (Some(path), _) => {
            eprintln!(
                "the storage state is not saved to {}: the run did not complete",
                path.display()
            );
            None
        }
        (None, _) => None,
    };
    drop(page);
    if let Some(pool) = pool {
        pool.shutdown().await;
    }
    let result = match outcome {
        Ok(r) => r,
        Err(err) => {
            eprintln!("error: {}", printable(&sanitizer.clean(&err.to_string())));
            return Ok(failed_run_code(&err));
        }
    };
    print_result(cmd, &result, &sanitizer, &store.describe(), &session)?;
    if let Some(saved) = saved {
        saved?;
    }
    Ok(if result.status == RunStatus::Completed {
        exit::OK
    } else {
        exit::JOBS_FAILED
    })
}

/// Saves the page's cookies and storage to `path`; says where, never what.
async fn save_state(page: &dyn oxwright_engine::Page, path: &std::path::Path) -> anyhow::Result<()> {
    let state = page
        .storage_state()
        .await
        .context("reading the browser state to save")?;
    login_state::save(path, &state)?;
    eprintln!(
        "storage state saved to {}: {} cookie(s), the storage of {} origin(s)",
        path.display(),
        state.cookies.len(),
        state.origins.len()
    );
    Ok(())
}

/// The secrets `--secrets FILE` holds, else the `OXWRIGHT_SECRET_*` variables.
pub(crate) fn secret_store(
    setup: &Setup,
    file: Option<&std::path::Path>,
) -> anyhow::Result<Arc<dyn SecretStore>> {
    Ok(match file {
        Some(path) => Arc::new(FileSecrets::load(path).map_err(usage)?),
        None => Arc::new(EnvSecrets::new(setup.env.clone(), EnvSecrets::DEFAULT_PREFIX)),
    })
}

/// `--sites FILE`, read before a browser starts (a bad file is a usage error).
fn site_profiles(cmd: &RunArgs) -> anyhow::Result<Option<Arc<oxwright_workflow::SiteProfiles>>> {
    let Some(path) = &cmd.sites else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(usage)?;
    let sites = oxwright_workflow::SiteProfiles::parse_yaml(&text)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok(Some(Arc::new(sites)))
}

/// The checkpoint `--resume SESSION` continues from.
async fn saved_checkpoint(
    store: &dyn oxwright_artifacts::ArtifactStore,
    resume: &str,
) -> anyhow::Result<Checkpoint> {
    let at = oxwright_jobs::keys::session_artifact(resume, CHECKPOINT);
    let body = match store.get(&at).await {
        Ok(body) => body,
        Err(oxwright_artifacts::ArtifactError::NotFound { .. }) => {
            return Err(usage(format!(
                "--resume {resume}: no checkpoint at {at} in the {} (the run ended, or never completed a step)",
                store.describe()
            )));
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("reading {at}"))),
    };
    // Exit 2 like a checkpoint the run refuses (edited, another workflow's).
    serde_json::from_slice(&body).map_err(|e| {
        usage(format!(
            "--resume {resume}: checkpoint: {at}: not a usable checkpoint (cut short or not one): {e}"
        ))
    })
}

/// A page on the chosen backend (and the pool to shut down after, for Chromium).
async fn open_page(
    setup: &Setup,
    cmd: &RunArgs,
    open: &OpenOptions,
) -> anyhow::Result<(
    Option<oxwright_browser::BrowserPool>,
    Box<dyn oxwright_engine::Page>,
)> {
    let pool = match cmd.browser {
        BrowserKind::Chromium => Some(setup.pool().await?),
        BrowserKind::PlaywrightMcp => None,
    };
    let page = match &pool {
        Some(pool) => pool.open(open).await.context("opening a page")?,
        None => {
            let cfg = oxwright_playwright_mcp::PwMcpConfig {
                executable: oxwright_worker::pool_config(&setup.config.browser, &setup.env).chrome_path,
                ..Default::default()
            };
            oxwright_playwright_mcp::PlaywrightMcpEngine::new(cfg)
                .open(open)
                .await
                .context("opening a page on the playwright mcp server")?
        }
    };
    Ok((pool, page))
}

/// Prints the run's result (`--json`: the result on stdout, cleaned) and
/// where its artefacts are.
fn print_result(
    cmd: &RunArgs,
    result: &oxwright_jobs::WorkflowResult,
    sanitizer: &Sanitizer,
    store: &str,
    session: &str,
) -> anyhow::Result<()> {
    let artefacts = format!("artefacts: {} (sessions/{session}/)", sanitizer.clean(store));
    if cmd.json {
        // Cleaned once more as a whole; the session id is ours, not a
        // secret, though its key looks like a session cookie's.
        let cleaned = sanitizer.clean(&serde_json::to_string(result)?);
        let mut value: serde_json::Value = serde_json::from_str(&cleaned)?;
        value["session_id"] = serde_json::Value::String(result.session_id.clone());
        println!("{}", serde_json::to_string_pretty(&value)?);
        eprintln!("{artefacts}");
    } else {
        println!("{artefacts}");
    }
    if let Some(err) = &result.error {
        eprintln!("error: {}", printable(&sanitizer.clean(&err.to_string())));
    }
    Ok(())
}

/// Says which secrets are missing and the two ways to give them.
pub(crate) fn missing_secrets_message(missing: &[String], store: &str) -> String {
    let names: Vec<String> = missing.iter().map(|n| format!("{{{{{n}}}}}")).collect();
    let vars: Vec<String> = missing
        .iter()
        .map(|n| format!("{}{n}", EnvSecrets::DEFAULT_PREFIX))
        .collect();
    format!(
        "the workflow needs {}, not found in {store}; give NAME=value lines in a file with \
         --secrets FILE, or set {}",
        names.join(", "),
        vars.join(", ")
    )
}

/// Returns the exit code of a run that ended with `err`: 2 when the
/// workflow, its secrets, the LLM settings or the checkpoint to resume
/// from cannot work as given (nothing about the site was learnt), 3 when
/// no browser answered, else 1.
fn failed_run_code(err: &WorkflowError) -> i32 {
    match err {
        WorkflowError::Parse { .. }
        | WorkflowError::Config(_)
        | WorkflowError::MissingSecret(_)
        | WorkflowError::Secrets(_)
        | WorkflowError::Checkpoint(_)
        | WorkflowError::Llm(oxwright_llm::LlmError::Config(_)) => exit::USAGE,
        WorkflowError::Engine(e) if e.kind == EngineErrorKind::Misconfigured => exit::USAGE,
        WorkflowError::Engine(e) if e.kind == EngineErrorKind::Unavailable => exit::UNAVAILABLE,
        _ => exit::JOBS_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::STEP_GRAMMAR;
    use oxwright_steps::{StepAction, StructuredStep};

    /// The example steps of `run --help`: its indented lines before
    /// `Examples:`, two to a line where two columns are.
    fn examples() -> Vec<&'static str> {
        let grammar = STEP_GRAMMAR.split("\nExamples:").next().unwrap_or_default();
        grammar
            .lines()
            .filter(|l| l.starts_with("  "))
            .flat_map(|l| l.split("  ").map(str::trim).filter(|s| !s.is_empty()))
            .collect()
    }

    /// The help shows the grammar the parser reads: every example parses,
    /// and each construct the parser knows has an example.
    #[test]
    fn the_run_help_documents_the_step_grammar_the_parser_reads() {
        let steps: Vec<StructuredStep> = examples()
            .into_iter()
            .map(|e| StructuredStep::parse(1, e).unwrap_or_else(|err| panic!("{e:?} does not parse: {err}")))
            .collect();
        let acts = || {
            steps.iter().filter_map(|s| match &s.action {
                StepAction::Act {
                    nth,
                    each,
                    if_present,
                    then_stop,
                    ..
                } => Some((*nth, *each, *if_present, *then_stop)),
                _ => None,
            })
        };
        assert!(
            acts().any(|(nth, ..)| nth.is_some_and(|n| n < 0)),
            "no `nth -1` example"
        );
        assert!(acts().any(|(_, each, ..)| each), "no `each` example");
        assert!(
            acts().any(|(.., if_present, stop)| if_present && !stop),
            "no `if present` example"
        );
        assert!(acts().any(|(.., stop)| stop), "no `if present then stop` example");
        assert!(
            steps.iter().any(|s| matches!(s.action, StepAction::Else { .. })),
            "no `else` example"
        );
        assert!(steps.iter().any(|s| s.once), "no `once:` example");
        assert!(
            steps.iter().any(|s| matches!(s.action, StepAction::Extract(_))),
            "no `extract:` example"
        );
        assert!(
            steps
                .iter()
                .any(|s| matches!(s.action, StepAction::Expect(oxwright_steps::Assertion::Output(_)))),
            "no `expect: output` example"
        );
        assert!(!STEP_GRAMMAR.contains("(0-based)"), "nth is more than 0-based");
    }
}
