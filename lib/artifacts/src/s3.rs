//! `S3Store`: artefacts in an S3 bucket (AWS, or any S3-compatible server
//! through a custom endpoint with path-style addressing), under an
//! optional key prefix.
//!
//! `append` is a read-modify-write of the whole object: it is safe for one
//! writer per key (appends from one process are serialised by a per-key
//! lock), which holds for batch manifests and session step logs, each
//! written by the one scheduler or worker that owns the batch or session.
//! Two processes appending to one key can lose lines.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_smithy_http_client::tls;
use bytes::{Bytes, BytesMut};
use tracing::debug;

use crate::store::terminated_line;
use crate::{ArtifactError, ArtifactStore, Expect, Version, validate_key, validate_prefix};

/// Default size above which `put` uses a multipart upload (8 MiB).
pub const DEFAULT_MULTIPART_THRESHOLD: usize = 8 * 1024 * 1024;
/// Default multipart part size (8 MiB; S3 requires at least 5 MiB for
/// every part but the last).
pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;
/// Smallest part S3 accepts (but for the last one).
const MIN_PART_SIZE: usize = 5 * 1024 * 1024;
/// Region used when neither the config nor the environment names one.
const FALLBACK_REGION: &str = "us-east-1";

/// Where an [`S3Store`] keeps artefacts.
#[derive(Debug, Clone)]
pub struct S3Config {
    /// The bucket.
    pub bucket: String,
    /// A key prefix inside the bucket (`""` for none); a missing trailing
    /// `/` is added.
    pub prefix: String,
    /// A custom endpoint (`http://127.0.0.1:9000` for a local server);
    /// `None` for AWS. Requests use path-style addressing either way.
    pub endpoint: Option<String>,
    /// The region; `None` takes it from the AWS environment
    /// (`AWS_REGION`, profile), falling back to `us-east-1`.
    pub region: Option<String>,
    /// Bodies larger than this go up as multipart uploads.
    pub multipart_threshold: usize,
    /// Size of each multipart part (at least 5 MiB).
    pub part_size: usize,
    /// Fixed credentials; `None` takes them from the AWS chain.
    pub credentials: Option<S3Credentials>,
}

/// A fixed access key pair (a local S3 server, tests).
#[derive(Clone)]
pub struct S3Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

impl std::fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"***")
            .finish()
    }
}

impl S3Config {
    /// Returns the settings for `bucket` with no prefix, AWS's endpoint and
    /// default multipart sizes.
    pub fn new(bucket: impl Into<String>) -> Self {
        Self {
            bucket: bucket.into(),
            prefix: String::new(),
            endpoint: None,
            region: None,
            multipart_threshold: DEFAULT_MULTIPART_THRESHOLD,
            part_size: DEFAULT_PART_SIZE,
            credentials: None,
        }
    }
}

/// An [`ArtifactStore`] on S3. Credentials come from the usual AWS chain
/// (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, profile, container or
/// instance role).
#[derive(Debug, Clone)]
pub struct S3Store {
    client: Client,
    config: Arc<S3Config>,
    /// Full prefix inside the bucket, `""` or ending in `/`.
    prefix: String,
    /// Serialises appends to one key within this process.
    append_locks: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl S3Store {
    /// Builds a client for `config`. Makes no request: a wrong endpoint or
    /// missing bucket shows on the first operation.
    pub async fn new(config: S3Config) -> Result<Self, ArtifactError> {
        let prefix = normalise_prefix(&config.prefix)?;
        if config.part_size < MIN_PART_SIZE {
            return Err(ArtifactError::invalid_key(
                &config.prefix,
                format!("part_size {} is below S3's 5 MiB minimum", config.part_size),
            ));
        }
        let http_client = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
            .build_https();
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(http_client);
        if let Some(region) = &config.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(creds) = &config.credentials {
            loader = loader.credentials_provider(Credentials::new(
                &creds.access_key_id,
                &creds.secret_access_key,
                None,
                None,
                "oxwright-s3-config",
            ));
        }
        let shared = loader.load().await;
        let mut builder = aws_sdk_s3::config::Builder::from(&shared).force_path_style(true);
        if shared.region().is_none() {
            builder = builder.region(Region::new(FALLBACK_REGION));
        }
        if let Some(endpoint) = &config.endpoint {
            // S3-compatible servers often lack the SDK's default flexible
            // checksums (aws-chunked bodies); send them only when required.
            builder = builder
                .endpoint_url(endpoint)
                .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
                .response_checksum_validation(ResponseChecksumValidation::WhenRequired);
        }
        Ok(Self {
            client: Client::from_conf(builder.build()),
            config: Arc::new(config),
            prefix,
            append_locks: Arc::default(),
        })
    }

    /// Returns the SDK client (e.g. to create a bucket in a test).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Returns the bucket name.
    pub fn bucket(&self) -> &str {
        &self.config.bucket
    }

    /// Creates the bucket unless it exists already.
    pub async fn create_bucket(&self) -> Result<(), ArtifactError> {
        let bucket = &self.config.bucket;
        match self.client.create_bucket().bucket(bucket).send().await {
            Ok(_) => Ok(()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_bucket_already_owned_by_you() || e.is_bucket_already_exists()) =>
            {
                Ok(())
            }
            Err(err) => Err(backend_error(bucket, err)),
        }
    }

    fn full_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    async fn put_single(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        self.client
            .put_object()
            .bucket(&self.config.bucket)
            .key(self.full_key(key))
            .content_type(content_type)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| backend_error(key, e))?;
        Ok(())
    }

