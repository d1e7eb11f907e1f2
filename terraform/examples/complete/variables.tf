variable "region" {
  description = "AWS region."
  type        = string
  default     = "eu-west-1"
}

variable "name" {
  description = "Name prefix of every resource (and the broker's name)."
  type        = string
  default     = "oxwright"
}

variable "bucket_name" {
  description = "The artefact bucket (globally unique)."
  type        = string
}

variable "vpc_id" {
  description = "Your VPC."
  type        = string
}

variable "private_subnet_ids" {
  description = "Two or more private subnets in different zones."
  type        = list(string)
}

variable "worker_image" {
  description = "ECR URI of infra/docker/worker.Dockerfile's image."
  type        = string
}

variable "lambda_image" {
  description = "ECR URI of infra/docker/lambda.Dockerfile's image."
  type        = string
}

variable "max_workers" {
  description = "Most ECS worker tasks."
  type        = number
  default     = 20
}

variable "worker_environment" {
  description = "Environment of the workers (e.g. OXWRIGHT_ALLOW_HOSTS); no secrets."
  type        = map(string)
  default     = {}
}

variable "schedule_expression" {
  description = "When the scheduler function submits its template."
  type        = string
  default     = "rate(1 hour)"
}

variable "job_template" {
  description = "The batch the scheduler submits on each tick."
  type = object({
    kind    = optional(string, "fetch")
    urls    = list(string)
    options = optional(map(any), {})
  })
  default = {
    urls = ["https://example.com/"]
  }
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = { app = "oxwright" }
}
