//! The streaming XML reader: `<urlset>`, `<sitemapindex>`, RSS 2.0 and Atom,
//! with or without a namespace. Elements from other namespaces (image, news,
//! video, xhtml) are skipped, DTD internal subsets are refused, and a
//! truncated document keeps the entries read before the break.

use std::io::BufRead;

use quick_xml::NsReader;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;

use super::document::{DocKind, ParseError, ParseLimits, ParsedDoc, clean_loc};
use super::input::Meter;
use crate::types::SitemapUrl;

/// Deepest element nesting accepted; sitemaps need four levels.
const MAX_NESTING: usize = 256;
/// Longest text kept for one field.
const MAX_FIELD_LEN: usize = 8 * 1024;

/// The role of an open element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Root,
    Channel,
    Entry,
    Loc,
    Lastmod,
    Changefreq,
    Priority,
    Other,
}

/// The entry being read (`<url>`, `<sitemap>`, `<item>` or `<entry>`).
#[derive(Debug, Default)]
struct Pending {
    loc: Option<String>,
    lastmod: Option<String>,
    changefreq: Option<String>,
    priority: Option<f32>,
}

struct State {
    kind: DocKind,
    /// The root element's namespace; `None` when unbound.
    doc_ns: Option<Vec<u8>>,
    stack: Vec<Tag>,
    pending: Option<Pending>,
    text: String,
    text_ok: bool,
    invalid_locs: usize,
    doc: ParsedDoc,
    limits: ParseLimits,
    full: bool,
}

/// Reads an XML document from `reader` (positioned at its first `<`).
pub(crate) fn parse(reader: &mut dyn BufRead, meter: &Meter, limits: ParseLimits) -> ParsedDoc {
    let mut xml = NsReader::from_reader(reader);
    let config = xml.config_mut();
    config.trim_text(false);
    config.expand_empty_elements = false;
    config.check_end_names = true;
    config.allow_dangling_amp = true;
    let mut st = State {
        kind: DocKind::Unknown,
        doc_ns: None,
        stack: Vec::new(),
        pending: None,
        text: String::new(),
        text_ok: true,
        invalid_locs: 0,
        doc: ParsedDoc::default(),
        limits,
        full: false,
    };
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let step = match xml.read_resolved_event_into(&mut buf) {
            Ok((res, event)) => {
                let in_doc = st.in_doc(&res);
                let ns = match &res {
                    ResolveResult::Bound(ns) if st.stack.is_empty() => Some(ns.0.to_vec()),
                    _ => None,
                };
                st.event(event, in_doc, ns)
            }
            Err(e) => Err(e.to_string()),
        };
        match step {
            Ok(true) if !st.full => continue,
            Ok(_) => break,
            Err(reason) => {
                st.broken(&reason, xml.error_position(), meter);
                break;
            }
        }
    }
    if !st.stack.is_empty() && st.doc.error.is_none() && !st.full && !meter.exceeded() {
        st.finish_pending(true);
        st.doc.warnings.push(format!(
            "document is truncated after {} bytes; kept the entries read before the break",
            meter.bytes()
        ));
    }
    if st.invalid_locs > 0 {
        st.doc.warnings.push(format!(
            "skipped {} entries without an absolute http(s) URL",
            st.invalid_locs
        ));
    }
    if st.kind == DocKind::Unknown && st.doc.error.is_none() {
        st.doc.error = Some(ParseError::NotSitemap("no root element".into()));
    }
    st.doc.kind = st.kind;
    st.doc
}

impl State {
    /// Says whether an element with this resolution belongs to the document's namespace.
    fn in_doc(&self, res: &ResolveResult<'_>) -> bool {
        match res {
            ResolveResult::Unbound => self.doc_ns.is_none() || self.kind == DocKind::Unknown,
            ResolveResult::Bound(ns) => self.kind == DocKind::Unknown || self.doc_ns.as_deref() == Some(ns.0),
            ResolveResult::Unknown(_) => false,
        }
    }

