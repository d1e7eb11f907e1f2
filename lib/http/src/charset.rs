//! A served document's bytes to text, the way a browser picks the
//! encoding: a byte-order mark, then the `Content-Type` header's
//! `charset`, then a `<meta>` prescan of the first 1,024 bytes, then UTF-8
//! when the bytes are valid UTF-8 and windows-1252 (what browsers assume
//! for unlabelled Western pages) when they are not.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// How far the `<meta>` prescan looks, as in the HTML standard.
const PRESCAN_BYTES: usize = 1024;

/// Decodes `body` as a browser would; returns the text and the encoding used.
pub fn decode_html(body: &[u8], content_type: Option<&str>) -> (String, &'static Encoding) {
    let encoding = sniff(body, content_type);
    // `decode` honours a BOM over the label, as browsers do.
    let (text, used, _) = encoding.decode(body);
    (text.into_owned(), used)
}

/// Picks the encoding of `body` (see the module's documentation).
pub fn sniff(body: &[u8], content_type: Option<&str>) -> &'static Encoding {
    if let Some((bom, _)) = Encoding::for_bom(body) {
        return bom;
    }
    if let Some(enc) = content_type.and_then(charset_param).and_then(label) {
        return enc;
    }
    if let Some(enc) = prescan(&body[..body.len().min(PRESCAN_BYTES)]) {
        return enc;
    }
    if std::str::from_utf8(body).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    }
}

/// Reads the `charset` parameter of a `Content-Type` value.
pub fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(|c| c == '"' || c == '\''))
    })
}

/// An encoding label as the standard maps it; a UTF-16 label found in a
/// document's own bytes means UTF-8 (the bytes were read as ASCII), and
/// `x-user-defined` means windows-1252.
fn label(name: &str) -> Option<&'static Encoding> {
    let enc = Encoding::for_label(name.trim().as_bytes())?;
    if enc == encoding_rs::UTF_16BE || enc == encoding_rs::UTF_16LE {
        return Some(UTF_8);
    }
    if enc == encoding_rs::X_USER_DEFINED {
        return Some(WINDOWS_1252);
    }
    Some(enc)
}

/// Finds a `<meta charset>` or `<meta http-equiv="content-type"
/// content="…; charset=…">` in the document's first bytes.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let mut at = 0;
    while let Some(i) = find(&lower[at..], b"<meta") {
        let start = at + i + 5;
        let end = lower[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset") {
            let mut rest = &tag[c + 7..];
            rest = trim_start(rest);
            if let Some(r) = rest.strip_prefix(b"=") {
                let value = read_value(trim_start(r));
                if let Some(enc) = std::str::from_utf8(value).ok().and_then(label) {
                    return Some(enc);
                }
            }
        }
        at = end;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[n..]
}

/// Reads an attribute value (quoted or not), stopping where a charset
/// label must end.
fn read_value(s: &[u8]) -> &[u8] {
    match s.first() {
        Some(&q @ (b'"' | b'\'')) => {
            let body = &s[1..];
            let end = body
                .iter()
                .position(|&b| b == q || b == b';' || b.is_ascii_whitespace())
                .unwrap_or(body.len());
            &body[..end]
        }
        _ => {
            let end = s
                .iter()
                .position(|&b| b.is_ascii_whitespace() || b == b';' || b == b'"' || b == b'\'' || b == b'/')
                .unwrap_or(s.len());
            &s[..end]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_label_wins_over_meta() {
        let body = b"<meta charset=\"shift_jis\"><p>caf\xe9</p>";
        let (text, enc) = decode_html(body, Some("text/html; charset=ISO-8859-1"));
        assert_eq!(enc, WINDOWS_1252);
        assert!(text.contains("caf\u{e9}"));
    }

    #[test]
    fn meta_prescan_finds_both_forms() {
        assert_eq!(
            sniff(b"<html><head><META CHARSET=Shift_JIS>", None).name(),
            "Shift_JIS"
        );
        let http_equiv = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=euc-jp\">";
        assert_eq!(sniff(http_equiv, Some("text/html")).name(), "EUC-JP");
        assert_eq!(sniff(b"<meta charset='utf-16'>", None), UTF_8);
    }

    #[test]
    fn bom_wins_and_unlabelled_bytes_fall_back() {
        assert_eq!(
            sniff(b"\xef\xbb\xbf<p>x</p>", Some("text/html; charset=latin1")),
            UTF_8
        );
        assert_eq!(sniff("<p>\u{e9}</p>".as_bytes(), None), UTF_8);
        assert_eq!(sniff(b"<p>\xe9</p>", None), WINDOWS_1252);
        let (text, _) = decode_html(b"\xef\xbb\xbf<p>ok</p>", None);
        assert_eq!(text, "<p>ok</p>");
    }

    #[test]
    fn a_late_meta_is_not_read() {
        let mut body = vec![b' '; 2000];
        body.extend_from_slice(b"<meta charset=shift_jis>");
        assert_eq!(sniff(&body, None), UTF_8);
    }
}
