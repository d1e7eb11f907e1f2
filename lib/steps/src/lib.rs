//! Structured steps over the engine seam (`&dyn Page`): their grammar
//! (`click: button "Sign in"`, `fill: textbox "Name" = {{NAME}}`, `expect:
//! text "Welcome"` …) and the [`Executor`] that performs one with real input
//! events, auto-waiting for its target and for the page to settle.
//!
//! Workflow runs and a fetch's `actions` both stand on this crate, so a step
//! means the same wherever it is written. What a workflow adds (the LLM, the
//! log, checkpoints, replay) stays in `oxwright-workflow`.

mod action;
mod closest;
mod error;
mod executor;
mod grammar;
mod run;

pub use action::{Action, ActionValue};
pub use error::{AttemptError, ParseError, StepError};
pub use executor::{ActError, Executor};
pub use grammar::{
    Assertion, Compare, ExtractKind, Extraction, OutputAssertion, OutputCheck, OutputPath, PathStep,
    SchemaExtraction, ScrollTo, StepAction, StructuredStep, looks_structured, parse_steps, pick_nth,
    read_schemas,
};
pub use run::{
    MAX_ATTEMPTS, StepTrace, StepsError, act_decision, attempt_step, attempt_wait, ms, precheck_count,
    run_steps,
};
