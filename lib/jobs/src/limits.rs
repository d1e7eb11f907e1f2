//! Bounds of the durations and counts a user gives in a job spec. A value
//! outside them is refused with a typed `invalid_input` error before any
//! work starts, so no option can make a job wait for ever (or overflow a
//! duration).

use crate::{ErrorKind, FetchSpec, JobError, WorkflowSpec};

/// Longest deadline of one fetch attempt: 10 minutes.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Longest base delay between fetch attempts: 1 minute (each backoff is
/// capped there too).
pub const MAX_RETRY_DELAY_MS: u64 = 60_000;
/// Longest fixed extra wait of one fetch (`wait_ms`): 1 minute.
pub const MAX_WAIT_MS: u64 = 60_000;
/// Most retries of one fetch after its first attempt.
pub const MAX_RETRY_COUNT: u32 = 10;
/// Most `include` (and most `exclude`) selectors of one fetch.
pub const MAX_SELECTORS: usize = 50;
/// Most `actions` of one fetch.
pub const MAX_ACTIONS: usize = 50;
/// The longest `extract_prompt`, in characters.
pub const MAX_EXTRACT_PROMPT: usize = 4_000;
/// Longest `actions` step of one fetch, in bytes.
pub const MAX_ACTION_LEN: usize = 2_000;
/// Longest cache age a fetch may accept (`max_age_ms`): 30 days.
pub const MAX_AGE_MS: u64 = 30 * 24 * 3_600_000;
/// Shortest deadline of one workflow action.
pub const MIN_ACTION_TIMEOUT_MS: u64 = 100;
/// Longest deadline of one workflow action: 2 minutes.
pub const MAX_ACTION_TIMEOUT_MS: u64 = 120_000;
/// Longest base delay of a queue-level retry: 1 hour.
pub const MAX_QUEUE_RETRY_DELAY_MS: u64 = 3_600_000;

/// Checks that `value` (option `name`) lies in `min..=max`.
pub fn check_range(name: &str, value: u64, min: u64, max: u64) -> Result<(), JobError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(JobError::new(
            ErrorKind::InvalidInput,
            format!("{name} {value} is out of range: give {min} to {max}"),
        ))
    }
}

impl FetchSpec {
    /// Refuses durations and counts outside the bounds of this module,
    /// and options that do not go together.
    pub fn validate(&self) -> Result<(), JobError> {
        self.validate_each()?;
        self.validate_together()
    }

    /// Refuses options that need another, or exclude one.
    pub fn validate_together(&self) -> Result<(), JobError> {
        if self.extract.is_some() && self.extract_css.is_some() {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                "extract (a JSON Schema the model fills) and extract_css (selectors) are two ways to one \
                 `extract`: give one",
            ));
        }
        for (asked, name) in [
            (
                self.extract_prompt.is_some(),
                "extract_prompt instructs the model reading",
            ),
            (self.learn, "learn learns selectors for"),
        ] {
            if asked && self.extract.is_none() {
                return Err(JobError::new(
                    ErrorKind::InvalidInput,
                    format!("{name} extract's JSON Schema: give extract too"),
                ));
            }
        }
        Ok(())
    }

    /// Refuses durations and counts outside the bounds of this module,
    /// one option at a time.
    pub fn validate_each(&self) -> Result<(), JobError> {
        check_range("timeout_ms", self.timeout_ms, 1, MAX_TIMEOUT_MS)?;
        check_range("retry_delay_ms", self.retry_delay_ms, 0, MAX_RETRY_DELAY_MS)?;
        check_range("wait_ms", self.wait_ms, 0, MAX_WAIT_MS)?;
        check_range(
            "retry_count",
            u64::from(self.retry_count),
            0,
            u64::from(MAX_RETRY_COUNT),
        )?;
        for (name, selectors) in [("include", &self.include), ("exclude", &self.exclude)] {
            check_range(name, selectors.len() as u64, 0, MAX_SELECTORS as u64)?;
            if let Some(bad) = selectors.iter().find(|s| s.trim().is_empty() || s.len() > 1000) {
                return Err(JobError::new(
                    ErrorKind::InvalidInput,
                    format!("{name} selector {bad:?} is empty or longer than 1000 characters"),
                ));
            }
        }
        check_range(
            "response_headers",
            self.response_headers.len() as u64,
            0,
            MAX_SELECTORS as u64,
        )?;
        if let Some(bad) = self.response_headers.iter().find(|n| {
            n.is_empty()
                || !n
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        }) {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                format!("response header name {bad:?} is not a valid HTTP token"),
            ));
        }
        if let Some(max) = self.max_tokens {
            check_range("max_tokens", max, 1, u64::from(u32::MAX))?;
        }
        check_range("actions", self.actions.len() as u64, 0, MAX_ACTIONS as u64)?;
        if let Some((i, bad)) = self
            .actions
            .iter()
            .enumerate()
            .find(|(_, a)| a.trim().is_empty() || a.len() > MAX_ACTION_LEN)
        {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                format!(
                    "action {} ({:?}) is empty or longer than {MAX_ACTION_LEN} bytes",
                    i + 1,
                    bad.chars().take(80).collect::<String>()
                ),
            ));
        }
        check_range("max_age_ms", self.max_age_ms, 0, MAX_AGE_MS)?;
        if let Some(prompt) = &self.extract_prompt {
            check_range(
                "extract_prompt length",
                prompt.chars().count() as u64,
                1,
                MAX_EXTRACT_PROMPT as u64,
            )?;
        }
        self.shape().validate()
    }
}

