//! UI checks as code: a check is a workflow with a name, a start URL, a
//! schedule, retries and alert settings, written as `NAME.check.toml`
//! beside a project's other files. This crate owns the file format
//! ([`load`], [`load_dir`], [`Check`]), the workflow job a check becomes
//! ([`Check::workflow_spec`]), the record of one run ([`CheckRun`], stored
//! at [`run_key`]) and the JUnit report CI reads ([`junit::report`]).
//!
//! It does no I/O beyond reading check files and links no browser: the
//! command line runs checks embedded, the scheduler runs them in the fleet,
//! both through this crate.

mod error;
mod file;
pub mod junit;
mod record;
mod schedule;

pub use error::{CheckError, Invalid};
pub use file::{
    Alert, CHECK_SUFFIX, Check, DEFAULT_RETRY_DELAY, DEFAULT_TIMEOUT, MAX_NAME_LEN, MAX_RETRIES,
    MAX_RETRY_DELAY, MAX_TIMEOUT, is_check_file, load, load_dir, name_of, parse_base_url, validate_name,
    with_origin,
};
pub use record::{
    Attempt, AttemptOutcome, AttemptStatus, CheckRun, CheckStatus, FailedStep, RunContext, Trigger, run_key,
    runs_prefix, state_key,
};
pub use schedule::{CronSchedule, Schedule};
