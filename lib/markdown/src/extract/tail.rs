//! Owns the tail rule of the `pruned` extractor: in the second half of an
//! article, a heading or a short line that names an end section ("Related
//! articles", "Mehr zum Thema", "Über den Autor", "Quelle: dpa",
//! "Comments") starts page furniture that readability kept because it sat
//! in the article's container. A named heading's section goes (up to the
//! next heading of its level or above); a named line takes the rest of the
//! article with it.

use dom_query::{Document, NodeRef};

use super::blocks::{chars, heading_level, link_chars, units};

/// Names of end sections, lowercased, in the languages of the pages we are
/// measured on (English, German, French, Spanish, Portuguese, Polish,
/// Italian). A unit names one when its text is the name, or the name
/// followed by a short rest ("Quelle: Landesregierung", "See also [edit]").
const END_SECTIONS: &[&str] = &[
    // Related reading.
    "related",
    "related articles",
    "related posts",
    "related stories",
    "you may also like",
    "you might also like",
    "read more",
    "read also",
    "see also",
    "more from",
    "more on this",
    "more stories",
    "further reading",
    "mehr zum thema",
    "mehr zu",
    "auch interessant",
    "das könnte sie auch interessieren",
    "das könnte dich auch interessieren",
    "lesen sie auch",
    "lies auch",
    "weitere artikel",
    "weitere beiträge",
    "ähnliche beiträge",
    "ähnliche artikel",
    "verwandte artikel",
    "verwandte themen",
    "verwandte themenbereiche",
    "beiträge zum thema",
    "zum weiterlesen",
    "weiterführender link",
    "weiterführende links",
    "weitere informationen",
    "weitere infos",
    "à lire aussi",
    "lire aussi",
    "sur le même sujet",
    "voir aussi",
    "veja também",
    "leia também",
    "lea también",
    "te puede interesar",
    "también te puede interesar",
    "noticias relacionadas",
    "relacionadas",
    "czytaj także",
    "czytaj też",
    "zobacz też",
    "zobacz także",
    "powiązane",
    "leggi anche",
    // Sharing and comments.
    "share this",
    "share this article",
    "teilen sie dies mit",
    "teilen mit",
    "diesen beitrag teilen",
    "artikel teilen",
    "partager",
    "compartir",
    "comments",
    "leave a comment",
    "leave a reply",
    "kommentare",
    "kommentar verfassen",
    "kommentare schreiben",
    "keine kommentare",
    "commentaires",
    "comentarios",
    "komentarze",
    "newsletter",
    // Who wrote it, whom to ask, where it came from.
    "about the author",
    "über den autor",
    "über die autorin",
    "zur person",
    "contact",
    "kontakt",
    "pressekontakt",
    "ansprechpartner",
    "ansprechpartnerin",
    "source",
    "sources",
    "quelle",
    "quellen",
    "quellenangaben",
    "quellennachweis",
    "fuente",
    "fonte",
    "źródło",
    "credit",
    "credits",
    "photo",
    "photos",
    "photo credit",
    "fotos",
    "bildnachweis",
    "titelbild",
    "beitragsbild",
];

/// Longest unit text that can name an end section.
const NAME_MAX: usize = 70;
/// Longest rest after a section's name ("Quelle: Deutscher Jagdverband
/// (DJV), 02. Februar 2022, Berlin").
const NAME_REST: usize = 60;
/// Above this share of link text a unit is a link ("Comments (3 posted)"
/// in a list of articles), not a section's name.
const LINKED: f64 = 0.8;
/// Share of the article's text that must come before a section's name.
const FROM_SHARE: f64 = 0.5;
/// A named heading followed by a paragraph this long (characters) heads the
/// article's own text (a "Related" widget removed, its heading left).
const PROSE_AFTER: usize = 400;

/// How a unit names an end section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// The name alone ("Kontakt:", "## See also"): what follows is the section.
    Bare,
    /// The name and what it says ("Fotos: Tobias König", "Quelle: dpa"):
    /// the article may go on under a heading after it.
    Attribution,
}

