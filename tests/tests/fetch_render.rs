//! `render: never | auto` against the fixture site and real Chromium: the
//! served-HTML read gives the rendered read's result on static pages
//! (metadata, links, images, Markdown, charsets), shapes its request as a
//! render does, follows redirects under the URL policy, reads PDFs and
//! refuses other non-HTML, honours timeouts and retries; `auto` reads what
//! the served HTML holds, renders what it does not (without asking the
//! server twice) and says why.

mod common;

use common::{Env, redirect_to};
use oxwright_fetch::fetch_page;
use oxwright_fixtures::markers;
use oxwright_jobs::{BasicAuth, CookieSpec, ErrorKind, FetchResult, FetchSpec, Format, JobError, Render};

async fn fetch(env: &Env, spec: &FetchSpec) -> Result<FetchResult, JobError> {
    fetch_page(&env.pool, &env.policy, spec).await.map(|o| o.result)
}

fn with(env: &Env, path: &str, render: Render) -> FetchSpec {
    let mut spec = env.spec(path);
    spec.render = render;
    spec
}

/// On pages whose served HTML is the page, reading it gives what rendering
/// it gives: title, metadata, links, images and the Markdown's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reads_static_pages_as_a_render_does() {
    let env = Env::start().await;
    let mut paths: Vec<&str> = oxwright_fixtures::ARTICLE_PATHS.to_vec();
    paths.extend(["/options/meta", "/latin1", "/shift_jis", "/redirect/chain"]);
    for path in paths {
        let rendered = fetch(&env, &with(&env, path, Render::Always)).await.unwrap();
        let served = fetch(&env, &with(&env, path, Render::Never))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(rendered.rendered && !served.rendered, "{path}");
        assert_eq!(served.render_reason, None, "{path}");
        assert_eq!(served.title, rendered.title, "{path}");
        assert_eq!(served.final_url, rendered.final_url, "{path}");
        assert_eq!(served.status, rendered.status, "{path}");
        assert_eq!(served.metadata, rendered.metadata, "{path}");
        assert_eq!(served.links, rendered.links, "{path}");
        assert_eq!(served.images, rendered.images, "{path}");
        let words = |m: &str| m.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            words(&served.markdown),
            words(&rendered.markdown),
            "{path}: the served read's Markdown differs"
        );
        assert!(served.tokens.html > 0 && served.tokens.markdown > 0, "{path}");
    }
}

/// The request is shaped as a render's: extra headers and credentials to
/// their one host, cookies, user agent and locale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_shapes_its_request_as_a_render_does() {
    let env = Env::start().await;
    let mut spec = with(&env, "/options/meta", Render::Never);
    spec.headers.insert("X-Team".into(), "blue".into());
    spec.cookies.push(CookieSpec {
        name: "session".into(),
        value: "abc".into(),
        domain: None,
        path: None,
        secure: false,
    });
    spec.user_agent = Some("FixtureBot/1.0".into());
    spec.locale = Some("de-DE".into());
    spec.basic_auth = Some(BasicAuth {
        username: "ada".into(),
        password: "hunter2".into(),
        host: None,
    });
    env.site.clear_requests();
    let r = fetch(&env, &spec).await.unwrap();
    assert!(!r.rendered);
    let seen = env.site.requests();
    assert_eq!(seen.len(), 1, "one request and no sub-request: {seen:?}");
    let header = |n: &str| {
        seen[0]
            .headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(header("x-team"), "blue");
    assert_eq!(header("cookie"), "session=abc");
    assert_eq!(header("user-agent"), "FixtureBot/1.0");
    assert!(header("accept-language").starts_with("de-DE"), "{seen:?}");
    assert_eq!(header("authorization"), "Basic YWRhOmh1bnRlcjI=");
    assert!(header("accept").contains("text/html"));
}

/// Redirect hops are judged: a hop to a private address, to `localhost`
/// or to another scheme is refused, as the browser's interception refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_judges_every_redirect_hop() {
    let env = Env::start().await;
    let r = fetch(&env, &with(&env, "/redirect/chain", Render::Never))
        .await
        .unwrap();
    assert_eq!(r.final_url, env.site.url("/redirect/final"));
    let port = env.site.addr().port();
    for target in [
        format!("http://10.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://127.0.0.2:{port}/"),
        "file:///etc/passwd".to_string(),
        "data:text/html,<p>hi</p>".to_string(),
    ] {
        let err = fetch(&env, &with(&env, &redirect_to(&target), Render::Never))
            .await
            .expect_err(&target);
        assert_eq!(err.kind, ErrorKind::PolicyDenied, "{target}: {err}");
    }
    // The input URL itself is judged before anything is sent.
    let mut spec = with(&env, "/", Render::Never);
    spec.url = format!("http://127.0.0.3:{port}/").parse().unwrap();
    let err = fetch(&env, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
}

