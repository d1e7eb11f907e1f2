//! The exit codes every command shares, listed in `docs/src/exit-codes.md`:
//! 0 all ok, 1 some jobs failed, 2 usage or configuration error, 3 a
//! service or the browser was not available, 130 interrupted.

use oxwright_config::UsageError;

/// Every job (page, sitemap, workflow) succeeded.
pub const OK: i32 = 0;
/// Some jobs failed; the others' results are there.
pub const JOBS_FAILED: i32 = 1;
/// A bad flag, configuration or input: nothing ran (clap exits 2 too).
pub const USAGE: i32 = 2;
/// Something oxwright needs did not answer (Chromium, RabbitMQ, the store,
/// the scheduler under `submit --wait`), or an internal error.
pub const UNAVAILABLE: i32 = 3;
/// Stopped by SIGINT or SIGTERM before the work was done.
pub const INTERRUPTED: i32 = 130;

/// Returns the code of a run that finished with `failed` failed jobs.
pub fn of_outcome(failed: usize, interrupted: bool) -> i32 {
    if interrupted {
        INTERRUPTED
    } else if failed > 0 {
        JOBS_FAILED
    } else {
        OK
    }
}

/// Returns the code of a command that returned `err` instead of running to the end.
pub fn of_error(err: &anyhow::Error) -> i32 {
    let misconfigured_browser = err.chain().any(|e| {
        #[cfg(feature = "browser")]
        if matches!(
            e.downcast_ref::<oxwright_browser::BrowserError>(),
            Some(oxwright_browser::BrowserError::Misconfigured(_))
        ) {
            return true;
        }
        e.downcast_ref::<oxwright_engine::EngineError>()
            .is_some_and(|e| e.kind == oxwright_engine::EngineErrorKind::Misconfigured)
    });
    if UsageError::is_in(err) || misconfigured_browser {
        USAGE
    } else {
        UNAVAILABLE
    }
}

/// Marks `err` as a usage error (exit 2).
pub fn usage(err: impl std::fmt::Display) -> anyhow::Error {
    UsageError::from_any(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn usage_errors_keep_their_code_under_context() {
        let err = Err::<(), _>(usage("bad config")).context("starting").unwrap_err();
        assert_eq!(of_error(&err), USAGE);
        assert_eq!(of_error(&anyhow::anyhow!("broker down")), UNAVAILABLE);
        let browser = Err::<(), _>(oxwright_browser::BrowserError::Misconfigured("no display".into()))
            .context("starting Chromium")
            .unwrap_err();
        assert_eq!(of_error(&browser), USAGE);
    }

    #[test]
    fn outcomes() {
        assert_eq!(of_outcome(0, false), OK);
        assert_eq!(of_outcome(6, false), JOBS_FAILED);
        assert_eq!(of_outcome(6, true), INTERRUPTED);
    }
}
