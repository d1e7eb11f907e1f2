//! The key checkpoints and saved login states are sealed with
//! (AES-256-GCM): what a worker must not read in the clear from the store
//! or a queued job is sealed under it, and what it opens was written by a
//! holder of the key, unedited.

use std::collections::BTreeMap;

use base64::Engine as _;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The key checkpoints and saved login states are sealed with: 32 bytes,
/// given as 64 hex digits or as base64 (`openssl rand -hex 32`). Every
/// worker that may continue another's run, or start from a login the
/// scheduler sealed, needs the same key.
#[derive(Clone)]
pub struct CheckpointKey(std::sync::Arc<LessSafeKey>);

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointKey(…)")
    }
}

impl CheckpointKey {
    /// The environment variable workers read the key from.
    pub const ENV: &'static str = "OXWRIGHT_CHECKPOINT_KEY";

    /// Parses a key: 64 hex digits or base64 of 32 bytes.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| "expected 64 hex digits or base64 of 32 bytes".to_string())?
        };
        if bytes.len() != 32 {
            return Err(format!(
                "a checkpoint key is 32 bytes (64 hex digits), not {}",
                bytes.len()
            ));
        }
        let key = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| "unusable key".to_string())?;
        Ok(Self(std::sync::Arc::new(LessSafeKey::new(key))))
    }

    /// The key in `env` under [`Self::ENV`], if set; a malformed key is an
    /// error (never silently "no key").
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Option<Self>, String> {
        match env.get(Self::ENV).filter(|v| !v.trim().is_empty()) {
            None => Ok(None),
            Some(v) => Self::parse(v)
                .map(Some)
                .map_err(|e| format!("{}: {e}", Self::ENV)),
        }
    }

    /// Seals `plain`: `nonce ‖ ciphertext ‖ tag`, base64; `bound` is
    /// authenticated, not encrypted, and must be given again to open it.
    pub fn seal(&self, plain: &[u8], bound: &[u8]) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| "no random nonce".to_string())?;
        let mut buf = plain.to_vec();
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(bound), &mut buf)
            .map_err(|_| "sealing failed".to_string())?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    /// Opens what [`Self::seal`] sealed with the same `bound`.
    pub fn open(&self, sealed: &str, bound: &[u8]) -> Result<Vec<u8>, String> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(sealed)
            .map_err(|_| "the sealed state is not base64".to_string())?;
        if raw.len() < NONCE_LEN {
            return Err("the sealed state is cut short".into());
        }
        let (nonce, body) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| "bad nonce".to_string())?;
        let mut body = body.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(bound), &mut body)
            .map_err(|_| {
                "its seal does not open: it was edited after it was written, or sealed with another key"
                    .to_string()
            })?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn keys_parse_from_hex_or_base64_and_malformed_ones_are_refused() {
        assert!(CheckpointKey::parse(&"0f".repeat(32)).is_ok());
        let b64 = STANDARD.encode([7u8; 32]);
        assert!(CheckpointKey::parse(&b64).is_ok());
        assert!(CheckpointKey::parse("short").is_err());
        assert!(CheckpointKey::parse(&"0f".repeat(16)).is_err());
        let env = BTreeMap::from([(CheckpointKey::ENV.to_string(), "nope".to_string())]);
        assert!(
            CheckpointKey::from_env(&env)
                .unwrap_err()
                .contains(CheckpointKey::ENV)
        );
        assert!(CheckpointKey::from_env(&BTreeMap::new()).unwrap().is_none());
    }

    #[test]
    fn what_is_sealed_opens_only_with_its_key_and_bound_data() {
        let key = CheckpointKey::parse(&"0f".repeat(32)).unwrap();
        let sealed = key.seal(b"state", b"label").unwrap();
        assert_eq!(key.open(&sealed, b"label").unwrap(), b"state");
        assert!(key.open(&sealed, b"other").is_err());
        let other = CheckpointKey::parse(&"1e".repeat(32)).unwrap();
        assert!(other.open(&sealed, b"label").is_err());
        assert!(key.open("AAAA", b"label").is_err());
    }
}
