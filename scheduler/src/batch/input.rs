//! Batch input: URL lists, one URL a line, checked against the URL policy
//! as they enter. Bad lines are kept as typed failures, never dropped.

use oxwright_jobs::{ErrorKind, JobError};
use oxwright_policy::{PolicyError, UrlPolicy};
use url::Url;

/// One line of a batch file.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchLine {
    /// A URL the policy accepts statically.
    Url(Url),
    /// A line that cannot become a job.
    Invalid {
        /// The text as given.
        text: String,
        /// Why it was refused.
        error: JobError,
    },
}

/// Parses `text`: one URL a line; blank lines and `#` comments skipped;
/// duplicates kept (each line is a job).
pub fn parse_url_list(text: &str, policy: &UrlPolicy) -> Vec<BatchLine> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| match policy.parse_input(line) {
            Ok(url) => BatchLine::Url(url),
            Err(err) => BatchLine::Invalid {
                text: line.to_string(),
                error: policy_error(line, &err),
            },
        })
        .collect()
}

/// Maps a policy refusal to a job error.
pub fn policy_error(url: &str, err: &PolicyError) -> JobError {
    let kind = match err {
        PolicyError::Invalid(_) | PolicyError::NoHost(_) => ErrorKind::InvalidInput,
        PolicyError::Resolve { .. } => ErrorKind::Dns,
        PolicyError::Scheme { .. } | PolicyError::PrivateAddress { .. } => ErrorKind::PolicyDenied,
    };
    JobError::new(kind, err.to_string()).with_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_refusals() {
        let text = "# urls\nhttps://example.com/a\n\n  https://example.com/b  \nfile:///etc/passwd\nnot a url\nhttp://10.0.0.1/\n";
        let lines = parse_url_list(text, &UrlPolicy::default());
        assert_eq!(lines.len(), 5);
        assert!(matches!(&lines[0], BatchLine::Url(u) if u.as_str() == "https://example.com/a"));
        assert!(matches!(&lines[1], BatchLine::Url(u) if u.as_str() == "https://example.com/b"));
        let kinds: Vec<_> = lines[2..]
            .iter()
            .map(|l| match l {
                BatchLine::Invalid { error, .. } => error.kind,
                BatchLine::Url(_) => panic!("expected refusal"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ErrorKind::PolicyDenied,
                ErrorKind::InvalidInput,
                ErrorKind::PolicyDenied
            ]
        );
    }
}
