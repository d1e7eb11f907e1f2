//! Matching names and texts the way Playwright does: whitespace-normalised,
//! case-insensitive substrings unless exact. The `Locator` type itself is
//! serde data in `oxwright-jobs` (step records carry it).

pub use oxwright_jobs::Locator;

/// Normalises whitespace the way Playwright does before comparing names.
pub fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Says whether an accessible name (or text) matches the wanted one.
pub fn name_matches(actual: &str, wanted: &str, exact: bool) -> bool {
    let (a, w) = (normalize(actual), normalize(wanted));
    if exact {
        a == w
    } else {
        a.to_lowercase().contains(&w.to_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_like_playwright() {
        assert!(name_matches("Sign  in", "sign in", false));
        assert!(name_matches("Sign in now", "SIGN IN", false));
        assert!(!name_matches("Sign in now", "Sign in", true));
        assert!(name_matches(" Sign\nin ", "Sign in", true));
    }
}
