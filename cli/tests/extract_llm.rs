//! `--extract SCHEMA.json`: a page read into a JSON Schema's shape through
//! the `[llm]` endpoint (the scripted server here), the answer checked
//! and repaired, in `fetch` and `batch`; answers that never fit end
//! `extraction_failed`; a bad schema, or no endpoint, is refused before
//! any page is fetched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use oxwright_fixtures::FixtureServer;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "heading": {"type": "string"},
            "products": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "price": {"type": "number"}
                    },
                    "required": ["title"]
                }
            }
        },
        "required": ["heading", "products"]
    })
}

fn answer() -> Value {
    json!({
        "heading": "Kettles and mugs",
        "products": [
            {"title": "Blue Enamel Kettle", "price": 24.5},
            {"title": "Stoneware Mug", "price": 9.0},
            {"title": "Tea Strainer"}
        ]
    })
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    path
}

/// Runs the binary against the fixture site, with the scripted LLM as
/// its `[llm]` endpoint when one is given.
async fn oxwright(site: &FixtureServer, llm: Option<&ScriptedLlm>, store: &Path, args: &[&str]) -> Output {
    let addr = site.addr().to_string();
    let store = store.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let llm = llm.map(ScriptedLlm::base_url);
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxwright"));
        cmd.args(["--allow-host", &addr, "--out"]).arg(&store).args(args);
        for var in [
            "OXWRIGHT_LLM_BASE_URL",
            "OXWRIGHT_LLM_MODEL",
            "OXWRIGHT_LLM__BASE_URL",
            "OXWRIGHT_LLM__MODEL",
            "OPENAI_API_KEY",
        ] {
            cmd.env_remove(var);
        }
        if let Some(base) = llm {
            cmd.env("OXWRIGHT_LLM_BASE_URL", base)
                .env("OXWRIGHT_LLM_MODEL", "extractor-small");
        }
        cmd.output().unwrap()
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_returns_a_valid_answer_as_it_is() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema_file = write(dir.path(), "listing.json", &schema());
    let store = dir.path().join("out");
    llm.push(Reply::text(format!("```json\n{}\n```", answer())));
    let url = site.url("/listing");
    let out = ok(&oxwright(
        &site,
        Some(&llm),
        &store,
        &[
            "fetch",
            "--render",
            "never",
            "--extract",
            schema_file.to_str().unwrap(),
            "--extract-prompt",
            "Prices as numbers, without the currency.",
            &url,
        ],
    )
    .await);
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed, answer());

    let calls = llm.received();
    assert_eq!(calls.len(), 1);
    let body = calls[0].json();
    assert_eq!(body["model"], "extractor-small");
    // The schema goes as the endpoint's structured output and in the prompt,
    // with the page's Markdown and the instructions.
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema());
    let prompt = calls[0].prompt();
    for part in [
        "\"required\":[\"heading\",\"products\"]",
        "Prices as numbers, without the currency.",
        "Stoneware Mug",
        "whistles loud",
    ] {
        assert!(prompt.contains(part), "{part:?} not in the prompt:\n{prompt}");
    }
    assert!(
        !prompt.contains("a string, not a card"),
        "a script's text reached the prompt"
    );

    // An endpoint that refuses response_format is asked again without it;
    // --json shows what the reading cost.
    llm.push(Reply::Status(
        400,
        "{\"error\": \"response_format is not supported\"}".into(),
    ));
    llm.push(Reply::json(answer()));
    let out = ok(&oxwright(
        &site,
        Some(&llm),
        &store,
        &[
            "fetch",
            "--json",
            "--render",
            "never",
            "--extract",
            schema_file.to_str().unwrap(),
            &url,
        ],
    )
    .await);
    let result: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(result["extract"], answer());
    assert_eq!(result["extraction"]["method"], "llm");
    assert_eq!(result["extraction"]["llm_calls"], 1);
    assert_eq!(result["extraction"]["parts"], 1);
    assert!(
        result["extraction"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{result}"
    );
    let calls = llm.received();
    assert_eq!(calls.len(), 3);
    assert!(calls[1].json().get("response_format").is_some());
    assert!(calls[2].json().get("response_format").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_answer_is_repaired_on_the_second_call_in_a_batch() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema_file = write(dir.path(), "listing.json", &schema());
    let store = dir.path().join("out");
    let mut broken = answer();
    broken["products"][1]["price"] = json!("$9.00");
    llm.push(Reply::json(broken));
    llm.push(Reply::json(answer()));
    let urls = dir.path().join("urls.txt");
    std::fs::write(&urls, format!("{}\n", site.url("/listing"))).unwrap();
    let run = oxwright(
        &site,
        Some(&llm),
        &store,
        &[
            "batch",
            "--render",
            "never",
            "--extract",
            schema_file.to_str().unwrap(),
            urls.to_str().unwrap(),
        ],
    )
    .await;
    ok(&run);
    let calls = llm.received();
    assert_eq!(calls.len(), 2);
    let repair = calls[1].prompt();
    assert!(repair.contains("/products/1/price"), "{repair}");
    assert!(
        repair.contains("$9.00"),
        "the first answer is shown back: {repair}"
    );

    let (result, extract) = kept(&store, "result.json", "extract.json");
    let result: Value = serde_json::from_slice(&result).unwrap();
    assert_eq!(result["extraction"]["llm_calls"], 2, "{result}");
    let extract: Value = serde_json::from_slice(&extract).unwrap();
    assert_eq!(extract, answer());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_never_fit_end_extraction_failed_after_three_calls() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema_file = write(dir.path(), "listing.json", &schema());
    let store = dir.path().join("out");
    llm.respond_with(|_| Reply::text("The page lists a kettle, a mug and a strainer."));
    let url = site.url("/listing");
    let run = oxwright(
        &site,
        Some(&llm),
        &store,
        &[
            "fetch",
            "--keep",
            "--render",
            "never",
            "--extract",
            schema_file.to_str().unwrap(),
            &url,
        ],
    )
    .await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert_eq!(llm.received().len(), 3, "one call and two repairs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("extraction_failed") && stderr.contains("after 3 calls"),
        "{stderr}"
    );
    let error = std::fs::read(find(&store, "error.json").expect("an error.json")).unwrap();
    let error: Value = serde_json::from_slice(&error).unwrap();
    assert_eq!(error["error"]["kind"], "extraction_failed", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("holds no JSON value"), "{message}");
    assert!(
        message.contains("a kettle, a mug and a strainer"),
        "the last answer: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_schema_or_no_endpoint_is_refused_before_any_page_is_fetched() {
    let site = FixtureServer::start().await.unwrap();
    let llm = ScriptedLlm::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("out");
    let url = site.url("/listing");
    let good = write(dir.path(), "good.json", &schema());
    let mut bad = schema();
    bad["properties"]["products"]["items"]["properties"]["price"]["type"] = json!("money");
    let bad = write(dir.path(), "bad.json", &bad);
    let css = write(
        dir.path(),
        "css.json",
        &json!({"baseSelector": "article", "fields": [{"name": "t", "type": "text"}]}),
    );

    let cases: [(&[&str], &str); 4] = [
        (
            &["fetch", "--extract", bad.to_str().unwrap(), &url],
            "/properties/products/items/properties/price/type",
        ),
        (
            &[
                "fetch",
                "--extract",
                good.to_str().unwrap(),
                "--extract-css",
                css.to_str().unwrap(),
                &url,
            ],
            "give one",
        ),
        (&["fetch", "--extract-prompt", "Prices", &url], "give extract too"),
        (
            &["batch", "--extract", bad.to_str().unwrap(), "/dev/null"],
            "not a valid JSON Schema",
        ),
    ];
    for (args, says) in cases {
        let run = oxwright(&site, Some(&llm), &store, args).await;
        assert_eq!(run.status.code(), Some(2), "{args:?}: {run:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }

    // No [llm] endpoint: refused before the page, with what to set.
    for command in ["fetch", "crawl"] {
        let run = oxwright(
            &site,
            None,
            &store,
            &[command, "--extract", good.to_str().unwrap(), &url],
        )
        .await;
        assert_eq!(run.status.code(), Some(2), "{command}: {run:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains("extract needs an LLM endpoint"),
            "{command}: {stderr}"
        );
    }
    assert_eq!(
        site.hits("/listing"),
        0,
        "a page was fetched for a refused request"
    );
    assert!(llm.received().is_empty());
}

/// The first file named `name` under `dir`.
fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

/// Two artefacts of the one job under `store`.
fn kept(store: &Path, a: &str, b: &str) -> (Vec<u8>, Vec<u8>) {
    let jobs = store.join("jobs").join("fetch");
    let job = std::fs::read_dir(&jobs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(a).exists())
        .unwrap_or_else(|| panic!("no job with {a} under {}", jobs.display()));
    (
        std::fs::read(job.join(a)).unwrap(),
        std::fs::read(job.join(b)).unwrap(),
    )
}
