//! A fetch through a per-job upstream proxy, against
//! real Chromium and fixture proxies: the HTTP proxy's `CONNECT` and the
//! SOCKS5 proxy's target are the fixture site, with the proxy's
//! credentials; wrong credentials are a typed error that never repeats
//! them; the URL policy still judges every target before the proxy sees
//! it; the next job on the same pool goes out directly; a shared context
//! refuses a proxy.

mod common;

use common::{Env, pool_config};
use oxwright_browser::Isolation;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::{ARTICLE_PHRASES, FixtureProxy, ProxyKind};
use oxwright_jobs::{ErrorKind, FetchSpec, ProxyUrl};

const USER: &str = "crawler";
const PASSWORD: &str = "pr0xy-s3cret";

fn through(env: &Env, path: &str, proxy: &str) -> FetchSpec {
    let mut spec = env.spec(path);
    spec.proxy = Some(ProxyUrl(proxy.to_owned()));
    spec.retry_count = 0;
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_go_through_the_jobs_http_or_socks5_proxy() {
    let env = Env::start().await;
    let (path, phrase) = ARTICLE_PHRASES[2];
    let site = env.site.addr().to_string();
    for kind in [ProxyKind::Http, ProxyKind::Socks5] {
        let proxy = FixtureProxy::start(kind, Some((USER, PASSWORD))).await.unwrap();
        let before = env.site.hits(path);
        let out = fetch_page(&env.pool, &env.policy, &through(&env, path, &proxy.url()))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(out.result.markdown.contains(phrase), "{kind:?}");
        assert!(env.site.hits(path) > before, "the site served the page");
        let targets = proxy.targets();
        assert!(
            !targets.is_empty() && targets.iter().all(|t| *t == site),
            "{kind:?}: every connection went through the proxy to the site: {targets:?}"
        );
        // A plain-HTTP page goes to an HTTP proxy whole, in absolute form
        // (proxies such as Squid refuse CONNECT to port 80); SOCKS5 tunnels.
        let tunnels = match kind {
            ProxyKind::Http => 0,
            ProxyKind::Socks5 => targets.len(),
        };
        assert_eq!(proxy.tunnels(), tunnels, "{kind:?}: {targets:?}");

        // Wrong credentials: a typed, permanent error without the secret.
        let wrong = proxy.url_with(Some((USER, "not-the-password")));
        let err = fetch_page(&env.pool, &env.policy, &through(&env, path, &wrong))
            .await
            .expect_err("the proxy refuses wrong credentials");
        assert_eq!(err.kind, ErrorKind::InvalidInput, "{kind:?}: {err}");
        assert!(err.message.contains("proxy"), "{err}");
        assert!(!err.message.contains("not-the-password"), "{err}");
        assert!(proxy.refused() >= 1);

        // The next job without a proxy goes out directly.
        let carried = proxy.targets().len();
        fetch_page(&env.pool, &env.policy, &env.spec(path)).await.unwrap();
        assert_eq!(
            proxy.targets().len(),
            carried,
            "{kind:?}: no proxy for a job without one"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_judges_before_the_proxy_and_bad_proxies_are_refused() {
    let env = Env::start().await;
    let proxy = FixtureProxy::start(ProxyKind::Http, None).await.unwrap();
    // A private address stays refused: the proxy never hears of it.
    let mut spec = through(&env, "/", &proxy.url());
    spec.url = "http://10.20.30.40/".parse().unwrap();
    let err = fetch_page(&env.pool, &env.policy, &spec)
        .await
        .expect_err("a private address is refused");
    assert_eq!(err.kind, ErrorKind::PolicyDenied, "{err}");
    assert!(proxy.targets().is_empty(), "{:?}", proxy.targets());

    for bad in [
        "https://proxy.example:443",
        "ftp://proxy.example:21",
        "http://proxy.example:8080/path",
        "proxy.example:8080",
    ] {
        let spec = through(&env, "/", bad);
        let err = spec.validate().expect_err(bad);
        assert_eq!(err.kind, ErrorKind::InvalidInput, "{bad}: {err}");
    }
    let spec = through(&env, "/", "gopher://user:hunter2@proxy.example:70");
    let err = spec.validate().unwrap_err();
    assert!(!err.message.contains("hunter2"), "{err}");
    assert!(
        !format!("{spec:?}").contains("hunter2"),
        "Debug hides the credentials"
    );

    // A shared context has one way out for every job: a proxy is refused.
    let shared = Env::with_config(oxwright_browser::PoolConfig {
        isolation: Isolation::Shared,
        ..pool_config()
    })
    .await;
    let err = fetch_page(&shared.pool, &shared.policy, &through(&shared, "/", &proxy.url()))
        .await
        .expect_err("a shared context refuses a proxy");
    assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
    assert!(err.message.contains("isolation"), "{err}");
}
