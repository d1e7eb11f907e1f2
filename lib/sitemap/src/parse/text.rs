//! Plain-text sitemaps: one absolute URL per line.

use std::io::BufRead;

use super::document::{DocKind, ParseError, ParseLimits, ParsedDoc, clean_loc};
use super::input::Meter;
use crate::types::SitemapUrl;

/// Reads `reader` line by line, keeping the lines that are http(s) URLs.
pub(crate) fn parse(reader: &mut dyn BufRead, meter: &Meter, limits: ParseLimits) -> ParsedDoc {
    let mut doc = ParsedDoc {
        kind: DocKind::Text,
        ..ParsedDoc::default()
    };
    let mut line = Vec::new();
    let mut skipped = 0usize;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                if !meter.exceeded() {
                    doc.warnings.push(format!(
                        "document is truncated or corrupt after {} bytes: {e}",
                        meter.bytes()
                    ));
                }
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match clean_loc(text) {
            Some(loc) => {
                if doc.urls.len() >= limits.max_urls {
                    doc.warnings
                        .push(format!("stopped after {} URLs (max_urls)", limits.max_urls));
                    break;
                }
                doc.urls.push(SitemapUrl::new(loc));
            }
            None => skipped += 1,
        }
    }
    if doc.urls.is_empty() && skipped > 0 {
        doc.error = Some(ParseError::NotSitemap(
            "no line is an absolute http(s) URL".into(),
        ));
    } else if skipped > 0 {
        doc.warnings.push(format!(
            "skipped {skipped} lines that are not absolute http(s) URLs"
        ));
    }
    doc
}
