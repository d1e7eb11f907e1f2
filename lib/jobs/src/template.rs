//! Job templates: the work a schedule tick, a webhook call or an API
//! request turns into a batch — a kind, targets, and fetch options. The
//! scheduler expands them into jobs; this is only their shape.

use serde::{Deserialize, Serialize};

use crate::{ErrorKind, FetchSpec, JobError, JobKind};

/// A batch to create: what kind of job, for which targets, with which
/// options (the `FetchSpec` fields but `url`, for fetches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobTemplate {
    /// `fetch` (default) or `sitemap`.
    #[serde(default = "default_kind")]
    pub kind: JobKind,
    /// Page URLs (fetch) or domains / sitemap URLs (sitemap).
    pub urls: Vec<String>,
    /// Fetch options, as in a `FetchSpec` without `url`.
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
}

fn default_kind() -> JobKind {
    JobKind::Fetch
}

impl JobTemplate {
    /// The template of one fetch job: its URL, and every other field of
    /// `spec` as options (the inverse of [`JobTemplate::fetch_template`]).
    pub fn for_fetch(spec: &FetchSpec) -> Self {
        let mut options = match serde_json::to_value(spec) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        options.remove("url");
        JobTemplate {
            kind: JobKind::Fetch,
            urls: vec![spec.url.to_string()],
            options,
        }
    }

    /// Returns the fetch options as a spec with a placeholder URL, or a
    /// typed error naming the bad option.
    pub fn fetch_template(&self) -> Result<FetchSpec, JobError> {
        let mut options = self.options.clone();
        if options.contains_key("url") {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                "options must not contain `url`: give URLs in `urls`",
            ));
        }
        options.insert("url".into(), "http://template.invalid/".into());
        let spec: FetchSpec = serde_json::from_value(serde_json::Value::Object(options))
            .map_err(|e| JobError::new(ErrorKind::InvalidInput, format!("bad fetch options: {e}")))?;
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_spec_round_trips_through_its_template() {
        let mut spec = FetchSpec::new("https://example.com/a".parse().unwrap());
        spec.timeout_ms = 1234;
        spec.include_html = true;
        let template = JobTemplate::for_fetch(&spec);
        assert_eq!(template.urls, vec!["https://example.com/a".to_string()]);
        assert!(!template.options.contains_key("url"));
        let back = template.fetch_template().unwrap();
        assert_eq!(back.timeout_ms, 1234);
        assert!(back.include_html);
        let mut bad = template.clone();
        bad.options.insert("url".into(), "https://example.com/".into());
        assert_eq!(bad.fetch_template().unwrap_err().kind, ErrorKind::InvalidInput);
    }
}
