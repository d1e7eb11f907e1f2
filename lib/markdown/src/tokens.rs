//! cl100k_base token counting with one shared, lazily built BPE.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// Returns the process-wide cl100k_base encoder, building it on first use.
fn bpe() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    // The ranks are compiled into tiktoken-rs, so building cannot fail short of
    // a corrupted binary.
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().expect("embedded cl100k_base ranks load"))
}

/// Counts the cl100k_base tokens in `text`, treating special-token text as plain text.
///
/// The text is encoded a piece of about [`CHUNK`] bytes at a time, cut
/// only where cl100k's pre-tokenizer cuts anyway, so the count is exact:
/// encoding a page whole held its tokens (4 bytes each, ~1 per 3–4 bytes of
/// HTML, in a vector grown by doubling) and the regex engine's stack for
/// the whole page at once, up to 8 MiB for the pages converting at a time
/// (a heap profile of a soak, BENCHMARKS.md §3).
pub fn count_tokens(text: &str) -> usize {
    count_in_chunks(text, CHUNK)
}

/// Bytes of text encoded at a time by [`count_tokens`].
const CHUNK: usize = 16 * 1024;

fn count_in_chunks(text: &str, chunk: usize) -> usize {
    let bpe = bpe();
    let mut total = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let cut = next_cut(rest.as_bytes(), chunk);
        total += bpe.encode_ordinary(&rest[..cut]).len();
        rest = &rest[cut..];
    }
    total
}

/// Returns the first index at or past `from` where cl100k's pre-tokenizer
/// ends a piece whatever follows, or the text's length:
/// - after a line feed followed by a non-space ASCII character: a piece
///   holding the line feed (`\s*[\r\n]+`, ` ?[^\s\p{L}\p{N}]+[\r\n]*`) ends
///   at the last line feed of a run, and no piece starts with one but those;
/// - between an ASCII letter and `<`: a run of letters ends at the `<`, and
///   no piece holding a letter goes on past one.
///
/// No cl100k rule looks behind, so encoding from either index on gives the
/// pieces encoding the whole text gives. Both bytes are ASCII, so the index
/// is a character boundary.
fn next_cut(text: &[u8], from: usize) -> usize {
    (from.max(1)..text.len())
        .find(|&i| {
            let (before, at) = (text[i - 1], text[i]);
            (before == b'\n' && at.is_ascii() && !at.is_ascii_whitespace())
                || (before.is_ascii_alphabetic() && at == b'<')
        })
        .unwrap_or(text.len())
}

/// Markdown cut down to a token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The blocks that fit, whole.
    pub markdown: String,
    /// Tokens of what was kept.
    pub kept_tokens: usize,
    /// Tokens of the whole Markdown.
    pub full_tokens: usize,
}

/// Splits Markdown into blocks: runs of lines separated by blank lines, a
/// fenced code block (blank lines and all) counting as part of one block.
fn blocks(markdown: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut fence: Option<&str> = None;
    let mut offset = 0;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim();
        let blank = trimmed.is_empty();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            start.get_or_insert(offset);
        } else if blank {
            if let Some(s) = start.take() {
                out.push(markdown[s..offset].trim_end());
            }
        } else {
            start.get_or_insert(offset);
        }
        offset += line.len();
    }
    if let Some(s) = start {
        out.push(markdown[s..].trim_end());
    }
    out
}

/// Cuts `markdown` to at most `max_tokens` cl100k tokens at a block
/// boundary (never inside a paragraph, list item run, table or code
/// block); `None` when it already fits. A first block larger than the
/// budget alone keeps nothing.
pub fn trim_to_tokens(markdown: &str, max_tokens: usize) -> Option<Trimmed> {
    let full_tokens = count_tokens(markdown);
    if full_tokens <= max_tokens {
        return None;
    }
    // Blocks are counted one by one (the separator as one token): linear
    // in the page, and the sum bounds the joined count closely enough; the
    // joined text is counted once at the end and shortened if BPE merged
    // differently.
    let mut kept: Vec<&str> = Vec::new();
    let mut estimate = 0;
    for block in blocks(markdown) {
        let cost = count_tokens(block) + usize::from(!kept.is_empty());
        if estimate + cost > max_tokens {
            break;
        }
        estimate += cost;
        kept.push(block);
    }
    let mut kept_tokens = count_tokens(&kept.join("\n\n"));
    while kept_tokens > max_tokens && kept.pop().is_some() {
        kept_tokens = count_tokens(&kept.join("\n\n"));
    }
    Some(Trimmed {
        markdown: kept.join("\n\n"),
        kept_tokens,
        full_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts built from the pieces that meet at a cut (line feeds after
    /// spaces and punctuation, letters before tags, contractions, digits,
    /// non-ASCII letters and spaces), in a pseudo-random order.
    fn mixed_texts() -> Vec<String> {
        const PARTS: &[&str] = &[
            "<div>",
            "</p>",
            "Hello",
            " world",
            "\n",
            "  \n\t",
            "\r\n",
            "\n\n",
            "123456",
            "'s",
            "'Ll",
            "é",
            "日本語",
            "x<",
            ">\n<",
            "    ",
            "!!",
            "a",
            "<a href=\"/x\">",
            "\u{a0}",
            "\u{2003}\n",
            "-->",
            "\t",
            "über",
            "\u{301}",
            "9",
            " <",
            "<<",
            "&amp;",
            "\n ",
            "\n<b>",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        (0..60)
            .map(|_| {
                (0..400)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        PARTS[(seed % PARTS.len() as u64) as usize]
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn counting_in_chunks_is_counting_whole() {
        let mut cuts = 0;
        for text in mixed_texts() {
            let whole = bpe().encode_ordinary(&text).len();
            for chunk in [1, 2, 7, 64, 1000, CHUNK] {
                assert_eq!(count_in_chunks(&text, chunk), whole, "chunk {chunk}: {text:?}");
            }
            cuts += (1..text.len())
                .filter(|&i| next_cut(text.as_bytes(), i) == i)
                .count();
        }
        // The texts do get cut, and often.
        assert!(cuts > 1_000, "{cuts} cuts");
        // Minified HTML has no line feeds but tags after words.
        let page = "<p>one two</p><p>three</p>".repeat(5000);
        assert_eq!(count_in_chunks(&page, 100), bpe().encode_ordinary(&page).len());
        assert!(next_cut(page.as_bytes(), 100) < 130);
    }

    #[test]
    fn trims_at_block_boundaries() {
        let md = "# Title\n\nFirst paragraph, two\nlines.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n- one\n- two\n\nLast words here.";
        assert_eq!(
            blocks(md),
            [
                "# Title",
                "First paragraph, two\nlines.",
                "```rust\nfn a() {}\n\nfn b() {}\n```",
                "- one\n- two",
                "Last words here."
            ]
        );
        assert_eq!(trim_to_tokens(md, 10_000), None);
        let budget = count_tokens("# Title\n\nFirst paragraph, two\nlines.") + 3;
        let t = trim_to_tokens(md, budget).unwrap();
        assert_eq!(t.markdown, "# Title\n\nFirst paragraph, two\nlines.");
        assert_eq!(t.kept_tokens, count_tokens(&t.markdown));
        assert!(t.kept_tokens <= budget && t.full_tokens == count_tokens(md));
        assert_eq!(trim_to_tokens(md, 1).unwrap().markdown, "");
    }

    #[test]
    fn counts_known_strings() {
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("<|endoftext|>"), count_tokens("<|endoftext|>"));
        assert!(count_tokens("<|endoftext|>") > 1);
    }
}