/// Removes end sections from the second half of the extracted article.
/// Returns whether anything was removed.
pub(super) fn cut_end_sections(doc: &Document) -> bool {
    let units = units(doc);
    if units.is_empty() {
        return false;
    }
    let sizes: Vec<usize> = units.iter().map(|u| chars(&u.text())).collect();
    let total: usize = sizes.iter().sum();
    let mut before = 0usize;
    let mut doomed: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let unit = &units[i];
        let late = i > 0 && before as f64 >= FROM_SHARE * total as f64;
        let name = if late { end_section_name(unit) } else { None };
        let level = heading_level(unit);
        // A named heading over a long paragraph heads the article's text.
        let heads_prose = || level.is_some() && units.get(i + 1).is_some_and(is_long_paragraph);
        let Some(name) = name.filter(|_| !heads_prose()) else {
            before += sizes[i];
            i += 1;
            continue;
        };
        // An attribution line takes what follows up to the next heading; a
        // bare name line takes the rest; a heading its section, which ends
        // at the next heading of its level or above, or at prose right
        // after the section's links (a "More on this" box inside the
        // article; a comment's author line does not end comments).
        let end = match (level, name) {
            (None, Name::Attribution) => (i + 1..units.len())
                .find(|&j| heading_level(&units[j]).is_some())
                .unwrap_or(units.len()),
            (None, Name::Bare) => units.len(),
            (Some(level), _) => (i + 1..units.len())
                .find(|&j| {
                    let unit = &units[j];
                    (heading_level(unit).is_some_and(|l| l <= level) && end_section_name(unit).is_none())
                        || (j > i + 1 && is_prose(unit) && units[i + 1..j].iter().all(is_links))
                })
                .unwrap_or(units.len()),
        };
        doomed.extend(i..end);
        before += sizes[i..end].iter().sum::<usize>();
        i = end;
    }
    for &i in &doomed {
        units[i].remove_from_parent();
    }
    // Headings left with nothing under them at the end.
    if doomed.last() == Some(&(units.len() - 1)) {
        let mut first = units.len() - 1;
        while first > 0 && doomed.contains(&(first - 1)) {
            first -= 1;
        }
        for unit in units[..first].iter().rev() {
            if heading_level(unit).is_none() {
                break;
            }
            unit.remove_from_parent();
        }
    }
    !doomed.is_empty()
}

/// Tells whether (and how) a unit, a heading or a short line that is not
/// a link, names an end section.
fn end_section_name(unit: &NodeRef) -> Option<Name> {
    if !(heading_level(unit).is_some() || ["p", "div", "section"].iter().any(|t| unit.has_name(t))) {
        return None;
    }
    let text = unit.text().to_lowercase();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = text.ends_with('.');
    let text = text.trim_end_matches([' ', ':', '.', '!', '?', '…', '»', '«', '"', '\'', '*']);
    // A count before the name ("0 Kommentare", "3 Comments").
    let text = text.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ' || c == '*');
    let n = text.chars().count();
    if n == 0 || n > NAME_MAX || link_chars(unit) as f64 > LINKED * chars(text) as f64 {
        return None;
    }
    END_SECTIONS.iter().find_map(|name| {
        let rest = text.strip_prefix(name)?;
        if rest.is_empty() {
            return Some(Name::Bare);
        }
        // After a one-word name, only an attribution ("Source: AP",
        // "Comments (3)", "See also [edit]"): "Source code" and "Contact
        // tracing" are sections of the article. After a longer name also
        // more words ("Mehr zu Klima und Konsum", "Read more about it"),
        // unless they make a sentence ("See also <a> and <b>.").
        let attributed = rest
            .trim_start()
            .starts_with([':', '(', '|', '-', '–', '—', '/', ',']);
        let bracketed = rest.trim_start().starts_with('[');
        let worded = name.contains(' ') && rest.starts_with(' ') && !sentence;
        if rest.chars().count() > NAME_REST {
            None
        } else if attributed {
            Some(Name::Attribution)
        } else if bracketed || worded {
            Some(Name::Bare)
        } else {
            None
        }
    })
}

/// Shortest paragraph that counts as prose after a section's links.
const PROSE: usize = 150;

/// Tells whether a unit is a paragraph of prose: [`PROSE`] characters or
/// more, ending like a sentence, not mostly links.
fn is_prose(unit: &NodeRef) -> bool {
    if !(unit.has_name("p") || unit.has_name("div")) {
        return false;
    }
    let text = unit.text();
    let text = text.trim();
    let n = chars(text);
    n >= PROSE && link_chars(unit) * 2 < n && text.ends_with(['.', '!', '?', '…', '"', '”', '»', ')'])
}

