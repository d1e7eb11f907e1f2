//! A PDF main document as Markdown: its text page by page (pdf-extract,
//! which keeps paragraphs, word spacing and characters such as `_` that
//! lopdf's own extraction drops), with lopdf's text for a page that
//! pdf-extract spaced out letter by letter (it misreads some embedded
//! fonts' widths, e.g. in Chromium's PDFs), and the document's title,
//! author and dates from its information dictionary. Measured on four
//! real PDFs (a pdfTeX manual, a DocBook spec, two Chromium prints):
//! see the issue-15 note.

use std::panic::{AssertUnwindSafe, catch_unwind};

use oxwright_jobs::{ErrorKind, JobError};
use pdf_extract::{Document, Object};

/// A PDF's text and what its information dictionary says.
#[derive(Debug, Default)]
pub struct PdfText {
    pub title: Option<String>,
    pub author: Option<String>,
    pub producer: Option<String>,
    /// ISO 8601 (`2024-01-31T09:30:00`), from `/CreationDate`.
    pub created: Option<String>,
    /// ISO 8601, from `/ModDate`.
    pub modified: Option<String>,
    /// The Markdown: each page's paragraphs under a `<!-- page N of M -->` marker.
    pub markdown: String,
    pub pages: usize,
}

/// Reads `bytes` as a PDF. A password-protected or unreadable one is an
/// `extraction` error saying which.
pub fn pdf_to_markdown(bytes: &[u8]) -> Result<PdfText, JobError> {
    match catch_unwind(AssertUnwindSafe(|| read(bytes))) {
        Ok(result) => result,
        Err(_) => Err(JobError::new(
            ErrorKind::Extraction,
            "the PDF could not be read: its structure is broken",
        )),
    }
}

fn read(bytes: &[u8]) -> Result<PdfText, JobError> {
    let broken = |e: &dyn std::fmt::Display| {
        JobError::new(ErrorKind::Extraction, format!("the PDF could not be read: {e}"))
    };
    let mut doc = Document::load_mem(bytes).map_err(|e| broken(&e))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err(JobError::new(
            ErrorKind::Extraction,
            "the PDF is password-protected: its text cannot be read without the password",
        ));
    }
    let numbers: Vec<u32> = doc.get_pages().keys().copied().collect();
    let total = numbers.len();
    let mut out = PdfText {
        pages: total,
        ..PdfText::default()
    };
    read_info(&doc, &mut out);
    let mut md = String::new();
    if let Some(title) = &out.title {
        md.push_str(&format!("# {}\n\n", escape_line(title)));
    }
    for (i, number) in numbers.iter().enumerate() {
        let mut text = page_text(&doc, *number).unwrap_or_default();
        if let Ok(plain) = doc.extract_text(&[*number])
            && spaced_ratio(&plain) < spaced_ratio(&text)
        {
            // The same characters: lopdf's words in pdf-extract's layout.
            // Else lopdf's reading only where pdf-extract's is unreadable.
            match merge_spacing(&text, &plain) {
                Some(merged) => text = merged,
                None if spaced_out(&text) => text = plain,
                None => {}
            }
        }
        let text = unligature(&text);
        md.push_str(&format!("<!-- page {} of {total} -->\n\n", i + 1));
        for paragraph in paragraphs(&text) {
            md.push_str(&paragraph);
            md.push_str("\n\n");
        }
    }
    if md.trim().is_empty() && total > 0 {
        return Err(JobError::new(
            ErrorKind::Extraction,
            format!("the PDF has {total} page(s) but no text: it is probably scanned images (no OCR here)"),
        ));
    }
    out.markdown = md.trim_end().to_owned() + "\n";
    Ok(out)
}

/// One page's text as pdf-extract lays it out.
fn page_text(doc: &Document, number: u32) -> Option<String> {
    let mut s = String::new();
    let mut output = pdf_extract::PlainTextOutput::new(&mut s);
    pdf_extract::output_doc_page(doc, &mut output, number).ok()?;
    Some(s)
}