impl WorkflowSpec {
    /// Refuses durations outside the bounds of this module, a trust count
    /// of 0, a workflow id that is not safe in a key, and bad site
    /// profiles.
    pub fn validate(&self) -> Result<(), JobError> {
        check_range(
            "action_timeout_ms",
            self.action_timeout_ms,
            MIN_ACTION_TIMEOUT_MS,
            MAX_ACTION_TIMEOUT_MS,
        )?;
        if let Some(n) = self.trust_after {
            check_range("trust_after", u64::from(n), 1, 100)?;
        }
        if let Some(id) = &self.workflow_id
            && (id.is_empty()
                || id.len() > 100
                || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || id.starts_with('.'))
        {
            return Err(JobError::new(
                ErrorKind::InvalidInput,
                format!("workflow_id {id:?}: use up to 100 letters, digits, '-', '_' and '.'"),
            ));
        }
        crate::SiteProfiles::check(&self.sites).map_err(|m| JobError::new(ErrorKind::InvalidInput, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch() -> FetchSpec {
        FetchSpec::new("https://example.com/".parse().unwrap())
    }

    #[test]
    fn defaults_are_in_range() {
        assert_eq!(fetch().validate(), Ok(()));
        let wf = WorkflowSpec::new("click: button \"Go\"", "https://example.com/".parse().unwrap());
        assert_eq!(wf.validate(), Ok(()));
    }

    #[test]
    fn huge_durations_are_refused_with_invalid_input() {
        let mut spec = fetch();
        spec.retry_delay_ms = u64::MAX;
        let err = spec.validate().unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidInput);
        assert!(
            err.message.contains("retry_delay_ms 18446744073709551615"),
            "{err}"
        );

        let mut spec = fetch();
        spec.timeout_ms = u64::MAX;
        assert_eq!(spec.validate().unwrap_err().kind, ErrorKind::InvalidInput);
        spec.timeout_ms = 0;
        assert_eq!(spec.validate().unwrap_err().kind, ErrorKind::InvalidInput);

        let mut spec = fetch();
        spec.retry_count = u32::MAX;
        assert!(spec.validate().unwrap_err().message.contains("retry_count"));

        let mut spec = fetch();
        spec.wait_ms = MAX_WAIT_MS + 1;
        assert!(spec.validate().unwrap_err().message.contains("wait_ms"));

        let mut wf = WorkflowSpec::new("click: button \"Go\"", "https://example.com/".parse().unwrap());
        wf.action_timeout_ms = u64::MAX;
        assert_eq!(wf.validate().unwrap_err().kind, ErrorKind::InvalidInput);
        wf.action_timeout_ms = 0;
        assert!(wf.validate().unwrap_err().message.contains("action_timeout_ms"));
    }

    #[test]
    fn bounds_themselves_are_accepted() {
        let mut spec = fetch();
        spec.timeout_ms = MAX_TIMEOUT_MS;
        spec.retry_delay_ms = MAX_RETRY_DELAY_MS;
        spec.wait_ms = MAX_WAIT_MS;
        spec.retry_count = MAX_RETRY_COUNT;
        assert_eq!(spec.validate(), Ok(()));
        spec.timeout_ms = MAX_TIMEOUT_MS + 1;
        assert!(spec.validate().is_err());
    }
}
