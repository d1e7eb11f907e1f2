//! `{{totp:NAME}}`: the current RFC 6238 code of the secret `NAME`, typed
//! into a second-factor form. The secret holds the seed as an
//! authenticator app takes it: its base32 text (spaces and case do not
//! matter), or the whole `otpauth://totp/…?secret=…` URI, whose
//! `algorithm`, `digits` and `period` are honoured (SHA1, 6, 30 s when
//! absent).

use std::time::{SystemTime, UNIX_EPOCH};

use totp_rs::{Algorithm, TOTP};

/// Why a seed gives no code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret {name} is not a TOTP seed: {why} (give its base32 text, or its otpauth:// URI)")]
pub struct TotpError {
    /// The secret's name.
    pub name: String,
    /// What is wrong, never the value.
    pub why: String,
}

/// The code of the seed held by secret `name` at `now`.
pub fn code(name: &str, seed: &str, now: SystemTime) -> Result<String, TotpError> {
    let err = |why: &str| TotpError {
        name: name.to_string(),
        why: why.to_string(),
    };
    let totp = parse(seed).map_err(|why| err(&why))?;
    let secs = now
        .duration_since(UNIX_EPOCH)
        .map_err(|_| err("the clock is before 1970"))?
        .as_secs();
    Ok(totp.generate(secs))
}

fn parse(seed: &str) -> Result<TOTP, String> {
    let seed = seed.trim();
    let (secret, algorithm, digits, period) = if seed.starts_with("otpauth://") {
        let url = url::Url::parse(seed).map_err(|_| "an unreadable otpauth URI".to_string())?;
        if url.host_str() != Some("totp") {
            return Err("an otpauth URI that is not totp".into());
        }
        let mut secret = None;
        let mut algorithm = Algorithm::SHA1;
        let mut digits = 6;
        let mut period = 30;
        for (key, value) in url.query_pairs() {
            match key.as_ref() {
                "secret" => secret = Some(value.into_owned()),
                "algorithm" => {
                    algorithm = match value.to_ascii_uppercase().as_str() {
                        "SHA1" => Algorithm::SHA1,
                        "SHA256" => Algorithm::SHA256,
                        "SHA512" => Algorithm::SHA512,
                        _ => return Err("an algorithm other than SHA1, SHA256 or SHA512".into()),
                    }
                }
                "digits" => digits = value.parse().map_err(|_| "digits that are not a number")?,
                "period" => period = value.parse().map_err(|_| "a period that is not a number")?,
                _ => {}
            }
        }
        let secret = secret.ok_or("an otpauth URI with no secret")?;
        (secret, algorithm, digits, period)
    } else {
        (seed.to_string(), Algorithm::SHA1, 6, 30)
    };
    if !(6..=10).contains(&digits) {
        return Err("digits outside 6 to 10".into());
    }
    if period == 0 {
        return Err("a period of 0".into());
    }
    let cleaned: String = secret
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let bytes = totp_rs::Secret::Encoded(cleaned.trim_end_matches('=').to_string())
        .to_bytes()
        .map_err(|_| "text that is not base32".to_string())?;
    if bytes.is_empty() {
        return Err("an empty seed".into());
    }
    // Many services issue 80-bit seeds, under the 128 bits `TOTP::new` asks for.
    Ok(TOTP::new_unchecked(algorithm, digits, 1, period, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// RFC 6238 appendix B's SHA1 seed, "12345678901234567890", in base32.
    const RFC_SEED: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn the_rfc_6238_vectors() {
        // Appendix B, SHA1, 8 digits.
        let uri = format!("otpauth://totp/x?secret={RFC_SEED}&digits=8");
        for (secs, expected) in [
            (59, "94287082"),
            (1_111_111_109, "07081804"),
            (1_234_567_890, "89005924"),
            (20_000_000_000, "65353130"),
        ] {
            assert_eq!(code("MFA", &uri, at(secs)).unwrap(), expected, "at {secs}");
        }
        // The same seed as bare base32, lower case with spaces: 6 digits.
        assert_eq!(
            code("MFA", "gezd gnbv gy3t qojq gezd gnbv gy3t qojq", at(59)).unwrap(),
            "287082"
        );
    }

    #[test]
    fn a_bad_seed_names_the_secret_and_never_the_value() {
        for seed in [
            "not base32 !!",
            "otpauth://hotp/x?secret=GEZDGNBV",
            "otpauth://totp/x",
            "",
        ] {
            let err = code("MFA", seed, at(59)).unwrap_err();
            assert_eq!(err.name, "MFA");
            let text = err.to_string();
            assert!(text.contains("MFA"), "{text}");
            if !seed.is_empty() {
                assert!(!text.contains(seed), "{text}");
            }
        }
    }
}