/// Tells whether a unit is mostly link text, or has no text (a card's image).
fn is_links(unit: &NodeRef) -> bool {
    link_chars(unit) * 2 >= chars(&unit.text())
}

/// Tells whether a unit is a paragraph of [`PROSE_AFTER`] characters or more.
fn is_long_paragraph(unit: &NodeRef) -> bool {
    (unit.has_name("p") || unit.has_name("div")) && unit.text().trim().chars().count() >= PROSE_AFTER
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(html: &str) -> String {
        let doc = Document::fragment(html);
        cut_end_sections(&doc);
        doc.root().text().split_whitespace().collect::<Vec<_>>().join(" ")
    }

    const BODY: &str = "<p>The first paragraph of the story, which is long enough to count for something.</p>\
        <p>The second paragraph of the story, just as long as the first one was before it.</p>";

    #[test]
    fn an_article_with_no_units_is_left_alone() {
        // Once a debug-build panic (`units.len() - 1` on no units).
        assert_eq!(cut("<span>Only inline text</span>"), "Only inline text");
        assert_eq!(cut(""), "");
    }

    #[test]
    fn a_named_line_late_in_the_article_takes_the_rest() {
        let html = format!("<div>{BODY}<p>Kontakt:</p><p>Erika Muster, Pressestelle</p></div>");
        assert!(cut(&html).ends_with("before it."), "{}", cut(&html));
        let comment = "A comment that goes on for a while, long enough to read as prose: it agrees with the story, \
             then it disagrees with the second paragraph, then it thanks the writer warmly for the story above.";
        let html = format!("<div>{BODY}{BODY}<h2>Comments</h2><p>Erika says:</p><p>{comment}</p></div>");
        assert!(cut(&html).ends_with("before it."), "{}", cut(&html));
        let html = format!(
            "<div>{BODY}{BODY}<h2>More on this</h2><ul><li><a href='/a'>Another story</a></li></ul><p>{comment}</p></div>"
        );
        let out = cut(&html);
        assert!(
            !out.contains("Another story") && out.ends_with("story above."),
            "{out}"
        );
        let html = format!("<div>{BODY}<p>Fotos: Erika Muster</p><h2>Details</h2><p>Four rooms.</p></div>");
        let out = cut(&html);
        assert!(!out.contains("Erika") && out.ends_with("Four rooms."), "{out}");
    }

    #[test]
    fn a_named_heading_takes_its_section_only() {
        let html = format!(
            "<div>{BODY}<h2>See also</h2><ul><li>Another page</li></ul>\
             <h2>Environment</h2><p>Set it up like this.</p></div>"
        );
        let out = cut(&html);
        assert!(
            !out.contains("Another page") && out.ends_with("Set it up like this."),
            "{out}"
        );
    }

    #[test]
    fn names_in_the_first_half_prose_after_a_heading_and_links_stay() {
        let early = format!("<div><h2>Sources</h2>{BODY}</div>");
        assert!(cut(&early).starts_with("Sources"));
        let prose = "word ".repeat(90);
        let html = format!("<div>{BODY}<h3>Related</h3><p>{prose}</p></div>");
        assert!(cut(&html).contains("Related"));
        let html = format!("<div>{BODY}<p><a href='/c'>Comments (3 posted)</a></p><p>More text.</p></div>");
        assert!(cut(&html).ends_with("More text."));
        let html = format!("<div>{BODY}<p>Sourcery is a fine word.</p></div>");
        assert!(cut(&html).ends_with("fine word."));
        let html =
            format!("<div>{BODY}<p>See also <a href='/e'>errors</a> and <a href='/s'>servers</a>.</p></div>");
        assert!(cut(&html).ends_with("and servers."));
        let html = format!("<div>{BODY}<h2>Source code</h2><p>It is on GitHub.</p></div>");
        assert!(cut(&html).ends_with("It is on GitHub."));
        let html = format!("<div>{BODY}<h2>3 Comments</h2><p>Nice post!</p></div>");
        assert!(cut(&html).ends_with("before it."));
    }
}
