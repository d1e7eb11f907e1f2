//! Batch input: URL lists, one URL a line, checked against the URL policy
//! as they enter. Bad lines are kept as typed failures, never dropped.

use chrono::Utc;
use oxwright_jobs::{ErrorKind, JobError, JobId, JobKind, JobReport, ReportStatus};
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

/// Parses one entry of a JSON list of URLs: exactly one job or one typed
/// refusal, never zero or two. Unlike a file line, a blank entry, a `#`
/// entry and an entry holding a line break or other control character are
/// refusals (`invalid_input`), not skipped or split.
pub fn parse_url_entry(entry: &str, policy: &UrlPolicy) -> BatchLine {
    let text = entry.trim();
    let refuse = |why: &str| BatchLine::Invalid {
        text: entry.to_owned(),
        error: JobError::new(ErrorKind::InvalidInput, why).with_url(shorten(entry)),
    };
    if text.is_empty() {
        return refuse("empty URL");
    }
    if text.chars().any(char::is_control) {
        return refuse("the URL contains a line break or another control character");
    }
    match policy.parse_input(text) {
        Ok(url) => BatchLine::Url(url),
        Err(err) => BatchLine::Invalid {
            text: text.to_owned(),
            error: policy_error(text, &err),
        },
    }
}

/// Longest input text a manifest line or error carries; longer text is cut
/// and its size noted.
pub const REPORTED_TEXT_BYTES: usize = 2_048;

/// Returns `text` cut to [`REPORTED_TEXT_BYTES`] (on a character boundary)
/// with its full size noted, so a huge input line never makes a huge
/// report.
pub fn shorten(text: &str) -> String {
    if text.len() <= REPORTED_TEXT_BYTES {
        return text.to_owned();
    }
    let mut cut = REPORTED_TEXT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

/// Returns the typed refusal of a job too large to publish (`err` is the
/// queue's size refusal).
pub fn too_large_error(url: &str, err: &oxwright_queue::QueueError) -> JobError {
    JobError::new(
        ErrorKind::InvalidInput,
        format!("the job is too large for the queue: {err}"),
    )
    .with_url(shorten(url))
}

/// Maps a policy refusal to a job error.
pub fn policy_error(url: &str, err: &PolicyError) -> JobError {
    let kind = match err {
        PolicyError::Invalid(_) | PolicyError::NoHost(_) => ErrorKind::InvalidInput,
        PolicyError::Resolve { .. } => ErrorKind::Dns,
        PolicyError::Scheme { .. } | PolicyError::PrivateAddress { .. } => ErrorKind::PolicyDenied,
    };
    JobError::new(kind, shorten(&err.to_string())).with_url(shorten(url))
}

/// The manifest line of a fetch that never ran: refused input, or a job
/// an interrupted batch never reached.
pub fn failed_report(job_id: JobId, batch_id: &str, url: &str, error: JobError) -> JobReport {
    JobReport {
        job_id,
        kind: JobKind::Fetch,
        batch_id: Some(batch_id.to_string()),
        url: shorten(url),
        status: ReportStatus::Failed,
        error: Some(error),
        artifacts: Vec::new(),
        attempt: 0,
        duration_ms: 0.0,
        finished_at: Utc::now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_entry_is_one_job_or_one_refusal() {
        let policy = UrlPolicy::default();
        let kind = |entry: &str| match parse_url_entry(entry, &policy) {
            BatchLine::Url(url) => Err(url.to_string()),
            BatchLine::Invalid { error, .. } => Ok(error.kind),
        };
        assert_eq!(
            kind(" https://example.com/a "),
            Err("https://example.com/a".into())
        );
        assert_eq!(kind(""), Ok(ErrorKind::InvalidInput));
        assert_eq!(kind("   "), Ok(ErrorKind::InvalidInput));
        assert_eq!(kind("# comment"), Ok(ErrorKind::InvalidInput));
        assert_eq!(
            kind("https://example.com/a\nhttps://example.com/b"),
            Ok(ErrorKind::InvalidInput)
        );
        assert_eq!(kind("https://example.com/a\tb"), Ok(ErrorKind::InvalidInput));
        assert_eq!(kind("file:///etc/passwd"), Ok(ErrorKind::PolicyDenied));
    }

    #[test]
    fn long_text_is_shortened_for_reports() {
        assert_eq!(shorten("https://a.example/"), "https://a.example/");
        let long = "é".repeat(3_000);
        let short = shorten(&long);
        assert!(short.len() < REPORTED_TEXT_BYTES + 32, "{}", short.len());
        assert!(short.ends_with("… (6000 bytes)"), "{short}");
    }

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
