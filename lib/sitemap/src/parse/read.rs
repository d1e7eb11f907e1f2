//! The entry points: open a document (gzip layers peeled under a byte
//! cap), sniff its format and hand it to the reader for it.

use super::document::{ParseError, ParseLimits, ParsedDoc};
use super::{input, text, xml};

/// Parses one sitemap document with the default 2 MiB cap. Never panics.
pub fn parse_sitemap(bytes: &[u8], max_urls: usize) -> ParsedDoc {
    parse_sitemap_with(
        bytes,
        ParseLimits {
            max_urls,
            ..ParseLimits::default()
        },
    )
}

/// Parses one sitemap document (gzip or not; XML, RSS, Atom or plain text)
/// under `limits`, streaming: decompressed bytes are never held whole.
pub fn parse_sitemap_with(bytes: &[u8], limits: ParseLimits) -> ParsedDoc {
    let mut opened = match input::open(bytes, limits.max_bytes) {
        Ok(o) => o,
        Err(e) => return ParsedDoc::failed(ParseError::Malformed(format!("cannot decode body: {e}"))),
    };
    let first = match std::io::BufRead::fill_buf(&mut opened.reader) {
        Ok(buf) => buf.first().copied(),
        Err(e) => return ParsedDoc::failed(ParseError::Malformed(format!("cannot decode body: {e}"))),
    };
    let mut doc = match first {
        None => ParsedDoc::failed(ParseError::NotSitemap("empty document".into())),
        Some(b'<') => xml::parse(&mut opened.reader, &opened.meter, limits),
        Some(_) => text::parse(&mut opened.reader, &opened.meter, limits),
    };
    if doc.error.is_none() {
        // Bytes after the root element still count against the cap.
        let _ = std::io::copy(&mut opened.reader, &mut std::io::sink());
    }
    if opened.meter.exceeded() {
        doc.error = Some(ParseError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    if doc.error.is_some() {
        doc.urls.clear();
        doc.sitemaps.clear();
    }
    doc.bytes = opened.meter.bytes();
    doc.gzip_layers = opened.gzip_layers;
    doc
}

/// Reads a whole small document (robots.txt) through the same gzip peeling
/// and byte cap as a sitemap.
pub(crate) fn decode_capped(bytes: &[u8], max_bytes: usize) -> Result<Vec<u8>, ParseError> {
    let mut opened = input::open(bytes, max_bytes)
        .map_err(|e| ParseError::Malformed(format!("cannot decode body: {e}")))?;
    let mut out = Vec::new();
    match std::io::Read::read_to_end(&mut opened.reader, &mut out) {
        Ok(_) => Ok(out),
        Err(_) if opened.meter.exceeded() => Err(ParseError::TooLarge { limit: max_bytes }),
        Err(e) => Err(ParseError::Malformed(format!("cannot decode body: {e}"))),
    }
}
