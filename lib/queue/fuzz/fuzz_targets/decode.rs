//! libFuzzer target: decoding a job message never panics, and a decoded
//! job is of its queue's kind, survives re-encoding unchanged, and
//! validates or is refused with a typed error.
#![no_main]

use oxwright_jobs::{JobKind, JobSpec};
use oxwright_queue::{decode_job, encode_job};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for kind in [JobKind::Fetch, JobKind::Sitemap, JobKind::Workflow] {
        let Ok(job) = decode_job(data, kind, 64 * 1024) else {
            continue;
        };
        assert_eq!(job.kind(), kind);
        let again = encode_job(&job, usize::MAX).expect("a decoded job encodes");
        assert_eq!(decode_job(&again, kind, usize::MAX).as_ref(), Ok(&job));
        let _ = match &job.spec {
            JobSpec::Fetch(spec) => spec.validate(),
            JobSpec::Workflow(spec) => spec.validate(),
            JobSpec::Sitemap(_) => Ok(()),
        };
    }
});
