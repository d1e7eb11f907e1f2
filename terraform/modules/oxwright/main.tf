# oxwright deployment module (skeleton). Resources arrive with the
# distributed mode: Amazon MQ (RabbitMQ), an S3 bucket for artefacts,
# ECS services and/or Lambda functions for workers, and autoscaling on
# queue depth.

terraform {
  required_version = ">= 1.5"
}