/// PDFs are read as documents; other non-HTML is refused, typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reads_pdfs_and_refuses_other_documents() {
    let env = Env::start().await;
    for render in [Render::Never, Render::Auto] {
        let pdf = fetch(&env, &with(&env, "/doc.pdf", render)).await.unwrap();
        assert!(!pdf.rendered, "{render:?}");
        assert!(pdf.metadata.meta.contains_key("pdf:pages"), "{pdf:?}");
        assert!(!pdf.markdown.trim().is_empty());
        for path in ["/data.json", "/plain.txt", "/attachment"] {
            let err = fetch(&env, &with(&env, path, render)).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::NonHtml, "{path}: {err}");
        }
        let err = fetch(&env, &with(&env, "/status/404", render)).await.unwrap_err();
        assert_eq!(
            (err.kind, err.status),
            (ErrorKind::HttpStatus, Some(404)),
            "{err}"
        );
    }
}

/// Deadlines and retries work as for a render.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_times_out_and_retries() {
    let env = Env::start().await;
    let mut slow = with(&env, "/slow?ms=3000", Render::Never);
    slow.timeout_ms = 500;
    slow.retry_count = 1;
    let err = fetch(&env, &slow).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
    assert_eq!(err.attempts, 2, "a timeout is retried: {err}");
    let flaky = with(&env, "/flaky/render-never", Render::Never);
    let r = fetch(&env, &flaky).await.unwrap();
    assert_eq!((r.status, r.attempts), (200, 3), "two 503s, then the page");
}

/// What only a browser does is refused under `never`, and makes `auto` render.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_only_options_refuse_never_and_render_auto() {
    let env = Env::start().await;
    let mut spec = with(&env, "/options/meta", Render::Never);
    spec.formats.push(Format::Screenshot);
    let err = fetch(&env, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("screenshot"), "{err}");
    spec.render = Render::Auto;
    let r = fetch(&env, &spec).await.unwrap();
    assert!(r.rendered);
    assert!(
        r.render_reason
            .as_deref()
            .unwrap_or_default()
            .contains("screenshot"),
        "{:?}",
        r.render_reason
    );
}

/// `auto` reads an article from the served HTML, and renders a page whose
/// content a script writes, handing the browser the body it already read:
/// the server sees the document requested once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_reads_what_the_served_html_holds_and_renders_the_rest_once() {
    let env = Env::start().await;
    let article = oxwright_fixtures::ARTICLE_PATHS[0];
    let r = fetch(&env, &with(&env, article, Render::Auto)).await.unwrap();
    assert!(!r.rendered, "{:?}", r.render_reason);
    assert!(
        r.render_reason.as_deref().unwrap_or_default().contains("words"),
        "{:?}",
        r.render_reason
    );
    env.site.clear_requests();
    let r = fetch(&env, &with(&env, "/js-rendered", Render::Auto))
        .await
        .unwrap();
    assert!(r.rendered, "{:?}", r.render_reason);
    let why = r.render_reason.clone().unwrap_or_default();
    assert!(why.contains("empty #app"), "{why}");
    assert!(r.markdown.contains("JS-RENDERED-CONTENT"), "{}", r.markdown);
    assert_eq!(r.status, 200);
    assert_eq!(
        env.site.hits("/js-rendered"),
        1,
        "the document was requested once: {:?}",
        env.site.requests()
    );
    // `never` reads the shell as it is, and says a render would differ.
    let r = fetch(&env, &with(&env, "/js-rendered", Render::Never))
        .await
        .unwrap();
    assert!(!r.markdown.contains("JS-RENDERED-CONTENT"));
    assert!(
        r.warnings.iter().any(|w| w.contains("application shell")),
        "{:?}",
        r.warnings
    );
}

