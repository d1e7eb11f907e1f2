//! Secrets: `{{NAME}}` placeholders in steps, prompts and logs; a
//! [`SecretStore`] resolves a name to its value only at the moment of typing.
//! Environment variables and a file now; a cloud secret manager later.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use async_trait::async_trait;
use regex::Regex;

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{\s*(totp:\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\}\}").expect("placeholder regex")
});

/// A secret value. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Returns the value; call only where it is typed.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A secret store failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretError {
    /// The backing store could not be read.
    #[error("secret store unavailable: {0}")]
    Unavailable(String),
    /// The secrets file is malformed.
    #[error("secrets file line {line}: {message}")]
    Format {
        /// 1-based line.
        line: usize,
        /// What is wrong (never the value).
        message: String,
    },
}

/// Resolves placeholder names to values.
#[async_trait]
pub trait SecretStore: Send + Sync + std::fmt::Debug {
    /// Returns the value of `name`, or `None` when the store has none.
    async fn get(&self, name: &str) -> Result<Option<Secret>, SecretError>;

    /// Describes the store for messages (never values).
    fn describe(&self) -> String;
}

/// Secrets from environment variables `<prefix><NAME>` (an injected map).
#[derive(Clone)]
pub struct EnvSecrets {
    vars: BTreeMap<String, String>,
    prefix: String,
}

impl std::fmt::Debug for EnvSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvSecrets")
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl EnvSecrets {
    /// The default prefix: `{{PASSWORD}}` reads `OXWRIGHT_SECRET_PASSWORD`.
    pub const DEFAULT_PREFIX: &'static str = "OXWRIGHT_SECRET_";

    /// Reads `<prefix><NAME>` from `vars`.
    pub fn new(vars: BTreeMap<String, String>, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        let vars = vars.into_iter().filter(|(k, _)| k.starts_with(&prefix)).collect();
        Self { vars, prefix }
    }

    /// Reads the process environment with the default prefix.
    pub fn from_process() -> Self {
        Self::new(std::env::vars().collect(), Self::DEFAULT_PREFIX)
    }
}

#[async_trait]
impl SecretStore for EnvSecrets {
    async fn get(&self, name: &str) -> Result<Option<Secret>, SecretError> {
        Ok(self.vars.get(&format!("{}{name}", self.prefix)).map(Secret::new))
    }

    fn describe(&self) -> String {
        format!("environment variables {}*", self.prefix)
    }
}

/// Secrets from a file of `NAME=value` lines (`#` comments, optional quotes).
#[derive(Clone)]
pub struct FileSecrets {
    path: String,
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for FileSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSecrets").field("path", &self.path).finish()
    }
}

impl FileSecrets {
    /// The secrets' names.
    pub fn names(&self) -> Vec<String> {
        self.values.keys().cloned().collect()
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, SecretError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SecretError::Unavailable(format!("{}: {e}", path.display())))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses the text of a secrets file.
    pub fn parse(path: &str, text: &str) -> Result<Self, SecretError> {
        let mut values = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((name, value)) = line.split_once('=') else {
                return Err(SecretError::Format {
                    line: i + 1,
                    message: "expected NAME=value".into(),
                });
            };
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(SecretError::Format {
                    line: i + 1,
                    message: "the name must be letters, digits and _".into(),
                });
            }
            let value = value.trim();
            let value = if value.len() >= 2
                && ((value.starts_with('"') && value.ends_with('"'))
                    || (value.starts_with('\'') && value.ends_with('\'')))
            {
                &value[1..value.len() - 1]
            } else {
                value
            };
            values.insert(name.to_string(), value.to_string());
        }
        Ok(Self {
            path: path.to_string(),
            values,
        })
    }
}

#[async_trait]
impl SecretStore for FileSecrets {
    async fn get(&self, name: &str) -> Result<Option<Secret>, SecretError> {
        Ok(self.values.get(name).map(Secret::new))
    }

    fn describe(&self) -> String {
        format!("secrets file {}", self.path)
    }
}

/// Secrets held in memory (tests, and callers that fetched them elsewhere).
#[derive(Clone, Default)]
pub struct MemorySecrets {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for MemorySecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySecrets")
            .field("names", &self.values.keys())
            .finish()
    }
}

