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
pub fn count_tokens(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
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
