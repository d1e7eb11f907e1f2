//! Resource blocking on page fetches: which sub-resources of `/media` reach
//! the fixture server with and without `block_resources`.

mod common;

use common::Env;
use oxwright_fetch::fetch_page;
use oxwright_fixtures::markers;
use oxwright_jobs::{BlockResource, ContentMode, FetchSpec, WaitUntil};

const IMAGES: &str = "/assets/img/";
const FONTS: &str = "/assets/fonts/";
const MEDIA: &str = "/assets/media/";
const STYLESHEET: &str = "/assets/style.css";

/// A spec for `/media` that waits for the network to settle, so every
/// sub-resource the page would load has been asked for.
fn media_spec(env: &Env, block: &[BlockResource]) -> FetchSpec {
    let mut spec = env.spec("/media");
    spec.wait_until = WaitUntil::Networkidle;
    spec.content = ContentMode::Full;
    spec.retry_count = 0;
    spec.block_resources = block.to_vec();
    spec
}

async fn fetch_media(env: &Env, block: &[BlockResource]) {
    env.site.clear_requests();
    let r = fetch_page(&env.pool, &env.policy, &media_spec(env, block))
        .await
        .unwrap_or_else(|e| panic!("/media with {block:?}: {e}"))
        .result;
    assert!(
        r.markdown.contains(markers::MEDIA_PAGE_CONTENT),
        "{block:?}: {}",
        r.markdown
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_blocking_every_sub_resource_is_fetched() {
    let env = Env::start().await;
    fetch_media(&env, &[]).await;
    for prefix in [STYLESHEET, IMAGES, FONTS, MEDIA] {
        assert!(
            env.site.hits(prefix) >= 1,
            "no request for {prefix}: {:?}",
            env.site.requests()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_images_fonts_and_media_never_reach_the_server() {
    let env = Env::start().await;
    fetch_media(
        &env,
        &[BlockResource::Image, BlockResource::Font, BlockResource::Media],
    )
    .await;
    for prefix in [IMAGES, FONTS, MEDIA] {
        assert_eq!(
            env.site.hits(prefix),
            0,
            "{prefix} was requested: {:?}",
            env.site.requests()
        );
    }
    assert_eq!(env.site.hits(STYLESHEET), 1, "stylesheet not fetched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_stylesheet_takes_its_font_with_it() {
    let env = Env::start().await;
    fetch_media(&env, &[BlockResource::Stylesheet]).await;
    assert_eq!(env.site.hits(STYLESHEET), 0, "stylesheet was requested");
    assert_eq!(env.site.hits(FONTS), 0, "font was requested");
    // The background image lives in the stylesheet too; <img> tags still load.
    assert_eq!(env.site.hits("/assets/img/bg.png"), 0);
    assert!(env.site.hits("/assets/img/a.png") >= 1);
}
