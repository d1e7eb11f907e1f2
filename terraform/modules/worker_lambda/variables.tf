variable "name" {
  description = "Function name and prefix of its role and security group."
  type        = string
}

variable "image" {
  description = "The Lambda image (infra/docker/lambda.Dockerfile) in ECR."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the function (the broker's)."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the function."
  type        = list(string)
}

variable "store_url" {
  description = "OXWRIGHT_S3 (the bucket module's store_url)."
  type        = string
}

variable "bucket_arn" {
  description = "The artefact bucket's ARN."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the store inside the bucket."
  type        = string
  default     = ""
}

variable "broker_arn" {
  description = "The Amazon MQ broker (the event source)."
  type        = string
}

variable "broker_secret_arn" {
  description = "Secrets Manager secret with the broker's username, password and amqp_url."
  type        = string
}

variable "broker_security_group_id" {
  description = "The broker's security group."
  type        = string
}

variable "queue_name" {
  description = "The queue the function consumes (e.g. oxwright.workflow for event-triggered UI checks)."
  type        = string
  default     = "oxwright.workflow"
}

variable "batch_size" {
  description = "Messages per invocation."
  type        = number
  default     = 1
}

variable "memory_mb" {
  description = "Function memory (Chromium needs at least ~1.5 GB)."
  type        = number
  default     = 3008
}

variable "timeout_s" {
  description = "Function timeout; each job is bounded by the time left."
  type        = number
  default     = 300
}

variable "tmp_mb" {
  description = "Size of /tmp (profiles and artefacts in flight)."
  type        = number
  default     = 2048
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions (-1: unreserved)."
  type        = number
  default     = 5
}

variable "environment" {
  description = "More environment (OXWRIGHT_ALLOW_HOSTS, OXWRIGHT_<SECTION>__<KEY> …); no secrets here."
  type        = map(string)
  default     = {}
}

variable "env_kms_key_arn" {
  description = "KMS key encrypting the function's environment; null uses the AWS-managed key."
  type        = string
  default     = null
}

variable "logs" {
  description = "The log group: days kept (a year by default; lower it to save cost) and the KMS key encrypting it (null: CloudWatch's default encryption)."
  type = object({
    retention_days = optional(number, 365)
    kms_key_arn    = optional(string)
  })
  default = {}
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "checks" {
  description = "Checks the function runs on cloud events (the book's Checks chapter, \"On a cloud event\"): `dir` holds the check files in the image; `routes` is the OXWRIGHT_CHECK_EVENTS table as JSON (null: no checks); each `rules` entry is an EventBridge rule of that name invoking the function, on a `schedule` expression or an event `pattern` (JSON), for a route's `rule`; `buckets` are the ARNs of the S3 buckets allowed to invoke it (their notification configuration stays with the bucket)."
  type = object({
    dir    = optional(string, "/var/task/checks")
    routes = optional(string)
    rules = optional(map(object({
      schedule = optional(string)
      pattern  = optional(string)
    })), {})
    buckets = optional(list(string), [])
  })
  default = {}
}
