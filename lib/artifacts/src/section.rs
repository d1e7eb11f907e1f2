//! `[store]`, the artefact store's section of the configuration file.

use serde::{Deserialize, Serialize};

/// `[store]`: S3.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// `s3://bucket/prefix`; `OXWRIGHT_S3` or `--s3` override. Without it
    /// artefacts go to `out_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<String>,
    /// A custom S3 endpoint; `OXWRIGHT_S3_ENDPOINT` / `AWS_ENDPOINT_URL`
    /// or `--s3-endpoint` override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_endpoint: Option<String>,
    /// The region (else `AWS_REGION`, else us-east-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_region: Option<String>,
}