    /// Handles one event; `Ok(false)` ends the parse normally.
    fn event(&mut self, event: Event<'_>, in_doc: bool, ns: Option<Vec<u8>>) -> Result<bool, String> {
        match event {
            Event::Start(e) => {
                if self.stack.len() >= MAX_NESTING {
                    return Err(format!("elements nested deeper than {MAX_NESTING}"));
                }
                let tag = self.open(&e, in_doc, ns)?;
                self.stack.push(tag);
            }
            Event::Empty(e) => {
                let tag = self.open(&e, in_doc, ns)?;
                self.close(tag);
            }
            Event::End(_) => {
                if let Some(tag) = self.stack.pop() {
                    self.close(tag);
                }
                if self.stack.is_empty() && self.kind != DocKind::Unknown {
                    return Ok(false);
                }
            }
            Event::Text(t) if self.capturing() => self.push_text(&String::from_utf8_lossy(&t)),
            Event::CData(t) if self.capturing() => self.push_text(&String::from_utf8_lossy(&t)),
            Event::Text(_) | Event::CData(_) => {}
            Event::GeneralRef(r) => {
                if self.capturing() {
                    match r.resolve_char_ref() {
                        Ok(Some(c)) => self.push_text(c.encode_utf8(&mut [0; 4])),
                        Ok(None) => {
                            let name = String::from_utf8_lossy(&r);
                            match quick_xml::escape::resolve_predefined_entity(&name) {
                                Some(s) => self.push_text(s),
                                None => self.text_ok = false,
                            }
                        }
                        Err(_) => self.text_ok = false,
                    }
                }
            }
            Event::DocType(d) => {
                let text = String::from_utf8_lossy(&d);
                let text = text.trim_start();
                if text.get(..4).is_some_and(|s| s.eq_ignore_ascii_case("html")) {
                    self.doc.error = Some(ParseError::NotSitemap("an HTML page".into()));
                    return Ok(false);
                }
                if text.contains('[') || text.contains("ENTITY") {
                    self.doc.error = Some(ParseError::Dtd);
                    return Ok(false);
                }
                self.doc.warnings.push("ignored an external DOCTYPE".into());
            }
            Event::Eof => return Ok(false),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
        Ok(true)
    }

    fn capturing(&self) -> bool {
        self.pending.is_some()
            && matches!(
                self.stack.last(),
                Some(Tag::Loc | Tag::Lastmod | Tag::Changefreq | Tag::Priority)
            )
    }

    fn push_text(&mut self, s: &str) {
        if self.capturing() {
            if self.text.len() + s.len() > MAX_FIELD_LEN {
                self.text_ok = false;
            } else {
                self.text.push_str(s);
            }
        }
    }

    /// Classifies a start (or empty) element and returns its role.
    fn open(&mut self, e: &BytesStart<'_>, in_doc: bool, ns: Option<Vec<u8>>) -> Result<Tag, String> {
        let local = e.local_name();
        let name = local.as_ref();
        let Some(&parent) = self.stack.last() else {
            return self.open_root(name, ns);
        };
        if !in_doc {
            return Ok(Tag::Other);
        }
        let tag = match (self.kind, parent, name) {
            (DocKind::UrlSet, Tag::Root, b"url")
            | (DocKind::Index, Tag::Root, b"sitemap")
            | (DocKind::Rss, Tag::Channel, b"item")
            | (DocKind::Atom, Tag::Root, b"entry") => Tag::Entry,
            (DocKind::Rss, Tag::Root, b"channel") => Tag::Channel,
            (DocKind::UrlSet | DocKind::Index, Tag::Entry, b"loc") | (DocKind::Rss, Tag::Entry, b"link") => {
                Tag::Loc
            }
            (DocKind::UrlSet | DocKind::Index, Tag::Entry, b"lastmod")
            | (DocKind::Rss, Tag::Entry, b"pubDate")
            | (DocKind::Atom, Tag::Entry, b"updated") => Tag::Lastmod,
            (DocKind::UrlSet, Tag::Entry, b"changefreq") => Tag::Changefreq,
            (DocKind::UrlSet, Tag::Entry, b"priority") => Tag::Priority,
            (DocKind::Atom, Tag::Entry, b"link") => {
                self.atom_link(e);
                Tag::Other
            }
            _ => Tag::Other,
        };
        match tag {
            Tag::Entry => self.pending = Some(Pending::default()),
            Tag::Loc | Tag::Lastmod | Tag::Changefreq | Tag::Priority => {
                self.text.clear();
                self.text_ok = true;
            }
            _ => {}
        }
        Ok(tag)
    }

    fn open_root(&mut self, name: &[u8], ns: Option<Vec<u8>>) -> Result<Tag, String> {
        if self.kind != DocKind::Unknown {
            return Err("content after the root element".into());
        }
        self.kind = match name {
            b"urlset" => DocKind::UrlSet,
            b"sitemapindex" => DocKind::Index,
            b"rss" => DocKind::Rss,
            b"feed" => DocKind::Atom,
            _ => {
                let shown = String::from_utf8_lossy(&name[..name.len().min(64)]).into_owned();
                let why = if name.eq_ignore_ascii_case(b"html") {
                    "an HTML page".to_string()
                } else {
                    format!("unexpected root element <{shown}>")
                };
                self.doc.error = Some(ParseError::NotSitemap(why));
                return Err(String::new());
            }
        };
        self.doc_ns = ns;
        Ok(Tag::Root)
    }

    /// Takes an Atom `<link href>` that points at the entry itself.
    fn atom_link(&mut self, e: &BytesStart<'_>) {
        let Some(p) = self.pending.as_mut() else { return };
        if p.loc.is_some() {
            return;
        }
        let (mut href, mut rel) = (None, None);
        for attr in e.attributes().flatten() {
            let value = attr.unescape_value().map(|v| v.into_owned()).ok();
            match attr.key.local_name().as_ref() {
                b"href" => href = value,
                b"rel" => rel = value,
                _ => {}
            }
        }
        if rel.as_deref().is_none_or(|r| r.trim() == "alternate") {
            match href.as_deref().and_then(clean_loc) {
                Some(loc) => p.loc = Some(loc),
                None => self.invalid_locs += 1,
            }
        }
    }

    /// Ends an element: stores a finished field or a finished entry.
    fn close(&mut self, tag: Tag) {
        match tag {
            Tag::Entry => self.finish_pending(false),
            Tag::Loc | Tag::Lastmod | Tag::Changefreq | Tag::Priority => {
                let ok = self.text_ok;
                let value = std::mem::take(&mut self.text);
                let value = value.trim();
                let Some(p) = self.pending.as_mut() else { return };
                match tag {
                    Tag::Loc => match (ok, clean_loc(value)) {
                        (true, Some(loc)) => p.loc = Some(loc),
                        _ => p.loc = None,
                    },
                    Tag::Lastmod if ok && !value.is_empty() => p.lastmod = Some(value.to_string()),
                    Tag::Changefreq if ok && !value.is_empty() => p.changefreq = Some(value.to_string()),
                    Tag::Priority if ok => {
                        p.priority = value.parse::<f32>().ok().filter(|v| (0.0..=1.0).contains(v))
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Stores the pending entry; a truncated one without a URL is dropped silently.
    fn finish_pending(&mut self, truncated: bool) {
        let Some(p) = self.pending.take() else { return };
        let Some(loc) = p.loc else {
            if !truncated {
                self.invalid_locs += 1;
            }
            return;
        };
        let max = self.limits.max_urls;
        if self.doc.urls.len() >= max || self.doc.sitemaps.len() >= max {
            self.full = true;
            self.doc
                .warnings
                .push(format!("stopped after {max} entries (max_urls)"));
            return;
        }
        if self.kind == DocKind::Index {
            self.doc.sitemaps.push(loc);
        } else {
            self.doc.urls.push(SitemapUrl {
                loc,
                lastmod: p.lastmod,
                changefreq: p.changefreq,
                priority: p.priority,
            });
        }
    }

    /// Records a read error: a typed error when nothing was read yet, a
    /// truncation warning when entries were.
    fn broken(&mut self, reason: &str, position: u64, meter: &Meter) {
        if self.doc.error.is_some() || meter.exceeded() {
            return;
        }
        if self.kind == DocKind::Unknown {
            self.doc.error = Some(ParseError::Malformed(format!("at byte {position}: {reason}")));
            return;
        }
        self.finish_pending(true);
        self.doc.warnings.push(format!(
            "document is truncated or malformed at byte {position} ({reason}); kept the entries read before the break"
        ));
        self.stack.clear();
    }
}
