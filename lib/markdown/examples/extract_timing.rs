//! Times main-content conversion per extractor on the pages rendered by
//! `oxwright-bench quality` (`<corpus>/rendered/*.json`), single-threaded,
//! wall time, median of three runs per page, in the build's own profile
//! (run it with `--release`):
//!
//! ```text
//! cargo run --release -p oxwright-markdown --example extract_timing -- /tmp/oxwright-quality
//! ```

use oxwright_markdown::{ContentMode, Extractor, html_to_markdown_with};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/oxwright-quality".into());
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(format!("{dir}/rendered")).expect("rendered pages") {
        let path = entry.expect("dir entry").path();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let url = url::Url::parse(v["final_url"].as_str().unwrap_or_default()).ok();
        pages.push((v["visible_html"].as_str().unwrap_or_default().to_owned(), url));
    }
    for &ex in Extractor::ALL {
        let mut ms: Vec<f64> = pages
            .iter()
            .map(|(html, url)| {
                let mut runs: Vec<f64> = (0..3)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        let out = html_to_markdown_with(html, url.as_ref(), ContentMode::Main, ex);
                        std::hint::black_box(out.ok());
                        t.elapsed().as_secs_f64() * 1000.0
                    })
                    .collect();
                runs.sort_by(f64::total_cmp);
                runs[1]
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        println!(
            "{:<12} pages {:>5}  p50 {:>6.2} ms  p95 {:>6.2} ms  max {:>7.2} ms",
            ex.name(),
            ms.len(),
            at(0.5),
            at(0.95),
            at(1.0)
        );
    }
}
