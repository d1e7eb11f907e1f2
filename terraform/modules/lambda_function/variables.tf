variable "name" {
  description = "Function name and prefix of its role and security group."
  type        = string
}

variable "description" {
  description = "What the function is, for its security group (e.g. \"oxwright worker Lambda\")."
  type        = string
}

variable "image" {
  description = "The Lambda image (infra/docker/lambda.Dockerfile) in ECR."
  type        = string
}

variable "entry_point" {
  description = "The image's entry point for this function; null keeps the image's (the worker)."
  type        = list(string)
  default     = null
}

variable "limits" {
  description = "Memory, timeout, reserved concurrency (-1: unreserved) and /tmp size."
  type = object({
    memory_mb            = number
    timeout_s            = number
    reserved_concurrency = number
    tmp_mb               = optional(number, 512)
  })
}

variable "network" {
  description = "Where the function runs: its VPC and private subnets, the broker's security group, and why it needs HTTPS out."
  type = object({
    vpc_id                   = string
    subnet_ids               = list(string)
    broker_security_group_id = string
    https_reason             = string
  })
}

variable "policy_json" {
  description = "The function's grants besides writing its own logs (an IAM policy document)."
  type        = string
}

variable "role_policy_name" {
  description = "Name of the role's inline policy."
  type        = string
}

variable "environment" {
  description = "The function's whole environment."
  type        = map(string)
}

variable "env_kms_key_arn" {
  description = "KMS key encrypting the function's environment; null uses the AWS-managed key."
  type        = string
  default     = null
}

variable "logs" {
  description = "The log group: days kept and the KMS key encrypting it (null: CloudWatch's default encryption)."
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
