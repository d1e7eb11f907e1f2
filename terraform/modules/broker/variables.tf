variable "name" {
  description = "Name of the broker and prefix of its resources."
  type        = string
}

variable "vpc_id" {
  description = "VPC the broker lives in."
  type        = string
}

variable "subnet_ids" {
  description = "Private subnets (one for SINGLE_INSTANCE, two or more for CLUSTER_MULTI_AZ)."
  type        = list(string)
}

variable "client_security_group_ids" {
  description = "Security groups allowed to reach AMQPS (the workers', the scheduler's, the worker Lambda's)."
  type        = list(string)
  default     = []
}

variable "engine_version" {
  description = "RabbitMQ version (Amazon MQ runs 3.13 and later)."
  type        = string
  default     = "3.13"
}

variable "instance_type" {
  description = "Broker instance type."
  type        = string
  default     = "mq.m5.large"
}

variable "deployment_mode" {
  description = "SINGLE_INSTANCE or CLUSTER_MULTI_AZ."
  type        = string
  default     = "CLUSTER_MULTI_AZ"
  validation {
    condition     = contains(["SINGLE_INSTANCE", "CLUSTER_MULTI_AZ"], var.deployment_mode)
    error_message = "deployment_mode is SINGLE_INSTANCE or CLUSTER_MULTI_AZ."
  }
}

variable "username" {
  description = "The broker user oxwright connects as."
  type        = string
  default     = "oxwright"
}

variable "kms_key_arn" {
  description = "KMS key encrypting the credentials secret; null uses the account's default key."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}