/// The share of whitespace-separated tokens that are one letter or digit.
fn spaced_ratio(text: &str) -> f64 {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    if tokens.is_empty() {
        return 0.0;
    }
    let single = tokens
        .iter()
        .filter(|t| t.chars().count() == 1 && t.chars().all(char::is_alphanumeric))
        .count();
    single as f64 / tokens.len() as f64
}

/// Says whether a page's text looks spaced out letter by letter (prose
/// has a few one-letter words, not a fifth of them).
fn spaced_out(text: &str) -> bool {
    spaced_ratio(text) > 0.2
}

/// Whitespace before a character of a page's text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Gap {
    None,
    Space,
    Line,
    Paragraph,
}

/// The whitespace before each non-whitespace character of `text`, and
/// those characters.
fn gaps(text: &str) -> (Vec<char>, Vec<Gap>) {
    let (mut chars, mut gaps) = (Vec::new(), Vec::new());
    let mut gap = Gap::None;
    let mut newlines = 0;
    for c in text.chars() {
        if c.is_whitespace() {
            if c == '\n' {
                newlines += 1;
            }
            gap = gap.max(match newlines {
                0 => Gap::Space,
                1 => Gap::Line,
                _ => Gap::Paragraph,
            });
        } else {
            chars.push(c);
            gaps.push(gap);
            gap = Gap::None;
            newlines = 0;
        }
    }
    (chars, gaps)
}

/// The page with `plain`'s word boundaries (lopdf reads the words right
/// where pdf-extract spaces letters out) and `laid_out`'s lines and
/// paragraphs; `None` when the two do not hold the same characters.
fn merge_spacing(laid_out: &str, plain: &str) -> Option<String> {
    let (chars, layout) = gaps(laid_out);
    let (plain_chars, words) = gaps(plain);
    if chars != plain_chars {
        return None;
    }
    let mut out = String::with_capacity(laid_out.len());
    for ((c, layout), word) in chars.iter().zip(layout).zip(words) {
        match (layout, word) {
            (Gap::Paragraph, _) => out.push_str("\n\n"),
            (Gap::Line, Gap::None) => out.push('\n'),
            (_, Gap::None) => {}
            (Gap::Line, _) => out.push('\n'),
            _ => out.push(' '),
        }
        out.push(*c);
    }
    Some(out)
}

/// Typographic ligatures (U+FB00–FB06) as their letters.
fn unligature(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            c => out.push(c),
        }
    }
    out
}

/// Paragraphs of a page: blocks separated by blank lines, their lines
/// joined (a line ending in a hyphen joins the next without a space),
/// runs of spaces made one, and Markdown syntax at a line start escaped.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut para = String::new();
        for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if !para.is_empty() && !para.ends_with('-') {
                para.push(' ');
            }
            para.push_str(line);
        }
        let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
        if !para.is_empty() {
            out.push(escape_line(&para));
        }
    }
    out
}

/// Escapes what would make a plain line Markdown syntax at its start.
fn escape_line(line: &str) -> String {
    let first = line.chars().next().unwrap_or(' ');
    // `1. Intro` would start an ordered list: `1\. Intro` does not.
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && line[digits..].starts_with(['.', ')']) && line[digits + 1..].starts_with(' ') {
        return format!("{}\\{}", &line[..digits], &line[digits..]);
    }
    if matches!(first, '#' | '>' | '-' | '+' | '*' | '=' | '|' | '`') {
        format!("\\{line}")
    } else {
        line.to_owned()
    }
}