/// A served page of navigation and headline lists (some 400 words) around
/// an empty story slot, whose article a script fetches after `load`, is
/// rendered by `auto`: a list of links is not an article, so its words do
/// not count as content. `never` says a render would differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_renders_a_frame_whose_article_comes_after_load() {
    let env = Env::start().await;
    let r = fetch(&env, &with(&env, "/frame-fetched-article", Render::Auto))
        .await
        .unwrap();
    let why = r.render_reason.clone().unwrap_or_default();
    assert!(r.rendered, "{why}");
    assert!(why.contains("words of main content"), "{why}");
    assert!(
        r.markdown.contains(markers::FETCHED_STORY_CONTENT),
        "{}",
        r.markdown
    );
    let r = fetch(&env, &with(&env, "/frame-fetched-article", Render::Never))
        .await
        .unwrap();
    assert!(!r.markdown.contains(markers::FETCHED_STORY_CONTENT));
    assert!(
        r.warnings.iter().any(|w| w.contains("would run its scripts")),
        "{:?}",
        r.warnings
    );
}

/// A news page that serves the first paragraphs of its article (about 60
/// words) and appends the rest from an inline `fetch`, is rendered by
/// `auto` and read whole; `never` reads the teaser and says a render would
/// differ, naming the teaser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_renders_a_teaser_whose_script_appends_the_rest() {
    let env = Env::start().await;
    let r = fetch(&env, &with(&env, "/teaser-article", Render::Auto))
        .await
        .unwrap();
    let why = r.render_reason.clone().unwrap_or_default();
    assert!(r.rendered, "{why}");
    assert!(why.contains("teaser of"), "{why}");
    assert!(r.markdown.contains("harbour board"), "{}", r.markdown);
    assert!(
        r.markdown.contains(markers::TEASER_REST_CONTENT),
        "{}",
        r.markdown
    );
    let r = fetch(&env, &with(&env, "/teaser-article", Render::Never))
        .await
        .unwrap();
    assert!(r.markdown.contains("harbour board"), "{}", r.markdown);
    assert!(!r.markdown.contains(markers::TEASER_REST_CONTENT));
    assert!(
        r.warnings.iter().any(|w| w.contains("teaser of")),
        "{:?}",
        r.warnings
    );
}

/// An article a web component keeps in its open shadow root reaches the
/// Markdown (what the component's own styles hide does not), rendered by
/// default and by `auto`, which sees an empty custom element and a script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_article_in_an_open_shadow_root_reaches_the_markdown() {
    let env = Env::start().await;
    for render in [Render::Always, Render::Auto] {
        let r = fetch(&env, &with(&env, "/shadow-article", render)).await.unwrap();
        assert!(r.rendered, "{render:?}: {:?}", r.render_reason);
        assert!(
            r.markdown.contains("SHADOW-ARTICLE-TEXT"),
            "{render:?}: {}",
            r.markdown
        );
        assert!(r.markdown.contains("SHADOW-BYLINE"), "{render:?}: {}", r.markdown);
        assert!(
            !r.markdown.contains("SHADOW-HIDDEN-TEXT"),
            "{render:?}: {}",
            r.markdown
        );
    }
}

/// What the browser paints of web components is what is read: a closed
/// shadow root's content (and a closed one inside it), each slot's
/// assigned light nodes in place of its fallback, an unfilled slot's
/// fallback; not the light nodes no slot takes, which a browser does not
/// paint. `auto` renders the page: its served HTML holds only the fallback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_shadow_roots_are_read_and_light_nodes_no_slot_takes_are_not() {
    let env = Env::start().await;
    for render in [Render::Always, Render::Auto] {
        // The whole page: the main content is the review alone.
        let mut spec = with(&env, "/shadow-closed", render);
        spec.content = oxwright_jobs::ContentMode::Full;
        let r = fetch(&env, &spec).await.unwrap();
        assert!(r.rendered, "{render:?}: {:?}", r.render_reason);
        for painted in [
            "CLOSED-SHADOW-TEXT",
            "CLOSED-SLOTTED-AUTHOR",
            "NESTED-CLOSED-TEXT",
            "OPEN-SHADOW-TEXT",
            "OPEN-SLOTTED-TITLE",
            "OPEN-UNFILLED-SLOT-DEFAULT",
        ] {
            assert!(
                r.markdown.contains(painted),
                "{render:?}: {painted} missing: {}",
                r.markdown
            );
        }
        for unpainted in [
            "SHADOW-UNPAINTED-FALLBACK",
            "CLOSED-SLOT-DEFAULT",
            "OPEN-UNPAINTED-FALLBACK",
            "OPEN-SLOT-DEFAULT",
        ] {
            assert!(
                !r.markdown.contains(unpainted),
                "{render:?}: {unpainted} read: {}",
                r.markdown
            );
        }
    }
}

