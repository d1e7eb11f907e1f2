//! `--extract SCHEMA.json --learn`: on 50 product pages of one shop whose
//! template changes at page 30, the model reads the first page and writes
//! the CSS schema for it, the pages after it are read by that schema with
//! no model call, and the change is learned once.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::{ScriptedLlm, shop_model, shop_record};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "price": {"type": "number"}
        },
        "required": ["name", "price"]
    })
}

fn results(store: &Path) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(store.join("jobs").join("fetch"))
        .unwrap()
        .flatten()
    {
        let path = entry.path().join("result.json");
        if let Ok(body) = std::fs::read(&path) {
            let result: Value = serde_json::from_slice(&body).unwrap();
            out.insert(result["url"].as_str().unwrap().to_string(), result);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_pages_cost_the_model_one_page_and_one_template_change() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    llm.respond_with(shop_model);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out");
    let schema_file = dir.path().join("product.json");
    std::fs::write(&schema_file, schema().to_string()).unwrap();
    let urls: Vec<String> = (1..=50).map(|n| site.url(&format!("/shop/p/{n}"))).collect();
    let list = dir.path().join("urls.txt");
    std::fs::write(&list, urls.join("\n")).unwrap();

    let (addr, base) = (site.addr().to_string(), llm.base_url());
    let (store_arg, schema_arg, list_arg) = (store.clone(), schema_file.clone(), list.clone());
    let run = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_oxwright"))
            .args(["--allow-host", &addr, "--out"])
            .arg(&store_arg)
            .args(["batch", "--render", "never", "--learn", "--extract"])
            .arg(&schema_arg)
            .arg(&list_arg)
            .env("OXWRIGHT_LLM_BASE_URL", base)
            .env("OXWRIGHT_LLM_MODEL", "extractor-small")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    // One page of the old template: one reading and one schema written;
    // one of the new template: the same again. Nothing else asked the model.
    let calls = llm.received();
    let learning = calls
        .iter()
        .filter(|c| c.prompt().contains("You write CSS extraction schemas"))
        .count();
    assert_eq!((calls.len(), learning), (4, 2), "calls to the model");

    let results = results(&store);
    assert_eq!(results.len(), 50);
    let mut by_model = Vec::new();
    for (n, url) in (1..=50).zip(&urls) {
        let r = &results[url];
        assert_eq!(r["extract"], shop_record(n), "{url}: {r}");
        let method = r["extraction"]["method"].as_str().unwrap();
        if method == "llm" {
            by_model.push(n);
            assert!(r["extraction"]["learned_schema"].is_string(), "{r}");
        } else {
            assert_eq!(method, "learned", "{url}");
            assert_eq!(r["extraction"]["llm_calls"], 0);
        }
    }
    // Pages run a few at a time: the first of each template to take the
    // pattern's lock is the one the model reads.
    assert!(
        by_model.len() == 2 && by_model[0] < 30 && by_model[1] >= 30,
        "the pages the model read: {by_model:?}"
    );

    // The schemas are kept under the pattern, newest first.
    let kept = results[&urls[49]]["extraction"]["learned_schema"]
        .as_str()
        .unwrap()
        .to_string();
    let kept: Value = serde_json::from_slice(&std::fs::read(store.join(kept)).unwrap()).unwrap();
    assert_eq!(kept["pattern"], format!("{}/shop/p/*", site.addr()));
    let names: Vec<&str> = kept["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["New", "Old"]);
}
