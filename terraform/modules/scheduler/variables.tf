variable "name" {
  description = "Function and rule name."
  type        = string
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "image" {
  description = "The Lambda image (infra/docker/lambda.Dockerfile) in ECR."
  type        = string
}

variable "env_kms_key_arn" {
  description = "KMS key encrypting the function's environment; null uses the AWS-managed key."
  type        = string
  default     = null
}

variable "schedule_expression" {
  description = "EventBridge schedule, e.g. rate(15 minutes) or cron(0 6 * * ? *)."
  type        = string
  default     = "rate(1 hour)"
}

variable "job_template" {
  description = "What each tick submits as a new batch: {kind = \"fetch\" | \"sitemap\", urls = [...], options = {FetchSpec fields but url}} (a schedule's job)."
  type = object({
    kind    = optional(string, "fetch")
    urls    = list(string)
    options = optional(map(any), {})
  })
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
  description = "OXWRIGHT_S3 (batch.json goes there)."
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

variable "broker_secret_arn" {
  description = "Secrets Manager secret with the broker's amqp_url."
  type        = string
}

variable "broker_security_group_id" {
  description = "The broker's security group."
  type        = string
}

variable "logs" {
  description = "The log group: days kept (a year by default; lower it to save cost) and the KMS key encrypting it (null: CloudWatch's default encryption)."
  type = object({
    retention_days = optional(number, 365)
    kms_key_arn    = optional(string)
  })
  default = {}
}
