//! cl100k_base token counting with one shared, lazily loaded encoder.

use std::sync::OnceLock;

use bpe_openai::Tokenizer;
use rustc_hash::FxHashSet;

/// cl100k_base's encoder and the bytes of each of its tokens.
struct Cl100k {
    tokenizer: &'static Tokenizer,
    tokens: FxHashSet<&'static [u8]>,
}

/// Returns the process-wide encoder, loaded on first use (a few ms).
fn cl100k() -> &'static Cl100k {
    static CL100K: OnceLock<Cl100k> = OnceLock::new();
    CL100K.get_or_init(|| {
        // The encoder is serialised into the binary at build time.
        let tokenizer = bpe_openai::cl100k_base();
        let bpe = &tokenizer.bpe;
        let ids = 0..u32::try_from(bpe.num_tokens()).expect("cl100k has 100,256 tokens");
        Cl100k {
            tokenizer,
            tokens: ids.map(|id| bpe.token_bytes(id)).collect(),
        }
    })
}

/// Counts the cl100k_base tokens in `text`, treating special-token text as plain text.
///
/// The text is split by cl100k's pre-tokenizer and each piece is encoded
/// on its own, as `tiktoken` does, so the count is the one it gives: a
/// piece that is a token is one (most pieces of a page are: words, tags,
/// attribute names), any other is encoded. No token list or regex state
/// the size of the page is held (a page's HTML is ~1 token per 3–4 bytes).
pub fn count_tokens(text: &str) -> usize {
    let cl100k = cl100k();
    let bpe = &cl100k.tokenizer.bpe;
    cl100k
        .tokenizer
        .split(text)
        .map(|piece| {
            let piece = piece.as_bytes();
            if cl100k.tokens.contains(piece) {
                1
            } else {
                bpe.count(piece)
            }
        })
        .sum()
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

    /// Texts built from the pieces cl100k's pre-tokenizer is subtle about
    /// (line feeds after spaces and punctuation, letters before tags,
    /// contractions, digits, non-ASCII letters and spaces), in a
    /// pseudo-random order.
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
    fn counts_are_tiktokens() {
        let reference = tiktoken_rs::cl100k_base().expect("embedded cl100k_base ranks load");
        let mut texts = mixed_texts();
        // Minified HTML, a long run of one character and a page's worth of prose.
        texts.push("<p>one two</p><p>three</p>".repeat(5000));
        texts.push(" ".repeat(10_000) + "x" + &"=".repeat(3000));
        texts.push("The quick brown fox's jumps, 1234567 times!\r\n\n".repeat(2000));
        for text in &texts {
            assert_eq!(
                count_tokens(text),
                reference.encode_ordinary(text).len(),
                "{text:?}"
            );
        }
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
