# The artefact bucket: results, logs, screenshots and error artefacts of
# every job and session. Private, encrypted, versioned; job and session
# artefacts expire after their retention.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

resource "aws_s3_bucket" "artefacts" {
  #checkov:skip=CKV_AWS_144:artefacts are job outputs a run can make again; replicate with your own rule if you need a second region
  #checkov:skip=CKV2_AWS_62:nothing reacts to new artefacts; the scheduler reads reports from the broker
  #checkov:skip=CKV_AWS_18:access logs need a second bucket: pass access_log_bucket to turn them on (aws_s3_bucket_logging below)
  bucket        = var.bucket_name
  force_destroy = var.force_destroy
  tags          = var.tags
}

resource "aws_s3_bucket_logging" "artefacts" {
  count         = var.access_log_bucket == null ? 0 : 1
  bucket        = aws_s3_bucket.artefacts.id
  target_bucket = var.access_log_bucket
  target_prefix = "oxwright/${var.bucket_name}/"
}

resource "aws_s3_bucket_public_access_block" "artefacts" {
  bucket                  = aws_s3_bucket.artefacts.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "artefacts" {
  bucket = aws_s3_bucket.artefacts.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_versioning" "artefacts" {
  bucket = aws_s3_bucket.artefacts.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "artefacts" {
  bucket = aws_s3_bucket.artefacts.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "artefacts" {
  bucket = aws_s3_bucket.artefacts.id

  rule {
    id     = "jobs"
    status = "Enabled"
    filter {
      prefix = "${var.prefix}jobs/"
    }
    expiration {
      days = var.jobs_retention_days
    }
    noncurrent_version_expiration {
      noncurrent_days = 7
    }
  }

  rule {
    id     = "sessions"
    status = "Enabled"
    filter {
      prefix = "${var.prefix}sessions/"
    }
    expiration {
      days = var.sessions_retention_days
    }
    noncurrent_version_expiration {
      noncurrent_days = 7
    }
  }

  rule {
    id     = "incomplete-uploads"
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = 2
    }
  }
}

# TLS only: a request over plain HTTP is refused.
data "aws_iam_policy_document" "tls_only" {
  statement {
    sid     = "DenyInsecureTransport"
    effect  = "Deny"
    actions = ["s3:*"]
    resources = [
      aws_s3_bucket.artefacts.arn,
      "${aws_s3_bucket.artefacts.arn}/*",
    ]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "artefacts" {
  bucket     = aws_s3_bucket.artefacts.id
  policy     = data.aws_iam_policy_document.tls_only.json
  depends_on = [aws_s3_bucket_public_access_block.artefacts]
}
