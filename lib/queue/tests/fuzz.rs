//! A bounded, deterministic fuzz harness for job-message decoding, the
//! code every worker runs on bytes anyone who can publish to the broker
//! chose. From the committed seed corpus (`fuzz/corpus/decode`, shared
//! with the libFuzzer target in `fuzz/`) it checks, for every queue kind:
//! decoding never panics; a decoded job is of the queue's kind, encodes
//! and decodes back to itself, and its spec validates or is refused with
//! a typed error, never a panic (`oxwright_fixtures::fuzz`:
//! `OXWRIGHT_FUZZ_SECS=600` runs longer).

use std::path::Path;

use oxwright_fixtures::fuzz::{Target, corpus, run};
use oxwright_jobs::{JobKind, JobSpec};
use oxwright_queue::{decode_job, encode_job};

const MAX: usize = 64 * 1024;

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\u0000",
    b"\\ud800",
    b"null",
    b"true",
    b"-0",
    b"1e999",
    b"18446744073709551616",
    b"\"schema_version\":1",
    b"\"kind\":\"fetch\"",
    b"\"kind\":\"sitemap\"",
    b"\"kind\":\"workflow\"",
    b"\"spec\":{",
    b"\"url\":\"http://[::1]:0/\"",
    b"\"timeout_ms\":0",
    b"\"retry_delay_ms\":18446744073709551615",
    b"\"attempt\":4294967295",
    b"\"created_at\":\"9999-12-31T23:59:59Z\"",
    b"\"deadline\":\"1970-01-01T00:00:00Z\"",
    b"\"wait_for_load_state\":\"networkidle\"",
    b"\"block_resources\":[\"image\"]",
    b"\"headers\":{\"a\":\"b\"}",
    b"\"trust_after\":0",
    b"{{SECRET}}",
    b"\xEF\xBB\xBF",
    b"\xff",
];

/// The property of one body: see the module comment. Returns the outcome.
pub fn check(body: &[u8]) -> String {
    let mut outcome = String::new();
    for kind in [JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow] {
        match decode_job(body, kind, MAX) {
            Err(e) => outcome.push_str(e.as_str()),
            Ok(job) => {
                assert_eq!(job.kind(), kind, "a job decoded off another kind's queue");
                let again = encode_job(&job, usize::MAX).expect("a decoded job encodes");
                assert_eq!(
                    decode_job(&again, kind, usize::MAX).as_ref(),
                    Ok(&job),
                    "re-encoding changed the job"
                );
                let valid = match &job.spec {
                    JobSpec::Fetch(spec) => spec.validate().map_err(|e| e.kind),
                    JobSpec::Workflow(spec) => spec.validate().map_err(|e| e.kind),
                    JobSpec::Sitemap(_) => Ok(()),
                };
                outcome.push_str(&format!("ok:{valid:?}"));
            }
        }
        outcome.push('|');
    }
    outcome
}

#[test]
fn fuzz_decode_job() {
    let seeds = corpus(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/decode"));
    let target = Target {
        name: "decode_job",
        seeds,
        tokens: TOKENS,
        wrap: None,
        max_input: MAX + 16,
    };
    let (iterations, outcomes) = run(target, check);
    assert!(iterations > 0 && outcomes > 5, "{outcomes} outcomes");
}
