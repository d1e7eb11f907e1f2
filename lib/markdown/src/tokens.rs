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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("<|endoftext|>"), count_tokens("<|endoftext|>"));
        assert!(count_tokens("<|endoftext|>") > 1);
    }
}
