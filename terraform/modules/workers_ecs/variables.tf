variable "name" {
  description = "Name prefix of the cluster, service and roles."
  type        = string
}

variable "image" {
  description = "The worker image (infra/docker/worker.Dockerfile), e.g. <account>.dkr.ecr.<region>.amazonaws.com/oxwright:<tag>."
  type        = string
}

variable "vpc_id" {
  description = "VPC of the tasks."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets of the tasks (with a NAT or endpoints to reach S3 and the sites)."
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
  description = "Key prefix of the store inside the bucket (the tasks may touch nothing else)."
  type        = string
  default     = ""
}

variable "broker_secret_arn" {
  description = "Secrets Manager secret with the broker's amqp_url."
  type        = string
}

variable "broker_security_group_id" {
  description = "The broker's security group (AMQPS egress goes there)."
  type        = string
}

variable "broker_name" {
  description = "The Amazon MQ broker's name (CloudWatch dimension Broker)."
  type        = string
}

variable "queue_name" {
  description = "The queue whose depth scales the service (oxwright's fetch queue)."
  type        = string
  default     = "oxwright.fetch"
}

variable "cpu" {
  description = "Task CPU units (Chromium wants a vCPU per ~2 pages in flight)."
  type        = number
  default     = 2048
}

variable "memory" {
  description = "Task memory in MiB (~400 MiB per browser plus ~150 per page)."
  type        = number
  default     = 4096
}

variable "pages_per_browser" {
  description = "Pages each task's browser serves at once."
  type        = number
  default     = 4
}

variable "min_workers" {
  description = "Fewest tasks."
  type        = number
  default     = 1
}

variable "max_workers" {
  description = "Most tasks."
  type        = number
  default     = 20
}

variable "messages_per_worker" {
  description = "Messages waiting per task that target tracking aims for."
  type        = number
  default     = 50
}

variable "environment" {
  description = "More environment for the worker (OXWRIGHT_<SECTION>__<KEY> overrides, OXWRIGHT_ALLOW_HOSTS …); no secrets here."
  type        = map(string)
  default     = {}
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
