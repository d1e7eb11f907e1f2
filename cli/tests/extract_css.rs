//! `--extract-css SCHEMA.json`: records read out of a listing by a
//! crawl4ai-shaped schema, in `fetch`, `batch` and `crawl`, from the served
//! HTML and from the page a browser drew; a bad schema refused by path
//! before any page is fetched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use oxwright_fixtures::FixtureServer;
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "name": "Catalogue",
        "baseSelector": "article.card",
        "baseFields": [{"name": "sku", "type": "attribute", "attribute": "data-sku"}],
        "fields": [
            {"name": "title", "selector": ".title", "type": "text"},
            {"name": "price", "selector": ".price b", "type": "regex", "pattern": "\\$([0-9.]+)"},
            {"name": "link", "selector": "a.more", "type": "attribute", "attribute": "href"},
            {"name": "status", "selector": ".sold-out", "type": "text", "default": "in stock", "transform": "lowercase"},
            {"name": "maker", "selector": ".maker", "type": "nested", "fields": [
                {"name": "name", "selector": ".name", "type": "text"},
                {"name": "country", "selector": ".country", "type": "text"}
            ]},
            {"name": "tags", "selector": ".tags li", "type": "list", "fields": [
                {"name": "tag", "type": "text", "transform": "lowercase"}
            ]},
            {"name": "reviews", "selector": ".review", "type": "nested_list", "fields": [
                {"name": "stars", "selector": ".stars", "type": "text"},
                {"name": "text", "selector": "p", "type": "text"},
                {"name": "by", "selector": ".by", "type": "text", "default": "anonymous"}
            ]}
        ]
    })
}

fn kettle(reviews: Value) -> Value {
    json!({
        "sku": "K-100", "title": "Blue Enamel Kettle", "price": "24.50", "link": "/listing/item/k-100",
        "status": "in stock", "maker": {"name": "Acme", "country": "Portugal"},
        "tags": [{"tag": "kitchen"}, {"tag": "steel"}, {"tag": "hob"}], "reviews": reviews
    })
}

fn mug() -> Value {
    json!({
        "sku": "M-200", "title": "Stoneware Mug", "price": "9.00", "link": "/listing/item/m-200",
        "status": "in stock", "maker": {"name": "Clayworks"}, "tags": [{"tag": "desk"}], "reviews": []
    })
}

/// The first listing page's records, as the schema reads them.
fn page_one() -> Vec<Value> {
    vec![
        kettle(json!([
            {"stars": "5", "text": "Boils fast, whistles loud.", "by": "ann"},
            {"stars": "3", "text": "The handle gets hot.", "by": "anonymous"}
        ])),
        mug(),
        json!({
            "sku": "T-300", "title": "Tea Strainer", "link": "/listing/item/t-300",
            "status": "sold out", "maker": {}, "tags": [], "reviews": []
        }),
    ]
}

fn page_two() -> Vec<Value> {
    vec![json!({
        "sku": "P-400", "title": "Glass Teapot", "price": "31.00", "link": "/listing/item/p-400",
        "status": "in stock", "maker": {"name": "Vitro", "country": "Czechia"},
        "tags": [{"tag": "tea"}, {"tag": "glass"}],
        "reviews": [{"stars": "4", "text": "Lovely to watch the leaves.", "by": "raj"}]
    })]
}

fn write_schema(dir: &Path, schema: &Value) -> PathBuf {
    let path = dir.join("catalogue.json");
    std::fs::write(&path, serde_json::to_vec_pretty(schema).unwrap()).unwrap();
    path
}

