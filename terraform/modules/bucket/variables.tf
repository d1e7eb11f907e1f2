variable "bucket_name" {
  description = "Name of the artefact bucket (globally unique)."
  type        = string
}

variable "prefix" {
  description = "Key prefix oxwright writes under (OXWRIGHT_S3=s3://bucket/<prefix>); empty or ending in '/'."
  type        = string
  default     = ""
}

variable "jobs_retention_days" {
  description = "Days a job's artefacts (jobs/<kind>/<id>/) are kept."
  type        = number
  default     = 30
}

variable "sessions_retention_days" {
  description = "Days a workflow session's artefacts (sessions/<id>/) are kept."
  type        = number
  default     = 90
}

variable "kms_key_arn" {
  description = "KMS key for SSE-KMS; null uses SSE-S3 (AES256)."
  type        = string
  default     = null
}

variable "access_log_bucket" {
  description = "Bucket receiving the server access logs; null: no access logs."
  type        = string
  default     = null
}

variable "force_destroy" {
  description = "Let terraform destroy a bucket that still holds objects."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}