impl MemorySecrets {
    /// Holds `pairs` of name and value.
    pub fn new<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self {
            values: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }
}

#[async_trait]
impl SecretStore for MemorySecrets {
    async fn get(&self, name: &str) -> Result<Option<Secret>, SecretError> {
        Ok(self.values.get(name).map(Secret::new))
    }

    fn describe(&self) -> String {
        "in-memory secrets".into()
    }
}

/// Returns the names of the secrets the placeholders in `text` read, in
/// order, without repeats (`{{totp:MFA}}` reads `MFA`, its seed).
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in PLACEHOLDER.captures_iter(text) {
        let name = c[2].to_string();
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Returns the names among `names` that `store` has no value for, so a run
/// can refuse before it starts a browser. Values are read and dropped at once.
pub async fn missing(names: &[String], store: &dyn SecretStore) -> Result<Vec<String>, SecretError> {
    let mut out = Vec::new();
    for name in names {
        if store.get(name).await?.is_none() {
            out.push(name.clone());
        }
    }
    Ok(out)
}

/// Why a placeholder could not be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    /// The store has no value for this name.
    #[error("secret {{{{{0}}}}} is not in the secret store")]
    Missing(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] SecretError),
    /// A `{{totp:NAME}}` secret holds no TOTP seed.
    #[error(transparent)]
    Totp(#[from] crate::totp::TotpError),
}

/// Replaces every placeholder in `text` with its value (`{{totp:NAME}}`
/// with the current code of the seed `NAME` holds), registering each value
/// and code with `sanitizer` first; says whether there was any. Runs only
/// where the result is typed.
pub async fn resolve(
    text: &str,
    store: &dyn SecretStore,
    sanitizer: &crate::Sanitizer,
) -> Result<(Secret, bool), ResolveError> {
    let names = placeholders(text);
    if names.is_empty() {
        return Ok((Secret::new(text), false));
    }
    let mut values = BTreeMap::new();
    for name in names {
        let value = store
            .get(&name)
            .await?
            .ok_or_else(|| ResolveError::Missing(name.clone()))?;
        sanitizer.register(&name, value.expose());
        values.insert(name, value);
    }
    let mut codes = BTreeMap::new();
    for c in PLACEHOLDER.captures_iter(text) {
        if c.get(1).is_some() && !codes.contains_key(&c[2]) {
            let code = crate::totp::code(&c[2], values[&c[2]].expose(), std::time::SystemTime::now())?;
            sanitizer.register(&format!("totp:{}", &c[2]), &code);
            codes.insert(c[2].to_string(), Secret::new(code));
        }
    }
    let out = PLACEHOLDER.replace_all(text, |c: &regex::Captures| {
        let from = if c.get(1).is_some() { &codes } else { &values };
        from.get(&c[2])
            .map(|v| v.expose().to_string())
            .unwrap_or_default()
    });
    Ok((Secret::new(out.into_owned()), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_placeholders() {
        assert_eq!(
            placeholders("log in as {{LOGIN_ID}} / {{ PASSWORD }} {{LOGIN_ID}}"),
            ["LOGIN_ID", "PASSWORD"]
        );
        assert!(placeholders("no {single} braces").is_empty());
    }

    #[test]
    fn parses_secret_files_and_hides_values() {
        let f = FileSecrets::parse("s.env", "# c\nLOGIN_ID=alice\nexport PASSWORD=\"a=b c\"\n").unwrap();
        assert_eq!(f.values["PASSWORD"], "a=b c");
        assert!(!format!("{f:?}").contains("alice"));
        assert_eq!(format!("{:?}", Secret::new("x")), "Secret(***)");
        let err = FileSecrets::parse("s.env", "PASSWORD\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[tokio::test]
    async fn resolves_and_registers() {
        let store = MemorySecrets::new([("PASSWORD", "hunter2")]);
        let s = crate::Sanitizer::new();
        let (v, secret) = resolve("pw: {{PASSWORD}}", &store, &s).await.unwrap();
        assert!(secret);
        assert_eq!(v.expose(), "pw: hunter2");
        assert_eq!(s.clean("hunter2"), "{{PASSWORD}}");
        let err = resolve("{{NOPE}}", &store, &s).await.unwrap_err();
        assert!(matches!(err, ResolveError::Missing(n) if n == "NOPE"));
    }
}
