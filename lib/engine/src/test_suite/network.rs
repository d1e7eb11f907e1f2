//! The page's requests as recorded.

use super::*;

/// The document's requests, each with method, status, headers and bodies;
/// a new document starts the log again.
pub(super) async fn requests_recorded(page: &dyn Page, base: &url::Url) {
    page.goto(&url(base, "/suite/index"), &goto_opts())
        .await
        .expect("goto index");
    // The page reads the first body (a load finishes when its body is read).
    let script = "(async () => { const r = await fetch('/suite/data', { method: 'POST', headers: { 'X-Trace': 'abc-123' }, body: 'q=widgets' }); await r.text(); const m = await fetch('/suite/missing'); return [r.status, m.status].join(); })()";
    let statuses = page
        .evaluate(script, Duration::from_secs(10))
        .await
        .expect("fetches");
    assert_eq!(statuses, serde_json::json!("200,404"));
    let log = page.requests().await.expect("requests");
    let first = log.first().expect("a request");
    assert!(
        first.kind == "document" && first.url.ends_with("/suite/index") && first.status == 200,
        "the document's own request first: {first:?}"
    );
    let post = log
        .iter()
        .find(|r| r.url.ends_with("/suite/data"))
        .unwrap_or_else(|| panic!("the POST is recorded: {log:#?}"));
    assert_eq!(
        (post.method.as_str(), post.kind.as_str(), post.status),
        ("POST", "fetch", 200),
        "{post:?}"
    );
    assert_eq!(post.request_body.as_deref(), Some("q=widgets"), "{post:?}");
    assert!(
        post.request_headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-trace") && v == "abc-123"),
        "{post:?}"
    );
    assert!(
        post.response_headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type")),
        "{post:?}"
    );
    assert!(
        post.ms.is_some() && post.bytes.is_some(),
        "a read response finished: {post:?}"
    );
    let body = page
        .response_body(&post.id)
        .await
        .expect("the body of a finished load is held");
    assert_eq!(body.as_deref(), Some("SUITE-DATA-BODY"));
    let missing = log
        .iter()
        .find(|r| r.url.ends_with("/suite/missing"))
        .expect("the 404 is recorded");
    assert_eq!(missing.status, 404, "{missing:?}");
    page.goto(&url(base, "/suite/form"), &goto_opts())
        .await
        .expect("goto form");
    let log = page.requests().await.expect("requests");
    assert!(
        log.iter().all(|r| !r.url.ends_with("/suite/data"))
            && log.iter().any(|r| r.url.ends_with("/suite/form")),
        "a new document starts the log again: {log:#?}"
    );
}
