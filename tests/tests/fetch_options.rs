//! The fetch options against real Chromium and the fixture
//! site: metadata, links and images in the result; `include` / `exclude`
//! and overlay removal in the Markdown; request shaping as the fixture
//! server received it and as the page saw it.

mod common;

use std::sync::Arc;

use common::Env;
use oxwright_browser::UrlPolicy;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::RecordedRequest;
use oxwright_fixtures::options::{
    CONSENT_ARTICLE, CONSENT_BANNER, CONSENT_RECIPE, CONSENT_WALL, META_BODY, META_KEEP, META_KEEP_TWO,
    META_PROMO,
};
use oxwright_jobs::{
    BasicAuth, ContentMode, CookieSpec, ErrorKind, FetchResult, FetchSpec, Format, LinkStyle, Render,
    Viewport,
};

async fn fetch(env: &Env, spec: &FetchSpec) -> FetchResult {
    fetch_page(&env.pool, &env.policy, spec)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", spec.url))
        .result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_links_and_images_are_read_and_made_absolute() {
    let env = Env::start().await;
    let r = fetch(&env, &env.spec("/options/meta")).await;
    let m = &r.metadata;
    assert_eq!(r.title, "Metadata fixture");
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type.as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(r.final_url, env.site.url("/options/meta"));
    assert_eq!(
        m.description.as_deref(),
        Some("A page that states all of its metadata.")
    );
    assert_eq!(m.lang.as_deref(), Some("de-AT"));
    assert_eq!(
        m.canonical.as_deref(),
        Some(env.site.url("/options/meta?canonical=1").as_str())
    );
    assert_eq!(m.open_graph["og:title"], "OG title");
    assert_eq!(m.open_graph["og:type"], "article");
    assert_eq!(m.open_graph["og:image"], env.site.url("/assets/img/og.png"));
    assert_eq!(m.open_graph["og:url"], env.site.url("/options/meta"));
    assert_eq!(m.twitter["twitter:card"], "summary_large_image");
    assert_eq!(m.twitter["twitter:image"], env.site.url("/options/img/tw.png"));
    assert_eq!(m.meta["author"], "Ada Fixture");
    assert!(
        !m.meta.contains_key("og:title"),
        "cards are not repeated in meta: {:?}",
        m.meta
    );
    assert_eq!(
        m.json_ld.len(),
        1,
        "the block that does not parse is left out: {:?}",
        m.json_ld
    );
    assert_eq!(m.json_ld[0]["@graph"][1]["@type"], "NewsArticle");
    assert_eq!(m.published.as_deref(), Some("2026-11-01T08:00:00Z"));
    assert_eq!(
        m.modified.as_deref(),
        Some("2026-11-20T10:30:00Z"),
        "from JSON-LD"
    );

    let internal: Vec<&str> = r.links.internal.iter().map(|l| l.url.as_str()).collect();
    let external: Vec<&str> = r.links.external.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(
        internal,
        [env.site.url("/"), env.site.url("/articles/one.html")],
        "deduped, fragments cut, the page itself and mailto left out"
    );
    assert_eq!(r.links.internal[1].text, "the first article");
    assert_eq!(external, ["https://example.org/elsewhere?q=1"]);
    let images: Vec<(&str, &str)> = r
        .images
        .iter()
        .map(|i| (i.src.as_str(), i.alt.as_str()))
        .collect();
    assert_eq!(
        images,
        [
            (env.site.url("/assets/img/one.png").as_str(), "First picture"),
            (env.site.url("/options/img/lazy.png").as_str(), "Lazy picture"),
        ]
    );
    // Response headers, as asked (any case; absent ones left out).
    let mut spec = env.spec("/options/meta");
    spec.response_headers = vec!["Content-Type".into(), "X-Not-Sent".into()];
    let asked = fetch(&env, &spec).await;
    assert_eq!(
        asked.metadata.response_headers,
        [("content-type".to_string(), "text/html; charset=utf-8".to_string())].into()
    );
    assert!(r.metadata.response_headers.is_empty(), "none unless asked");
    // Always written, as lists, even when a page has none.
    let plain = fetch(&env, &env.spec("/empty-body")).await;
    let json = serde_json::to_value(&plain).unwrap();
    assert_eq!(json["links"], serde_json::json!({"internal": [], "external": []}));
    assert_eq!(json["images"], serde_json::json!([]));
    assert!(json["metadata"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_style_text_keeps_a_links_words_and_leaves_its_url_to_the_links() {
    let env = Env::start().await;
    let inline = fetch(&env, &env.spec("/options/meta")).await;
    let target = env.site.url("/articles/one.html");
    assert!(
        inline
            .markdown
            .contains(&format!("[the first article]({target})")),
        "{}",
        inline.markdown
    );
    for render in [Render::Always, Render::Never] {
        let mut spec = env.spec("/options/meta");
        spec.link_style = LinkStyle::Text;
        spec.render = render;
        let r = fetch(&env, &spec).await;
        assert!(
            r.markdown.contains("the first article"),
            "{render:?}: {}",
            r.markdown
        );
        assert!(
            !r.markdown.contains("[the first article]") && !r.markdown.contains(target.as_str()),
            "{render:?}: {}",
            r.markdown
        );
        assert!(
            r.markdown.contains("![First picture]("),
            "images stay: {}",
            r.markdown
        );
        assert_eq!(r.links, inline.links, "{render:?}: the URLs are in the links");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_and_exclude_choose_what_becomes_markdown() {
    let env = Env::start().await;
    let mut spec = env.spec("/options/meta");
    spec.content = ContentMode::Full;
    let plain = fetch(&env, &spec).await;
    assert!(
        plain.markdown.contains(META_PROMO) && plain.markdown.contains("Home"),
        "{}",
        plain.markdown
    );

    spec.exclude = vec![".promo".into(), "nav".into()];
    let r = fetch(&env, &spec).await;
    assert!(
        !r.markdown.contains(META_PROMO) && !r.markdown.contains("Home"),
        "{}",
        r.markdown
    );
    assert!(r.markdown.contains(META_BODY) && r.markdown.contains(META_KEEP));
    assert_eq!(r.links.external.len(), 1, "links come from the whole page");

    let mut spec = env.spec("/options/meta");
    spec.include = vec![".keep".into()];
    let r = fetch(&env, &spec).await;
    assert!(
        r.markdown.contains(META_KEEP) && r.markdown.contains(META_KEEP_TWO),
        "{}",
        r.markdown
    );
    assert!(!r.markdown.contains(META_BODY), "{}", r.markdown);
    assert_eq!(r.markdown.matches("Nested keep").count(), 1, "{}", r.markdown);
    assert_eq!(
        r.content_mode,
        ContentMode::Full,
        "include replaces main-content detection"
    );
    assert!(
        r.markdown.find(META_KEEP) < r.markdown.find(META_KEEP_TWO),
        "document order"
    );

    spec.include = vec!["article".into()];
    spec.exclude = vec![".promo".into()];
    let r = fetch(&env, &spec).await;
    assert!(
        r.markdown.contains(META_BODY) && !r.markdown.contains(META_PROMO),
        "{}",
        r.markdown
    );

    spec.include = vec![".nothing-has-this".into()];
    spec.exclude = Vec::new();
    let r = fetch(&env, &spec).await;
    assert!(r.markdown.is_empty());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("no element matched include")),
        "{:?}",
        r.warnings
    );

    spec.include = vec!["p[".into()];
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("p["), "{err}");
    assert_eq!(err.attempts, 1, "a bad selector is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlays_go_in_main_mode_and_the_article_stays() {
    let env = Env::start().await;
    let r = fetch(&env, &env.spec("/options/consent")).await;
    let md = &r.markdown;
    assert!(md.contains(CONSENT_ARTICLE), "{md}");
    assert!(
        md.contains(CONSENT_RECIPE),
        "content whose class names cookies stays: {md}"
    );
    assert!(!md.contains(CONSENT_BANNER), "{md}");
    assert!(!md.contains(CONSENT_WALL), "{md}");

    // Main mode keeps them when asked to (the Markdown side alone cannot
    // tell them from the article), and so does the full page.
    let mut spec = env.spec("/options/consent");
    spec.keep_overlays = true;
    let kept = fetch(&env, &spec).await;
    assert!(kept.markdown.contains(CONSENT_BANNER), "{}", kept.markdown);
    assert!(kept.markdown.contains(CONSENT_ARTICLE));
    let mut spec = env.spec("/options/consent");
    spec.content = ContentMode::Full;
    let full = fetch(&env, &spec).await;
    assert!(full.markdown.contains(CONSENT_BANNER) && full.markdown.contains(CONSENT_WALL));
}

fn header<'a>(req: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn request<'a>(reqs: &'a [RecordedRequest], path: &str, query: &str) -> &'a RecordedRequest {
    reqs.iter()
        .find(|r| {
            r.path == path && (query.is_empty() || r.query.as_deref().is_some_and(|q| q.contains(query)))
        })
        .unwrap_or_else(|| panic!("no request for {path}?{query}: {reqs:#?}"))
}

/// The fixture site is also reached as `localhost`: another host, same server.
fn two_hosts(env: &Env) -> (Arc<UrlPolicy>, String) {
    let port = env.site.addr().port();
    let policy = Arc::new(UrlPolicy::allowing([
        format!("127.0.0.1:{port}").parse().unwrap(),
        format!("localhost:{port}").parse().unwrap(),
    ]));
    (policy, format!("http://localhost:{port}"))
}

fn shaped(spec: &mut FetchSpec) {
    spec.headers.insert("X-Team".into(), "blue".into());
    spec.cookies.push(CookieSpec {
        name: "session".into(),
        value: "abc123".into(),
        domain: None,
        path: None,
        secure: false,
    });
    spec.user_agent = Some("OxTest/1.0 (fixture)".into());
    spec.locale = Some("de-DE".into());
    spec.timezone = Some("Asia/Tokyo".into());
    spec.viewport = Some(Viewport {
        width: 800,
        height: 600,
    });
    spec.basic_auth = Some(BasicAuth {
        username: "ada".into(),
        password: "s3cret:pass".into(),
        host: None,
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_shaping_reaches_the_server_and_the_page_and_stays_on_its_host() {
    let env = Env::start().await;
    let (policy, other) = two_hosts(&env);
    let elsewhere = format!("{other}/image.png?from=other");
    let mut spec = env.spec(&format!(
        "/options/echo?other={}",
        url::form_urlencoded::byte_serialize(elsewhere.as_bytes()).collect::<String>()
    ));
    shaped(&mut spec);
    let r = fetch_page(&env.pool, &policy, &spec)
        .await
        .expect("shaped fetch")
        .result;
    let md = &r.markdown;
    for seen in [
        "TZ=Asia/Tokyo",
        "VIEWPORT=800x600",
        "LANG=de-DE",
        "UA=OxTest/1.0 (fixture)",
        "COOKIE=session=abc123",
    ] {
        assert!(md.contains(seen), "{seen} missing: {md}");
    }
    let reqs = env.site.requests();
    let auth = "Basic YWRhOnMzY3JldDpwYXNz"; // ada:s3cret:pass
    for (path, query) in [("/options/echo", "other="), ("/image.png", "from=echo")] {
        let req = request(&reqs, path, query);
        assert_eq!(header(req, "x-team"), Some("blue"), "{path}: {req:?}");
        assert_eq!(header(req, "authorization"), Some(auth), "{path}");
        assert_eq!(header(req, "user-agent"), Some("OxTest/1.0 (fixture)"), "{path}");
        assert!(
            header(req, "accept-language").is_some_and(|v| v.starts_with("de-DE")),
            "{path}: {req:?}"
        );
        assert!(
            header(req, "cookie").is_some_and(|v| v.contains("session=abc123")),
            "{path}: {req:?}"
        );
    }
    let foreign = request(&reqs, "/image.png", "from=other");
    assert!(
        header(foreign, "host").is_some_and(|h| h.starts_with("localhost")),
        "{foreign:?}"
    );
    assert_eq!(header(foreign, "x-team"), None, "headers stay on their host");
    assert_eq!(
        header(foreign, "authorization"),
        None,
        "credentials stay on their host"
    );
    assert!(
        !header(foreign, "cookie").unwrap_or("").contains("session"),
        "{foreign:?}"
    );
    assert_eq!(
        header(foreign, "user-agent"),
        Some("OxTest/1.0 (fixture)"),
        "the agent is the page's"
    );

    // The next job on the pool sees none of it.
    let plain = fetch(&env, &env.spec("/options/echo")).await;
    assert!(
        !plain.markdown.contains("Asia/Tokyo") && !plain.markdown.contains("OxTest"),
        "{}",
        plain.markdown
    );
    assert!(!plain.markdown.contains("session=abc123"), "{}", plain.markdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_and_headers_do_not_follow_a_redirect_to_another_host() {
    let env = Env::start().await;
    let (policy, other) = two_hosts(&env);
    let mut spec = env.spec(&common::redirect_to(&format!("{other}/options/echo?hop=2")));
    shaped(&mut spec);
    let r = fetch_page(&env.pool, &policy, &spec)
        .await
        .expect("redirected fetch")
        .result;
    assert!(r.final_url.starts_with(&other), "{}", r.final_url);
    let reqs = env.site.requests();
    let first = request(&reqs, "/redirect/to", "url=");
    assert!(
        header(first, "authorization").is_some() && header(first, "x-team").is_some(),
        "{first:?}"
    );
    let landed = request(&reqs, "/options/echo", "hop=2");
    assert_eq!(header(landed, "authorization"), None, "{landed:?}");
    assert_eq!(header(landed, "x-team"), None, "{landed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mobile_emulation_and_bad_shaping_values() {
    let env = Env::start().await;
    let mut spec = env.spec("/options/echo");
    spec.mobile = true;
    let r = fetch(&env, &spec).await;
    assert!(r.markdown.contains("VIEWPORT=390x844"), "{}", r.markdown);
    assert!(r.markdown.contains("TOUCH=5"), "{}", r.markdown);
    let ua = request(&env.site.requests(), "/options/echo", "")
        .headers
        .iter()
        .find(|(n, _)| n == "user-agent")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assert!(ua.contains("Mobile") && ua.contains("Android"), "{ua}");

    let mut spec = env.spec("/options/echo");
    spec.timezone = Some("Mars/Olympus_Mons".into());
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("Mars/Olympus_Mons"), "{err}");

    let mut spec = env.spec("/options/echo");
    spec.headers.insert("X-Bad".into(), "a\r\nInjected: 1".into());
    let err = fetch_page(&env.pool, &env.policy, &spec).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_add_cleaned_html_raw_html_text_and_a_full_page_screenshot() {
    let env = Env::start().await;
    let plain = fetch(&env, &env.spec("/options/meta")).await;
    assert!(plain.html.is_none() && plain.raw_html.is_none() && plain.text.is_none());
    let mut spec = env.spec("/options/meta");
    spec.formats = vec![
        Format::Html,
        Format::RawHtml,
        Format::Text,
        Format::ScreenshotFullPage,
    ];
    let out = fetch_page(&env.pool, &env.policy, &spec).await.expect("formats");
    let r = &out.result;
    assert_eq!(
        r.markdown, plain.markdown,
        "the Markdown is always there, unchanged"
    );
    let html = r.html.as_deref().unwrap();
    assert!(
        html.contains(META_BODY) && html.contains("<p") && !html.contains("<script"),
        "{html}"
    );
    assert!(
        html.contains(&env.site.url("/articles/one.html")),
        "URLs absolute: {html}"
    );
    let raw = r.raw_html.as_deref().unwrap();
    assert!(
        raw.contains("application/ld+json") && raw.contains("<nav>"),
        "as rendered"
    );
    let text = r.text.as_deref().unwrap();
    assert!(
        text.contains(META_BODY) && text.contains("the first article"),
        "{text}"
    );
    assert!(
        !text.contains("](") && !text.contains("# "),
        "no Markdown left: {text}"
    );
    // A full-page PNG is taller than the 800 px window when the page is long.
    let png = out.screenshot.expect("screenshot taken");
    assert_eq!(&png[1..4], b"PNG");
    let mut long = env.spec(oxwright_fixtures::ARTICLE_PATHS[0]);
    long.formats = vec![Format::ScreenshotFullPage];
    let shot = fetch_page(&env.pool, &env.policy, &long)
        .await
        .unwrap()
        .screenshot
        .unwrap();
    let long_height = u32::from_be_bytes(shot[20..24].try_into().unwrap());
    assert!(long_height > 800, "{long_height}");
    long.formats = vec![Format::Screenshot];
    let shot = fetch_page(&env.pool, &env.policy, &long)
        .await
        .unwrap()
        .screenshot
        .unwrap();
    assert!(
        u32::from_be_bytes(shot[20..24].try_into().unwrap()) <= 800,
        "the viewport only"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_budget_trims_the_markdown_at_a_block_boundary_and_says_so() {
    let env = Env::start().await;
    let path = oxwright_fixtures::ARTICLE_PATHS[0];
    let full = fetch(&env, &env.spec(path)).await;
    assert!(!full.truncated && full.tokens.markdown > 150);
    let mut spec = env.spec(path);
    spec.max_tokens = Some(150);
    let r = fetch(&env, &spec).await;
    assert!(r.truncated);
    assert!(
        r.tokens.markdown <= 150 && r.tokens.markdown > 0,
        "{:?}",
        r.tokens
    );
    assert_eq!(r.tokens.markdown, oxwright_markdown::count_tokens(&r.markdown));
    assert!(
        full.markdown.starts_with(&r.markdown) && full.markdown[r.markdown.len()..].starts_with("\n\n"),
        "cut where a block ends:\n{}",
        r.markdown
    );
    let note = format!("{} of {} tokens kept", r.tokens.markdown, full.tokens.markdown);
    assert!(r.warnings.iter().any(|w| w.contains(&note)), "{:?}", r.warnings);
    // A budget the page fits in changes nothing.
    spec.max_tokens = Some(1_000_000);
    let fits = fetch(&env, &spec).await;
    assert!(!fits.truncated && fits.markdown == full.markdown);
}