fn read_info(doc: &Document, out: &mut PdfText) {
    let Ok(info) = doc.trailer.get(b"Info") else {
        return;
    };
    let info = match info {
        Object::Reference(id) => doc.get_object(*id).ok(),
        other => Some(other),
    };
    let Some(Ok(info)) = info.map(Object::as_dict) else {
        return;
    };
    let text = |key: &[u8]| -> Option<String> {
        let Object::String(bytes, _) = info.get(key).ok()? else {
            return None;
        };
        let s = decode_text(bytes);
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_owned())
    };
    out.title = text(b"Title");
    out.author = text(b"Author");
    out.producer = text(b"Producer");
    out.created = text(b"CreationDate").and_then(|d| pdf_date(&d));
    out.modified = text(b"ModDate").and_then(|d| pdf_date(&d));
}

/// A PDF text string: UTF-16BE with its byte-order mark, else PDFDocEncoding
/// (read as Latin-1, which it matches for printable text).
fn decode_text(bytes: &[u8]) -> String {
    if bytes.starts_with(&[0xFE, 0xFF]) {
        let units: Vec<u16> = bytes[2..]
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    bytes.iter().map(|&b| b as char).collect()
}

/// `D:YYYYMMDDHHmmSS…` as `YYYY-MM-DDTHH:mm:SS` (as much as is given).
fn pdf_date(d: &str) -> Option<String> {
    let digits: String = d
        .trim_start_matches("D:")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    if digits.len() < 4 {
        return None;
    }
    let part = |from: usize, to: usize| digits.get(from..to);
    let mut s = part(0, 4)?.to_owned();
    if let Some(m) = part(4, 6) {
        s.push('-');
        s.push_str(m);
        if let Some(day) = part(6, 8) {
            s.push('-');
            s.push_str(day);
            if let (Some(h), Some(min)) = (part(8, 10), part(10, 12)) {
                s.push_str(&format!("T{h}:{min}:{}", part(12, 14).unwrap_or("00")));
            }
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_are_joined_and_markdown_escaped() {
        let text = "A first line\nand its end.\n\n# not a heading\n\n1. not a list\nwell- \nknown";
        assert_eq!(
            paragraphs(text),
            vec![
                "A first line and its end.".to_owned(),
                "\\# not a heading".to_owned(),
                "1\\. not a list well-known".to_owned()
            ]
        );
    }

    #[test]
    fn spacing_is_merged_from_the_plain_reading() {
        let laid_out = "Harbour Tram Pi l ot\n\nThe  tram  carried  4 1 , 2 0 0   riders\nat  night.";
        let plain = "Harbour Tram Pilot\nThe tram carried 41,200 riders\nat night.";
        assert_eq!(
            merge_spacing(laid_out, plain).as_deref(),
            Some("Harbour Tram Pilot\n\nThe tram carried 41,200 riders\nat night.")
        );
        assert_eq!(merge_spacing("a b", "a c"), None);
        assert_eq!(unligature("\u{FB01}rst \u{FB02}oor"), "first floor");
    }

    #[test]
    fn spaced_out_text_is_told_from_prose() {
        assert!(spaced_out("Pi l ot carried 4 1 , 2 0 0 p a s s"));
        assert!(!spaced_out(
            "The overnight tram pilot carried 41,200 passengers in a quarter."
        ));
    }

    #[test]
    fn dates_and_strings_of_the_information_dictionary() {
        assert_eq!(
            pdf_date("D:20240131093000+01'00'").as_deref(),
            Some("2024-01-31T09:30:00")
        );
        assert_eq!(pdf_date("D:2024").as_deref(), Some("2024"));
        assert_eq!(pdf_date("nonsense"), None);
        assert_eq!(decode_text(&[0xFE, 0xFF, 0, b'H', 0, b'i']), "Hi");
        assert_eq!(decode_text(b"Caf\xe9"), "Café");
    }

    #[test]
    fn broken_bytes_are_a_typed_error() {
        let err = pdf_to_markdown(b"%PDF-1.4\n1 0 obj <<").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Extraction);
        assert!(err.message.contains("could not be read"), "{err}");
    }
}