/// Content a page puts in after its `load` event, from a timer (800 ms)
/// and from a request the server answers late (900 ms), reaches the
/// Markdown: the `ready` wait waits for work the page has scheduled, not
/// only for the DOM to be quiet a while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_the_page_schedules_after_load_reaches_the_markdown() {
    let env = Env::start().await;
    for render in [Render::Always, Render::Auto] {
        let r = fetch(&env, &with(&env, "/late-content", render)).await.unwrap();
        assert!(r.rendered, "{render:?}: {:?}", r.render_reason);
        for marker in [markers::LATE_TIMER_CONTENT, markers::LATE_FETCH_CONTENT] {
            assert!(
                r.markdown.contains(marker),
                "{render:?} lacks {marker}: {}",
                r.markdown
            );
        }
        assert!(r.warnings.is_empty(), "{render:?}: {:?}", r.warnings);
    }
}

/// A script that sends the page elsewhere before it has loaded — to
/// `https://` on its own host (a host that speaks no TLS), or to a host
/// that does not resolve — does not lose the page: the document that
/// arrived is read, in every render mode, with a warning naming the URL the
/// page tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_https_upgrade_keeps_the_document_that_arrived() {
    let env = Env::start().await;
    let upgrade = env.site.url("/upgrade-https").replace("http://", "https://");
    let cases = [
        ("/upgrade-https", upgrade.as_str()),
        ("/moves-to-nowhere", "http://page-moved.invalid/moves-to-nowhere"),
    ];
    for (path, tried) in cases {
        for render in [Render::Always, Render::Auto, Render::Never] {
            let mut spec = with(&env, path, render);
            spec.retry_count = 0;
            let r = fetch(&env, &spec)
                .await
                .unwrap_or_else(|e| panic!("{path} {render:?}: {e}"));
            assert!(
                r.markdown.contains("UPGRADE-ARTICLE-TEXT"),
                "{path} {render:?}: {}",
                r.markdown
            );
            assert_eq!(r.final_url, env.site.url(path), "{path} {render:?}");
            if render != Render::Never {
                assert!(
                    r.warnings.iter().any(|w| w.contains(tried)),
                    "{path} {render:?}: {:?}",
                    r.warnings
                );
            }
        }
    }
    // `auto` rendered it (a script redirect on a short page) with the body
    // it had read, and read that body again when the render stopped.
    env.site.clear_requests();
    let r = fetch(&env, &with(&env, "/upgrade-https", Render::Auto))
        .await
        .unwrap();
    assert!(r.render_reason.is_some(), "{r:?}");
    assert_eq!(env.site.hits("/upgrade-https"), 1, "{:?}", env.site.requests());
}

/// A prompt meta refresh to a page on the same host is followed by the
/// served read, as a browser follows it: the target is read (here without
/// a browser, since it holds the page), and its URL is the final one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_read_follows_a_prompt_meta_refresh() {
    let env = Env::start().await;
    let (path, phrase) = oxwright_fixtures::ARTICLE_PHRASES[0];
    for render in [Render::Auto, Render::Never] {
        let r = fetch(&env, &with(&env, "/meta-refresh", render)).await.unwrap();
        assert!(!r.rendered, "{render:?}: {:?}", r.render_reason);
        assert_eq!(r.final_url, env.site.url(path), "{render:?}");
        assert!(r.markdown.contains(phrase), "{render:?}: {}", r.markdown);
    }
}

/// A meta refresh due a second after `load` is waited for in every render
/// mode: the page it leads to is the one read, and its URL the final one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_meta_refresh_due_after_load_is_followed_in_every_mode() {
    let env = Env::start().await;
    let (path, phrase) = oxwright_fixtures::ARTICLE_PHRASES[0];
    for render in [Render::Always, Render::Auto, Render::Never] {
        let r = fetch(&env, &with(&env, "/meta-refresh-late", render))
            .await
            .unwrap();
        assert_eq!(r.final_url, env.site.url(path), "{render:?}");
        assert!(r.markdown.contains(phrase), "{render:?}: {}", r.markdown);
    }
}