async fn oxwright(site: &FixtureServer, store: &Path, args: Vec<String>) -> Output {
    let addr = site.addr().to_string();
    let store = store.to_path_buf();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_oxwright"))
            .args(["--allow-host", &addr, "--out"])
            .arg(&store)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn ok(run: &Output) -> String {
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout.clone()).unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_reads_the_records_served_and_rendered() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema_file = write_schema(dir.path(), &schema());
    let schema_arg = schema_file.to_str().unwrap();
    let store = dir.path().join("out");

    // Served: the records printed as the command's output.
    let url = site.url("/listing");
    let out = ok(&oxwright(
        &site,
        &store,
        args(&["fetch", "--render", "never", "--extract-css", schema_arg, &url]),
    )
    .await);
    let printed: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(printed, page_one());

    // Rendered, with --json: the result carries them; the drawn cards are read.
    let url = site.url("/listing/scripted");
    let out = ok(&oxwright(
        &site,
        &store,
        args(&[
            "fetch",
            "--json",
            "--render",
            "always",
            "--wait-for",
            "article.card",
            "--extract-css",
            schema_arg,
            &url,
        ]),
    )
    .await);
    let result: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(result["rendered"], true);
    assert_eq!(result["extract"], json!([kettle(json!([])), mug()]), "{result}");

    // The same page served holds no cards: no records, and a warning.
    let run = oxwright(
        &site,
        &store,
        args(&[
            "fetch",
            "--json",
            "--render",
            "never",
            "--extract-css",
            schema_arg,
            &url,
        ]),
    )
    .await;
    let result: Value = serde_json::from_str(ok(&run).trim()).unwrap();
    assert_eq!(result["extract"], json!([]));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("baseSelector \"article.card\" matched nothing"),
        "{stderr}"
    );

    // --keep writes extract.json beside result.json.
    let url = site.url("/listing/2");
    let run = oxwright(
        &site,
        &store,
        args(&[
            "fetch",
            "--keep",
            "--render",
            "never",
            "--extract-css",
            schema_arg,
            &url,
        ]),
    )
    .await;
    ok(&run);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let key = stderr
        .lines()
        .find_map(|l| l.strip_prefix("artefacts: "))
        .and_then(|keys| keys.split(", ").find(|k| k.ends_with("extract.json")))
        .unwrap_or_else(|| panic!("no extract.json among the artefacts: {stderr}"));
    let kept: Vec<Value> = serde_json::from_slice(&std::fs::read(store.join(key)).unwrap()).unwrap();
    assert_eq!(kept, page_two());
}

/// Each page's records, by the path of its final URL, from a run's manifest.
fn records_by_path(store: &Path, summary: &Value) -> std::collections::BTreeMap<String, Value> {
    let manifest = std::fs::read_to_string(store.join(summary["manifest"].as_str().unwrap())).unwrap();
    manifest
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|line| {
            let key = line["artifacts"]
                .as_array()
                .and_then(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .find(|k| k.ends_with("result.json"))
                })
                .unwrap_or_else(|| panic!("no result.json: {line}"));
            let result: Value = serde_json::from_slice(&std::fs::read(store.join(key)).unwrap()).unwrap();
            let url = url::Url::parse(result["final_url"].as_str().unwrap()).unwrap();
            (url.path().to_string(), result["extract"].clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_and_crawl_read_every_pages_records() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema_file = write_schema(dir.path(), &schema());
    let schema_arg = schema_file.to_str().unwrap();
    let urls = dir.path().join("urls.txt");
    std::fs::write(
        &urls,
        format!("{}\n{}\n", site.url("/listing"), site.url("/listing/2")),
    )
    .unwrap();

    let store = dir.path().join("batch");
    let out = ok(&oxwright(
        &site,
        &store,
        args(&[
            "batch",
            "--json",
            "--render",
            "never",
            "--extract-css",
            schema_arg,
            urls.to_str().unwrap(),
        ]),
    )
    .await);
    let summary: Value = serde_json::from_str(&out).unwrap();
    let got = records_by_path(&store, &summary);
    assert_eq!(got["/listing"], json!(page_one()), "{got:?}");
    assert_eq!(got["/listing/2"], json!(page_two()), "{got:?}");

    // A crawl from the first page follows its next link; both are read.
    let store = dir.path().join("crawl");
    let out = ok(&oxwright(
        &site,
        &store,
        args(&[
            "crawl",
            "--json",
            "--render",
            "never",
            "--max-depth",
            "1",
            "--include-path",
            "/listing/*",
            "--extract-css",
            schema_arg,
            &site.url("/listing"),
        ]),
    )
    .await);
    let summary: Value = serde_json::from_str(&out).unwrap();
    let got = records_by_path(&store, &summary);
    assert_eq!(got["/listing"], json!(page_one()), "{got:?}");
    assert_eq!(got["/listing/2"], json!(page_two()), "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_schema_is_refused_by_path_before_any_page_is_fetched() {
    let site = FixtureServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out");
    let url = site.url("/listing");
    let mut bad = schema();
    bad["fields"][5]["fields"][0]["type"] = json!("txt");
    let bad_file = write_schema(dir.path(), &bad);
    let run = oxwright(
        &site,
        &store,
        args(&["fetch", "--extract-css", bad_file.to_str().unwrap(), &url]),
    )
    .await;
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("fields[5].fields[0].type: unknown type \"txt\""),
        "{stderr}"
    );

    let not_json = dir.path().join("broken.json");
    std::fs::write(&not_json, "{\"baseSelector\": ").unwrap();
    let run = oxwright(
        &site,
        &store,
        args(&["fetch", "--extract-css", not_json.to_str().unwrap(), &url]),
    )
    .await;
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("not JSON"),
        "{run:?}"
    );

    assert_eq!(
        site.hits("/listing"),
        0,
        "a page was fetched for a refused schema"
    );
}
