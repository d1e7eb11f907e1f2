//! Measures `parse_sitemap` throughput and peak memory on generated
//! documents: a 50,000-URL urlset just under 2 MB, the same gzipped, and a
//! gzipped document of 2 MB whitespace around one URL (memory should not
//! follow the document size). Peak memory is VmHWM from /proc/self/status,
//! reset before each case through /proc/self/clear_refs.
//!
//! Run with `cargo run -p oxwright-sitemap --release --example parse_bench`.

use std::io::Write;
use std::time::Instant;

use flate2::Compression;
use flate2::write::GzEncoder;
use oxwright_sitemap::{ParseLimits, parse_sitemap_with};

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// CPU time of this thread in nanoseconds (the machine may be shared, so
/// wall time overstates the cost).
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn case(name: &str, body: &[u8], decompressed: usize, rounds: usize) {
    let limits = ParseLimits {
        max_bytes: 2 * 1024 * 1024,
        max_urls: 100_000,
    };
    // Peak memory first, on a fresh heap: this process runs one case only.
    let reset = reset_peak();
    let before = status_kib("VmRSS:").unwrap_or(0);
    let doc = parse_sitemap_with(body, limits);
    let peak = status_kib("VmHWM:").unwrap_or(0);
    let urls = doc.urls.len();
    assert!(doc.error.is_none(), "{name}: {:?}", doc.error);
    drop(doc);
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..rounds {
        let (start, start_cpu) = (Instant::now(), cpu_ns());
        let doc = parse_sitemap_with(body, limits);
        wall.push(start.elapsed().as_secs_f64());
        cpu.push((cpu_ns() - start_cpu) as f64 / 1e9);
        drop(doc);
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let (wall, cpu) = (wall[rounds / 2], cpu[rounds / 2]);
    let mb = decompressed as f64 / 1e6;
    println!(
        "{name}: {mb:.2} MB decompressed ({:.3} MB on the wire), {urls} URLs; median CPU {:.1} ms = {:.0} MB/s \
         (wall {:.1} ms = {:.0} MB/s); peak RSS {peak} KiB over a {before} KiB baseline = +{} KiB{}",
        body.len() as f64 / 1e6,
        cpu * 1e3,
        mb / cpu,
        wall * 1e3,
        mb / wall,
        peak.saturating_sub(before),
        if reset { "" } else { " (peak reset unavailable)" }
    );
}

fn main() {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
    );
    for i in 0..50_000 {
        xml.push_str(&format!("<url><loc>https://e.co/{i:05}</loc></url>"));
    }
    xml.push_str("</urlset>\n");
    assert!(xml.len() <= 2 * 1024 * 1024, "{} bytes", xml.len());
    let gz = gzip(xml.as_bytes());
    let mut padded = b"<urlset><url><loc>https://e.co/only</loc></url>".to_vec();
    padded.resize(2 * 1024 * 1024 - 16, b' ');
    padded.extend_from_slice(b"</urlset>");
    let padded_gz = gzip(&padded);
    let mut text = String::new();
    for i in 0..50_000 {
        text.push_str(&format!("https://e.co/{i:05}\n"));
    }
    let which = std::env::args().nth(1);
    let cases: [(&str, &[u8], usize); 4] = [
        ("urlset", xml.as_bytes(), xml.len()),
        ("urlset.gz", &gz, xml.len()),
        ("text", text.as_bytes(), text.len()),
        ("padded.gz (1 URL)", &padded_gz, padded.len()),
    ];
    match which.as_deref().and_then(|w| w.parse::<usize>().ok()) {
        Some(i) => {
            let (name, body, len) = cases[i];
            case(name, body, len, 15);
        }
        // Each case in its own process, so one case's freed heap does not hide the next one's peak.
        None => {
            let exe = std::env::current_exe().expect("own path");
            for i in 0..4 {
                let status = std::process::Command::new(&exe)
                    .arg(i.to_string())
                    .status()
                    .expect("child runs");
                assert!(status.success());
            }
        }
    }
}