    async fn put_multipart(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        let full_key = self.full_key(key);
        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.config.bucket)
            .key(&full_key)
            .content_type(content_type)
            .send()
            .await
            .map_err(|e| backend_error(key, e))?;
        let upload_id = created
            .upload_id()
            .ok_or_else(|| ArtifactError::Backend {
                key: key.to_owned(),
                message: "create multipart upload returned no upload id".to_owned(),
                retryable: true,
                source: None,
            })?
            .to_owned();
        let result = self.upload_parts(key, &full_key, &upload_id, &body).await;
        if result.is_err() {
            // Best effort: a dangling upload only costs storage until the
            // bucket's lifecycle rule removes it.
            let _ = self
                .client
                .abort_multipart_upload()
                .bucket(&self.config.bucket)
                .key(&full_key)
                .upload_id(&upload_id)
                .send()
                .await;
        }
        result
    }

    async fn upload_parts(
        &self,
        key: &str,
        full_key: &str,
        upload_id: &str,
        body: &Bytes,
    ) -> Result<(), ArtifactError> {
        let mut parts = Vec::new();
        let mut offset = 0;
        let mut number = 1;
        while offset < body.len() {
            let end = (offset + self.config.part_size).min(body.len());
            let uploaded = self
                .client
                .upload_part()
                .bucket(&self.config.bucket)
                .key(full_key)
                .upload_id(upload_id)
                .part_number(number)
                .body(ByteStream::from(body.slice(offset..end)))
                .send()
                .await
                .map_err(|e| backend_error(key, e))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(uploaded.e_tag().map(str::to_owned))
                    .build(),
            );
            offset = end;
            number += 1;
        }
        debug!(key, parts = parts.len(), "multipart upload complete");
        self.client
            .complete_multipart_upload()
            .bucket(&self.config.bucket)
            .key(full_key)
            .upload_id(upload_id)
            .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
            .send()
            .await
            .map_err(|e| backend_error(key, e))?;
        Ok(())
    }

    /// Returns the object under `key`, `None` when there is none.
    async fn get_opt(&self, key: &str) -> Result<Option<Bytes>, ArtifactError> {
        Ok(self.get_tagged(key).await?.map(|(body, _)| body))
    }

    /// Returns the object under `key` with its ETag, `None` when there is
    /// none.
    async fn get_tagged(&self, key: &str) -> Result<Option<(Bytes, Option<String>)>, ArtifactError> {
        let output = match self
            .client
            .get_object()
            .bucket(&self.config.bucket)
            .key(self.full_key(key))
            .send()
            .await
        {
            Ok(output) => output,
            Err(err) if is_not_found(&err) || err.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                return Ok(None);
            }
            Err(err) => return Err(backend_error(key, err)),
        };
        let tag = output.e_tag().map(str::to_owned);
        let body = output.body.collect().await.map_err(|e| ArtifactError::Backend {
            key: key.to_owned(),
            message: format!("reading body: {e}"),
            retryable: true,
            source: Some(Box::new(e)),
        })?;
        Ok(Some((body.into_bytes(), tag)))
    }

    fn append_lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.append_locks.lock().unwrap_or_else(|e| e.into_inner());
        // Forget locks nobody holds, so the map does not grow with every key.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        Arc::clone(locks.entry(key.to_owned()).or_default())
    }
}

fn normalise_prefix(prefix: &str) -> Result<String, ArtifactError> {
    if prefix.is_empty() {
        return Ok(String::new());
    }
    let prefix = if prefix.ends_with('/') {
        prefix.to_owned()
    } else {
        format!("{prefix}/")
    };
    validate_prefix(&prefix)?;
    Ok(prefix)
}

/// Says whether the service answered 404.
fn is_not_found<E, R>(err: &SdkError<E, R>) -> bool
where
    R: HttpStatus,
{
    err.raw_response().is_some_and(|r| r.status_code() == 404)
}

/// The HTTP status of a raw response (lets `is_not_found` stay generic).
trait HttpStatus {
    fn status_code(&self) -> u16;
}

impl HttpStatus for aws_sdk_s3::config::http::HttpResponse {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

/// Wraps an SDK error: retryable when the request never got an answer or
/// the service was throttling or failing (429, 5xx).
fn backend_error<E>(key: &str, err: SdkError<E, aws_sdk_s3::config::http::HttpResponse>) -> ArtifactError
where
    E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
{
    let retryable = match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(e) => {
            let status = e.raw().status().as_u16();
            status == 429 || status >= 500
        }
        _ => false,
    };
    let message = match err.as_service_error().and_then(ProvideErrorMetadata::code) {
        Some(code) => format!("{code}: {}", DisplayErrorContext(&err)),
        None => DisplayErrorContext(&err).to_string(),
    };
    ArtifactError::Backend {
        key: key.to_owned(),
        message,
        retryable,
        source: Some(Box::new(err)),
    }
}

