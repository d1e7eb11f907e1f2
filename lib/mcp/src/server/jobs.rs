//! oxwright's own tools: a page as Markdown, a site's sitemaps, a workflow run.

use std::sync::Arc;

use oxwright_jobs::{FetchSpec, JobError};
use oxwright_workflow::{RunDeps, Workflow, WorkflowOptions};

use super::OxwrightMcp;
use super::util::*;
use crate::args::*;
use crate::errors::explain;

impl OxwrightMcp {
    pub(super) async fn fetch_markdown(&self, a: FetchArgs) -> Result<Reply, String> {
        let url = parse_url(&a.url)?;
        let mut spec = FetchSpec::new(url);
        a.options
            .apply(&mut spec)
            .map_err(|e| format!("fetch_markdown: {e}"))?;
        spec.headless = self.config().headless;
        let services = &self.shared.services;
        let out = oxwright_fetch::fetch_cached(
            services.engine.as_ref(),
            &services.policy,
            Some(services.store.as_ref()),
            &spec,
        )
        .await
        .map_err(|e: JobError| explain_job(&e))?;
        let mut out = out;
        let model = services
            .llm
            .as_deref()
            .ok_or_else(|| oxwright_extract::llm::no_model(None));
        let html = out.html.take();
        let store = services.store.as_ref();
        oxwright_extract::learn::fill(model, store, &spec, html.as_deref(), &mut out.result)
            .await
            .map_err(|e| explain_job(&e))?;
        let r = &out.result;
        let mut text = format!(
            "- URL: {}\n- Status: {}\n- Title: {}\n- Tokens: {} (HTML {})\n",
            r.final_url, r.status, r.title, r.tokens.markdown, r.tokens.html
        );
        if let Some(why) = &r.render_reason {
            let how = if r.rendered {
                "rendered"
            } else {
                "read from the served HTML"
            };
            text.push_str(&format!("- Render: {how} ({why})\n"));
        }
        if let Some(cache) = r.cache {
            text.push_str(&format!(
                "- Cache: {}\n",
                serde_json::to_value(cache)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or_default()
            ));
        }
        for w in &r.warnings {
            text.push_str(&format!("- Warning: {w}\n"));
        }
        match &r.extract {
            Some(extract) => text.push_str(&format!(
                "\n{}",
                serde_json::to_string_pretty(extract).unwrap_or_default()
            )),
            None => text.push_str(&format!("\n{}", r.markdown)),
        }
        Ok(Reply {
            text,
            images: Vec::new(),
            structured: serde_json::to_value(r).ok(),
        })
    }

    pub(super) async fn load_sitemap(&self, a: SitemapArgs) -> Result<Reply, String> {
        let loader = oxwright_sitemap::SitemapLoader::new(
            self.shared.services.policy.clone(),
            oxwright_sitemap::SitemapOptions::default(),
        );
        let result = loader
            .load(&a.target)
            .await
            .map_err(|e| explain_job(&JobError::from(e)))?;
        let limit = a.limit.unwrap_or(1000).max(1);
        let mut text = format!("{} URLs", result.urls.len());
        if result.urls.len() > limit {
            text.push_str(&format!(" (the first {limit} shown; pass limit for more)"));
        }
        text.push('\n');
        for u in result.urls.iter().take(limit) {
            text.push_str(&u.loc);
            text.push('\n');
        }
        for w in &result.warnings {
            text.push_str(&format!("- Warning: {w}\n"));
        }
        Ok(Reply::text(text))
    }

    pub(super) async fn run_workflow(&self, a: WorkflowArgs) -> Result<Reply, String> {
        let url = parse_url(&a.url)?;
        let services = &self.shared.services;
        oxwright_workflow::SiteProfiles::check(&a.sites)?;
        if let Some(id) = &a.workflow_id
            && (id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
        {
            return Err(format!(
                "workflow_id {id:?}: use letters, digits, '-', '_' and '.'"
            ));
        }
        let replay = match (a.replay, &a.workflow_id) {
            (false, _) => None,
            (true, None) => return Err("replay needs the workflow_id its runs recorded under".into()),
            (true, Some(id)) => {
                let cache = oxwright_workflow::ActionCache::load(&services.store, id)
                    .await
                    .map_err(|e| format!("the action cache could not be read: {e}"))?;
                if cache.checklist.is_empty() {
                    return Err(format!(
                        "nothing is recorded for workflow {id:?}: run it once with workflow_id set"
                    ));
                }
                Some(oxwright_workflow::ReplayOptions {
                    checklist: cache.checklist,
                    trust_after: a
                        .trust_after
                        .unwrap_or(oxwright_workflow::DEFAULT_TRUST_AFTER)
                        .clamp(1, 100),
                })
            }
        };
        let text = match &replay {
            Some(r) => r
                .checklist
                .iter()
                .map(|s| s.trim_start_matches("[]").trim())
                .collect::<Vec<_>>()
                .join("\n"),
            None => a.workflow.clone(),
        };
        let workflow = Workflow::parse(&text).map_err(|e| format!("the workflow does not parse: {e}"))?;
        let deps = RunDeps {
            llm: services.llm.clone(),
            secrets: services.secrets.clone(),
            store: services.store.clone(),
            sanitizer: self.shared.sanitizer.clone(),
        };
        let session_id = format!("mcp-{}", oxwright_jobs::JobId::new());
        let mut opts = WorkflowOptions::new(session_id.clone(), url);
        opts.name = a.name.clone();
        opts.action_timeout = self.config().action_timeout;
        opts.workflow_id = a.workflow_id.clone();
        opts.replay = replay;
        if !a.sites.is_empty() {
            opts.hints.sites = Some(Arc::new(oxwright_workflow::SiteProfiles { sites: a.sites }));
        }
        if a.sitemap_hints {
            opts.hints.sitemaps = Some(Arc::new(oxwright_workflow::SitemapHints::new(
                services.policy.clone(),
            )));
        }
        let mut session = self.session.lock().await;
        let open = self.open_options();
        let tab = session
            .current(&services.engine, &open)
            .await
            .map_err(|e| explain(&e))?;
        tab.last_snapshot = None;
        let result = oxwright_workflow::run_workflow(tab.page.as_ref(), &workflow, deps, opts)
            .await
            .map_err(|e| format!("the workflow could not run: {e}"))?;
        let mut text = format!(
            "Workflow {} {:?}: {} step(s); final URL {}.\n",
            session_id,
            result.status,
            result.steps.len(),
            result.final_url.as_deref().unwrap_or("-")
        );
        if result.workflow_id.is_some() {
            text.push_str(&format!(
                "- Steps from the action cache: {}, healed: {}, LLM calls: {}\n",
                result.totals.cache_hits, result.totals.healed, result.totals.llm_calls
            ));
        }
        if let Some(err) = &result.error {
            text.push_str(&format!("- Error: {err}\n"));
        }
        text.push_str(&format!("- Artefacts ({}):\n", services.store.describe()));
        for k in &result.artifacts {
            text.push_str(&format!("  - {k}\n"));
        }
        Ok(Reply {
            text,
            images: Vec::new(),
            structured: serde_json::to_value(&result).ok(),
        })
    }
}
