//! `sessions/<id>/report.html` of a completed and of a failed run, opened
//! in headless Chromium from a file store: no console errors, no script,
//! every screenshot and artefact link resolves, injected HTML is shown as
//! text and secrets never appear.

mod wf;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use oxwright_browser::UrlPolicy;
use oxwright_engine::{GotoOptions, OpenOptions, Page, ScreenshotOptions};
use oxwright_fixtures::APP_PASSWORD;
use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_jobs::RunStatus;
use serde_json::Value;
use wf::files::{FileServer, run_to_files};
use wf::{LOGIN_ID, Wf, checklist, placeholder, role};

const INJECTED: &str = "Click Sign in <script>alert(1)</script><img src=x onerror=alert(2)>";

/// Opens the session's report through a loopback server over the file
/// store and checks what a reader (and a browser) gets.
async fn open_report(wf: &Wf, root: &Path, session: &str) -> (Box<dyn Page>, Value) {
    let server = FileServer::start(root.to_path_buf()).await;
    let policy = Arc::new(UrlPolicy::allowing([server.addr.to_string().parse().unwrap()]));
    let page = wf.engine.open(&OpenOptions::new(policy)).await.expect("page");
    let url: url::Url = format!("http://{}/sessions/{session}/report.html", server.addr)
        .parse()
        .unwrap();
    page.goto(&url, &GotoOptions::load(Duration::from_secs(15)))
        .await
        .expect("the report loads");
    let facts = page
        .evaluate(
            "(async () => {\
               await Promise.all([...document.images].map(i => i.decode().catch(() => null)));\
               return {\
                 status: document.getElementById('status').textContent,\
                 scripts: document.scripts.length,\
                 text: document.body.innerText,\
                 images: [...document.images].map(i => [i.getAttribute('src'), i.naturalWidth > 0]),\
                 links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),\
                 external: [...document.querySelectorAll('[src],[href]')]\
                   .map(e => e.getAttribute('src') || e.getAttribute('href'))\
                   .filter(u => /^[a-z]+:|^\\/\\//i.test(u)),\
               };\
             })()",
            Duration::from_secs(10),
        )
        .await
        .expect("evaluate");
    let console = page.console().await;
    let errors: Vec<_> = console
        .iter()
        .filter(|m| m.level == "error" || m.level == "pageerror")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    assert!(page.dialogs().await.is_empty(), "the report opened a dialog");
    assert!(
        page.policy_refusals().await.is_empty(),
        "the report asked for something else"
    );
    assert_eq!(facts["scripts"], 0, "no script in the report");
    assert_eq!(facts["external"], serde_json::json!([]), "{facts:#}");
    let dir = root.join("sessions").join(session);
    for img in facts["images"].as_array().unwrap() {
        assert_eq!(img[1], true, "image did not load: {img}");
    }
    for link in facts["links"].as_array().unwrap() {
        let rel = link.as_str().unwrap();
        assert!(
            dir.join(rel).is_file(),
            "link {rel} does not resolve in {}",
            dir.display()
        );
    }
    if let Ok(out) = std::env::var("OXWRIGHT_REPORT_SCREENSHOT") {
        let png = page
            .screenshot(&ScreenshotOptions {
                full_page: true,
                ..Default::default()
            })
            .await
            .expect("screenshot");
        std::fs::write(format!("{out}-{session}.png"), png).unwrap();
    }
    drop(server);
    (page, facts)
}

fn no_secrets(root: &Path, session: &str) -> String {
    let html =
        std::fs::read_to_string(root.join(format!("sessions/{session}/report.html"))).expect("report.html");
    assert!(!html.contains(APP_PASSWORD), "the password reached the report");
    assert!(
        !html.contains(&format!("as {LOGIN_ID}")),
        "the login reached the report"
    );
    html
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_of_a_completed_llm_run_opens_clean_and_escapes_injected_html() {
    let wf = Wf::start().await;
    let root = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start().await.expect("scripted llm starts");
    llm.push(checklist(&[
        "Type {{LOGIN_ID}} into Username",
        "Type {{PASSWORD}} into Password",
        INJECTED,
    ]));
    llm.push(role("textbox", "Username", "fill", Some(placeholder("LOGIN_ID"))));
    llm.push(Reply::text("true"));
    llm.push(role("textbox", "Password", "fill", Some(placeholder("PASSWORD"))));
    llm.push(Reply::text("true"));
    llm.push(Reply::json(serde_json::json!({
        "method": "getByRole", "selector": {"role": "button", "name": "Sign in"}, "action": "click",
        "confidence": 0.9, "rationale": "<b onmouseover=alert(3)>the only button</b>",
    })));
    llm.push(Reply::text("true"));
    let (result, _deps) = run_to_files(&wf, root.path(), "done", "/app/login", "Log in", Some(&llm)).await;
    assert_eq!(
        result.status,
        RunStatus::Completed,
        "{result:#?}\n{}",
        wf.console_text()
    );
    let html = no_secrets(root.path(), "done");
    assert!(
        !html.contains("<script>alert(1)"),
        "the instruction's HTML was not escaped"
    );
    assert!(
        !html.contains("<img src=x"),
        "the instruction's HTML was not escaped"
    );
    assert!(
        !html.contains("<b onmouseover"),
        "the rationale's HTML was not escaped"
    );
    let (_page, facts) = open_report(&wf, root.path(), "done").await;
    assert_eq!(facts["status"], "COMPLETED");
    let text = facts["text"].as_str().unwrap();
    assert!(
        text.contains(INJECTED),
        "the injected text is shown as text: {text}"
    );
    assert!(
        text.contains("getByRole(\"textbox\", { name: \"Password\" }) → fill = {{PASSWORD}}"),
        "{text}"
    );
    assert!(
        text.contains("<b onmouseover=alert(3)>the only button</b>"),
        "{text}"
    );
    let links = facts["links"].to_string();
    assert!(
        links.contains("final.png") && links.contains("steps.jsonl"),
        "{links}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_of_a_failed_run_links_its_error_and_screenshot() {
    let wf = Wf::start().await;
    let root = tempfile::tempdir().unwrap();
    let text = "fill: textbox \"Username\" = {{LOGIN_ID}}\nfill: textbox \"Password\" = {{PASSWORD}}\n\
                click: button \"<i>Sign out</i>\"";
    let (result, _deps) = run_to_files(&wf, root.path(), "broke", "/app/login", text, None).await;
    assert_eq!(result.status, RunStatus::Failed, "{result:#?}");
    let html = no_secrets(root.path(), "broke");
    assert!(!html.contains("<i>Sign out</i>"));
    let (_page, facts) = open_report(&wf, root.path(), "broke").await;
    assert_eq!(facts["status"], "FAILED");
    let images = facts["images"].as_array().unwrap();
    assert!(
        images
            .iter()
            .any(|i| i[0].as_str().unwrap().starts_with("screenshots/step-3-")),
        "the failure screenshot is shown: {facts:#}"
    );
    let links = facts["links"].to_string();
    assert!(
        links.contains("errors/step-3-"),
        "the error artefact is linked: {links}"
    );
    assert!(
        facts["text"]
            .as_str()
            .unwrap()
            .contains("click: button \"<i>Sign out</i>\"")
    );
}