#[async_trait]
impl ArtifactStore for S3Store {
    // One span per object written: the S3 leg of a job's trace.
    #[tracing::instrument(name = "s3.put", skip_all, fields(key = %key, bytes = body.len()))]
    async fn put(&self, key: &str, body: Bytes, content_type: &str) -> Result<(), ArtifactError> {
        validate_key(key)?;
        if body.len() > self.config.multipart_threshold {
            self.put_multipart(key, body, content_type).await
        } else {
            self.put_single(key, body, content_type).await
        }
    }

    async fn get(&self, key: &str) -> Result<Bytes, ArtifactError> {
        validate_key(key)?;
        self.get_opt(key)
            .await?
            .ok_or_else(|| ArtifactError::NotFound { key: key.to_owned() })
    }

    async fn append(&self, key: &str, line: Bytes) -> Result<(), ArtifactError> {
        validate_key(key)?;
        let line = terminated_line(line);
        let lock = self.append_lock(key);
        let _held = lock.lock().await;
        let body = match self.get_opt(key).await? {
            Some(existing) => {
                let mut buf = BytesMut::with_capacity(existing.len() + line.len());
                buf.extend_from_slice(&existing);
                buf.extend_from_slice(&line);
                buf.freeze()
            }
            None => line,
        };
        self.put(key, body, "application/x-ndjson").await
    }

    async fn get_versioned(&self, key: &str) -> Result<(Bytes, Version), ArtifactError> {
        validate_key(key)?;
        match self.get_tagged(key).await? {
            Some((body, Some(tag))) => Ok((body, Version::new(tag))),
            Some((_, None)) => Err(ArtifactError::Backend {
                key: key.to_owned(),
                message: "the server sent no ETag, which conditional writes need".to_owned(),
                retryable: false,
                source: None,
            }),
            None => Err(ArtifactError::NotFound { key: key.to_owned() }),
        }
    }

    // One request whatever the size: conditional writes are for records,
    // and S3 takes a single PUT up to 5 GB.
    #[tracing::instrument(name = "s3.put_if", skip_all, fields(key = %key, bytes = body.len()))]
    async fn put_if(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        expect: &Expect,
    ) -> Result<Version, ArtifactError> {
        validate_key(key)?;
        let request = self
            .client
            .put_object()
            .bucket(&self.config.bucket)
            .key(self.full_key(key))
            .content_type(content_type)
            .body(ByteStream::from(body));
        let request = match expect {
            Expect::Absent => request.if_none_match("*"),
            Expect::Version(version) => request.if_match(version.as_str()),
        };
        match request.send().await {
            Ok(output) => Ok(Version::new(output.e_tag().unwrap_or_default())),
            // 412: another version is there; 409: another conditional write
            // of the key is under way; 404: the expected object is gone.
            Err(err)
                if err
                    .raw_response()
                    .is_some_and(|r| matches!(r.status().as_u16(), 404 | 409 | 412)) =>
            {
                Err(ArtifactError::Conflict { key: key.to_owned() })
            }
            Err(err) => Err(backend_error(key, err)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, ArtifactError> {
        validate_prefix(prefix)?;
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.config.bucket)
            .prefix(self.full_key(prefix))
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| backend_error(prefix, e))?;
            for object in page.contents() {
                if let Some(key) = object.key().and_then(|k| k.strip_prefix(self.prefix.as_str())) {
                    keys.push(key.to_owned());
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    async fn delete(&self, key: &str) -> Result<(), ArtifactError> {
        validate_key(key)?;
        // S3 answers a delete of a missing key with success.
        self.client
            .delete_object()
            .bucket(&self.config.bucket)
            .key(self.full_key(key))
            .send()
            .await
            .map_err(|e| backend_error(key, e))?;
        Ok(())
    }

    async fn exists(&self, key: &str) -> Result<bool, ArtifactError> {
        validate_key(key)?;
        match self
            .client
            .head_object()
            .bucket(&self.config.bucket)
            .key(self.full_key(key))
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if is_not_found(&err) || err.as_service_error().is_some_and(|e| e.is_not_found()) => {
                Ok(false)
            }
            Err(err) => Err(backend_error(key, err)),
        }
    }

    fn describe(&self) -> String {
        let endpoint = self.config.endpoint.as_deref().unwrap_or("AWS");
        format!(
            "S3 store at s3://{}/{} ({endpoint})",
            self.config.bucket, self.prefix
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalised() {
        assert_eq!(normalise_prefix("").unwrap(), "");
        assert_eq!(normalise_prefix("out").unwrap(), "out/");
        assert_eq!(normalise_prefix("a/b/").unwrap(), "a/b/");
        assert!(normalise_prefix("../x").is_err());
    }
}
