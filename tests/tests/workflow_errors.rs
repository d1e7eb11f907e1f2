//! A failing step's error artefact on real Chromium: a field holding a
//! secret in plain text (the password typed into the username box) and the
//! password field are blacked out in the screenshot (the pixels inside their
//! boxes are black), the snapshot shows neither value, the console entries
//! and the seed's fields are there, and the page is left without the boxes.

mod wf;

use std::io::Read;
use std::time::Duration;

use oxwright_artifacts::ArtifactStore;
use oxwright_fixtures::APP_PASSWORD;
use oxwright_jobs::RunStatus;
use serde_json::Value;
use wf::{Wf, page_text};

/// An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), as rows of pixels.
struct Png {
    width: usize,
    height: usize,
    channels: usize,
    data: Vec<u8>,
}

impl Png {
    fn decode(bytes: &[u8]) -> Png {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
        let (mut pos, mut idat) = (8, Vec::new());
        let (mut width, mut height, mut channels) = (0, 0, 0);
        while pos + 8 <= bytes.len() {
            let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
            let kind = &bytes[pos + 4..pos + 8];
            let body = &bytes[pos + 8..pos + 8 + len];
            match kind {
                b"IHDR" => {
                    width = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                    height = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                    assert_eq!(body[8], 8, "bit depth");
                    channels = match body[9] {
                        2 => 3,
                        6 => 4,
                        t => panic!("colour type {t}"),
                    };
                    assert_eq!(body[12], 0, "not interlaced");
                }
                b"IDAT" => idat.extend_from_slice(body),
                _ => {}
            }
            pos += 12 + len;
        }
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&idat[..])
            .read_to_end(&mut raw)
            .expect("inflate");
        let stride = width * channels;
        let mut data = vec![0u8; stride * height];
        for y in 0..height {
            let filter = raw[y * (stride + 1)];
            let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
            for x in 0..stride {
                let a = if x >= channels {
                    data[y * stride + x - channels]
                } else {
                    0
                } as i16;
                let b = if y > 0 { data[(y - 1) * stride + x] } else { 0 } as i16;
                let c = if y > 0 && x >= channels {
                    data[(y - 1) * stride + x - channels]
                } else {
                    0
                } as i16;
                let pred = match filter {
                    0 => 0,
                    1 => a,
                    2 => b,
                    3 => (a + b) / 2,
                    4 => {
                        let p = a + b - c;
                        let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                        if pa <= pb && pa <= pc {
                            a
                        } else if pb <= pc {
                            b
                        } else {
                            c
                        }
                    }
                    f => panic!("filter {f}"),
                };
                data[y * stride + x] = (line[x] as i16 + pred) as u8;
            }
        }
        Png {
            width,
            height,
            channels,
            data,
        }
    }

    fn rgb(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * self.channels;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Whether every pixel in the box (CSS pixels at scale 1) is black.
    fn black(&self, left: f64, top: f64, width: f64, height: f64) -> bool {
        let (x0, y0) = (left.ceil() as usize, top.ceil() as usize);
        let (x1, y1) = ((left + width).floor() as usize, (top + height).floor() as usize);
        assert!(x1 > x0 && y1 > y0 && x1 <= self.width && y1 <= self.height);
        (y0..y1).all(|y| (x0..x1).all(|x| self.rgb(x, y) == [0, 0, 0]))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_screenshot_blacks_out_secret_fields() {
    let wf = Wf::start().await;
    let page = wf.page().await;
    // A console entry from before the run: console messages are kept from the page's opening.
    page_text(page.as_ref(), "console.warn('deprecated API used'); 1").await;
    let workflow = oxwright_workflow::Workflow::parse(
        "fill: textbox \"Username\" = {{PASSWORD}}\nfill: textbox \"Password\" = {{PASSWORD}}\nclick: button \"Log in now\"",
    )
    .unwrap();
    let mut opts = wf.options("errors", "/app/login");
    opts.action_timeout = Duration::from_secs(3);
    let result = oxwright_workflow::run_workflow(page.as_ref(), &workflow, wf.deps(None, wf.secrets()), opts)
        .await
        .expect("the workflow runs");
    assert_eq!(result.status, RunStatus::Failed);
    // The password really is in the username box, in plain text.
    let typed = page_text(page.as_ref(), "document.getElementById('user').value").await;
    assert_eq!(typed, APP_PASSWORD);

    let artifacts = wf.all_artifacts().await;
    for (key, text) in &artifacts {
        assert!(!text.contains(APP_PASSWORD), "the password is in {key}");
    }
    let (_, text) = artifacts
        .iter()
        .find(|(k, _)| k.starts_with("sessions/errors/errors/step-3-"))
        .expect("an error artefact for step 3");
    let error: Value = serde_json::from_str(text).unwrap();
    assert_eq!(error["errorType"], "ELEMENT_NOT_FOUND", "{error:#}");
    assert_eq!(error["step"], 3);
    let snapshot = error["details"]["ariaSnapshot"].as_str().unwrap();
    assert!(snapshot.contains("textbox \"Username\""), "{snapshot}");
    assert!(
        snapshot.contains("••••"),
        "the filled fields are masked: {snapshot}"
    );
    assert_eq!(error["details"]["attempted"].as_array().unwrap().len(), 3);
    let console = error["details"]["console"].as_array().unwrap();
    assert!(
        console.iter().any(|c| c["type"] == "warn"
            && c["text"] == "deprecated API used"
            && c["timestamp"].as_str().is_some_and(|t| t.ends_with('Z'))),
        "{console:?}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("\"Sign in\""),
        "{error:#}"
    );

    let key = error["details"]["screenshotPath"].as_str().expect("a screenshot");
    assert!(key.starts_with("sessions/errors/screenshots/step-3-"), "{key}");
    let png = Png::decode(&wf.store.get(key).await.unwrap());
    let boxes = page_text(
        page.as_ref(),
        "['user', 'pass', 'msg'].map(id => { const r = document.getElementById(id).getBoundingClientRect(); \
         return [r.left, r.top, r.width, r.height]; })",
    )
    .await;
    let rect = |i: usize| -> [f64; 4] {
        let b = &boxes[i];
        [0, 1, 2, 3].map(|j| b[j].as_f64().unwrap())
    };
    for (i, field) in ["username", "password"].iter().enumerate() {
        let [l, t, w, h] = rect(i);
        assert!(png.black(l, t, w, h), "the {field} field is not blacked out");
    }
    // The rest of the page is not: the heading's row left of the fields is page background.
    let [l, t, _, _] = rect(0);
    assert_ne!(png.rgb(l as usize / 2, t as usize + 2), [0, 0, 0]);
    // The boxes were taken away after the capture.
    let left = page_text(
        page.as_ref(),
        "document.querySelectorAll('[data-oxwright-cover]').length",
    )
    .await;
    assert_eq!(left, 0);
}

/// A password field the page filled (nothing typed it, so no element is
/// marked) in a frame of another site (a renderer of its own) and in a
/// frame of another port (cross-origin, the page's process) is blacked out
/// of a masked screenshot too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_in_frames_of_other_origins_are_blacked_out() {
    use oxwright_engine::{ScreenshotOptions, WaitCondition};
    let mut wf = Wf::start().await;
    let second = wf.second_origin().await;
    let page = wf.page().await;
    for query in [
        "inner=login".to_string(),
        format!("inner=login&host=127.0.0.1&port={}", second.addr().port()),
    ] {
        let url = format!("http://{}/app/xframe?{query}", wf.site.addr());
        page.goto(
            &url.parse().unwrap(),
            &oxwright_engine::GotoOptions::load(Duration::from_secs(15)),
        )
        .await
        .expect("goto");
        page.wait_for(
            &WaitCondition::Text("Partner password".into()),
            Duration::from_secs(10),
        )
        .await
        .expect("the frame shows its field");
        let shot = page
            .screenshot(&ScreenshotOptions {
                mask_secrets: true,
                ..ScreenshotOptions::default()
            })
            .await
            .expect("screenshot");
        let png = Png::decode(&shot);
        // The field sits 10 px into the frame's viewport.
        let frame = page_text(
            page.as_ref(),
            "(() => { const f = document.getElementById('partner'); const r = f.getBoundingClientRect(); \
             return [r.left + f.clientLeft, r.top + f.clientTop]; })()",
        )
        .await;
        let (x, y) = (frame[0].as_f64().unwrap(), frame[1].as_f64().unwrap());
        assert!(
            png.black(x + 10.0, y + 10.0, 200.0, 30.0),
            "the password in the frame of {query} is not blacked out"
        );
        // Beside the field, the frame is not.
        assert_ne!(
            png.rgb((x + 250.0) as usize, (y + 20.0) as usize),
            [0, 0, 0],
            "{query}"
        );
    }
}
