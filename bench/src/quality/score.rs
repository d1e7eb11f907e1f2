//! Owns the quality metrics: Markdown reduced to plain text, word-level
//! (bag-of-words) precision/recall/F1 against a ground-truth text, and
//! snippet precision/recall/F1 as trafilatura's own evaluation counts it.

use std::collections::HashMap;

/// Precision, recall and F1 from true/false positive and false negative counts.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Prf {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl Prf {
    /// Computes the scores; an empty side counts as 0 (a miss), never NaN.
    pub fn from_counts(tp: f64, fp: f64, fn_: f64) -> Self {
        let precision = if tp + fp > 0.0 { tp / (tp + fp) } else { 0.0 };
        let recall = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        Self {
            precision,
            recall,
            f1,
        }
    }
}

/// Reduces Markdown to its reading text: images dropped (neither ground
/// truth counts alt text as text), links to their text, URLs, emphasis and
/// code markers, escapes, list, quote, heading and table markup dropped.
pub fn plain_text(markdown: &str) -> String {
    let markdown = without_images(markdown);
    let mut out = String::with_capacity(markdown.len());
    let chars: Vec<char> = markdown.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation() => {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            // `](target)` ends a link or image: the target is not text.
            ']' if chars.get(i + 1) == Some(&'(') => {
                let mut depth = 0;
                let mut j = i + 1;
                while j < chars.len() {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        '\n' => break,
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
                continue;
            }
            '!' if chars.get(i + 1) == Some(&'[') => {}
            '[' | ']' | '*' | '`' | '|' => out.push(' '),
            _ => out.push(c),
        }
        i += 1;
    }
    out.lines()
        .map(|l| {
            let t = l.trim_start();
            let t = t.trim_start_matches('#').trim_start_matches('>').trim_start();
            let t = t.strip_prefix("- ").unwrap_or(t);
            if t.chars().all(|c| c == '-' || c == ':' || c.is_whitespace()) {
                ""
            } else {
                t
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Removes `![alt](src)` (our images never nest brackets in the alt text).
fn without_images(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("![") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find("](")
            .filter(|&close| !tail[..close].contains('\n'))
            .and_then(|close| tail[close..].find(')').map(|p| close + p + 1));
        match end {
            Some(end) => rest = &tail[end..],
            None => {
                out.push_str("![");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Collapses whitespace runs to one space.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lowercased runs of letters and digits: the unit of the word-level score.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Word-level scores of `got` against `truth`: the overlap of the two word
/// multisets (each word counts as often as it occurs in both).
pub fn word_prf(got: &str, truth: &str) -> Prf {
    let mut want: HashMap<String, usize> = HashMap::new();
    let truth_words = words(truth);
    for w in &truth_words {
        *want.entry(w.clone()).or_default() += 1;
    }
    let got_words = words(got);
    let mut tp = 0usize;
    for w in &got_words {
        if let Some(n) = want.get_mut(w)
            && *n > 0
        {
            *n -= 1;
            tp += 1;
        }
    }
    let (tp, fp, fn_) = (tp, got_words.len() - tp, truth_words.len() - tp);
    Prf::from_counts(tp as f64, fp as f64, fn_ as f64)
}

/// Snippet counts of one page as trafilatura's `count_item` makes them:
/// (tp, fp, fn, tn) by whitespace-normalised substring search.
pub fn snippet_counts(got: &str, with: &[String], without: &[String]) -> [usize; 4] {
    let got = normalize(got);
    let tp = with.iter().filter(|s| got.contains(&normalize(s))).count();
    let fp = without.iter().filter(|s| got.contains(&normalize(s))).count();
    [tp, fp, with.len() - tp, without.len() - fp]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_drops_markup_but_keeps_text() {
        let md = "# Title\n\n- a [link](http://x.y/(z)) and ![alt](i.png)\n\n| h | i |\n| --- | --- |\n| 1\\* | **2** |";
        assert_eq!(normalize(&plain_text(md)), "Title a link and h i 1* 2");
        assert_eq!(normalize(&plain_text("[![a](i.png)](p) x")), "x");
    }

    #[test]
    fn word_scores_count_multisets() {
        let s = word_prf("the the cat", "the cat sat");
        assert!((s.precision - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(word_prf("", "x").f1, 0.0);
    }

    #[test]
    fn snippets_match_across_whitespace() {
        let with = vec!["a  b".to_string(), "zz".to_string()];
        let without = vec!["c".to_string()];
        assert_eq!(snippet_counts("x a\nb c", &with, &without), [1, 1, 1, 0]);
    }
}
