//! Expanding a job template into the jobs of a batch, and submitting it.

pub use oxwright_jobs::JobTemplate;
use oxwright_jobs::{ErrorKind, Job, JobError, JobKind, JobSpec, SitemapSpec};
use oxwright_policy::UrlPolicy;

use crate::batch::{BatchLine, parse_url_entry};
use crate::submit::Expanded;

/// What a template turns into under a URL policy.
pub trait ExpandTemplate {
    /// Expands the template into jobs of `batch_id`, with a typed refusal
    /// for every target the policy refuses statically.
    fn jobs(&self, batch_id: &str, policy: &UrlPolicy) -> Result<Expanded, JobError>;
}

impl ExpandTemplate for JobTemplate {
    fn jobs(&self, batch_id: &str, policy: &UrlPolicy) -> Result<Expanded, JobError> {
        if self.urls.is_empty() {
            return Err(JobError::new(ErrorKind::InvalidInput, "no urls given"));
        }
        match self.kind {
            JobKind::Fetch => {
                let template = self.fetch_template()?;
                // Each entry is one job or one refusal: never joined into lines.
                let lines = self.urls.iter().map(|u| parse_url_entry(u, policy)).collect();
                Ok(crate::submit::fetch_jobs(batch_id, lines, &template))
            }
            JobKind::Workflow => Err(JobError::new(
                ErrorKind::InvalidInput,
                "workflow jobs carry a whole workflow: submit each with POST /v1/jobs",
            )),
            JobKind::Sitemap => {
                if !self.options.is_empty() {
                    return Err(JobError::new(
                        ErrorKind::InvalidInput,
                        "sitemap jobs take no options",
                    ));
                }
                let mut jobs = Vec::new();
                let mut refused = Vec::new();
                for entry in &self.urls {
                    let target = entry.trim();
                    // A bare domain is accepted: the loader adds https://.
                    let probe = if target.contains("://") || target.is_empty() {
                        target.to_owned()
                    } else {
                        format!("https://{target}/")
                    };
                    match parse_url_entry(&probe, policy) {
                        BatchLine::Invalid { error, .. } => refused.push((entry.clone(), error)),
                        BatchLine::Url(_) => jobs.push(Job::new(
                            JobSpec::Sitemap(SitemapSpec {
                                target: target.to_owned(),
                            }),
                            Some(batch_id.to_owned()),
                        )),
                    }
                }
                Ok((jobs, refused))
            }
        }
    }
}

/// Expands `template` into batch `batch_id` and submits it (batch record,
/// confirmed publishes, refusal reports): what a schedule tick, a webhook
/// and the scheduler Lambda do. Errors are typed job errors.
pub async fn submit_template(
    queue: &dyn oxwright_queue::JobQueue,
    store: &dyn oxwright_artifacts::ArtifactStore,
    policy: &UrlPolicy,
    batch_id: &str,
    template: &JobTemplate,
    source: &str,
) -> Result<crate::SubmitReceipt, JobError> {
    let (jobs, refused) = template.jobs(batch_id, policy)?;
    crate::submit_batch(queue, store, batch_id, jobs, refused, source)
        .await
        .map_err(|e| JobError::new(ErrorKind::Internal, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxwright_jobs::FetchSpec;

    #[test]
    fn fetch_options_and_refusals() {
        let template: JobTemplate = serde_json::from_value(serde_json::json!({
            "urls": ["https://example.com/a", "file:///etc/passwd"],
            "options": {"content": "full", "timeout_ms": 5000}
        }))
        .unwrap();
        let (jobs, refused) = template.jobs("b1", &UrlPolicy::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].1.kind, ErrorKind::PolicyDenied);
        let JobSpec::Fetch(spec) = &jobs[0].spec else {
            panic!("fetch")
        };
        assert_eq!(spec.timeout_ms, 5000);
        assert_eq!(spec.url.as_str(), "https://example.com/a");
        assert_eq!(jobs[0].batch_id.as_deref(), Some("b1"));
    }

    #[test]
    fn a_fetch_spec_round_trips_through_its_template() {
        let mut spec = FetchSpec::new("https://example.com/a".parse().unwrap());
        spec.timeout_ms = 1234;
        spec.include_html = true;
        let template = JobTemplate::for_fetch(&spec);
        assert_eq!(template.urls, vec!["https://example.com/a".to_string()]);
        assert!(!template.options.contains_key("url"));
        let (jobs, refused) = template.jobs("b", &UrlPolicy::default()).unwrap();
        assert!(refused.is_empty());
        assert_eq!(jobs[0].spec, JobSpec::Fetch(spec));
    }

    #[test]
    fn bad_options_are_typed_errors() {
        let template: JobTemplate = serde_json::from_value(serde_json::json!({
            "urls": ["https://example.com/"], "options": {"timeout": 1}
        }))
        .unwrap();
        let err = template.jobs("b", &UrlPolicy::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(err.message.contains("timeout"), "{}", err.message);
        let empty = JobTemplate {
            kind: JobKind::Fetch,
            urls: Vec::new(),
            options: serde_json::Map::new(),
        };
        assert_eq!(
            empty.jobs("b", &UrlPolicy::default()).unwrap_err().kind,
            ErrorKind::InvalidInput
        );
    }

    #[test]
    fn every_entry_is_one_job_or_one_refusal() {
        for kind in ["fetch", "sitemap"] {
            let template: JobTemplate = serde_json::from_value(serde_json::json!({
                "kind": kind,
                "urls": ["https://example.com/a", "", "   ", "# note", "https://example.com/b\nhttps://example.com/c"]
            }))
            .unwrap();
            let (jobs, refused) = template.jobs("b", &UrlPolicy::default()).unwrap();
            assert_eq!(jobs.len(), 1, "{kind}");
            assert_eq!(refused.len(), 4, "{kind}: {refused:?}");
            assert!(
                refused.iter().all(|(_, e)| e.kind == ErrorKind::InvalidInput),
                "{kind}: {refused:?}"
            );
        }
    }

    #[test]
    fn sitemap_targets() {
        let template: JobTemplate = serde_json::from_value(serde_json::json!({
            "kind": "sitemap", "urls": ["example.com", "http://127.0.0.1/"]
        }))
        .unwrap();
        let (jobs, refused) = template.jobs("b", &UrlPolicy::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].kind(), JobKind::Sitemap);
        assert_eq!(refused[0].1.kind, ErrorKind::PolicyDenied);
    }
}
