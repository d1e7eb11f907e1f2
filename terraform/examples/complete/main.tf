# oxwright on AWS, complete: the artefact bucket, a private Amazon MQ
# RabbitMQ broker, the ECS Fargate workers scaled on queue depth, a worker
# Lambda for event-triggered checks and a scheduler Lambda on a schedule.
# Bring your own VPC with private subnets (NAT or VPC endpoints for S3,
# ECR and the sites you fetch) and push the images of infra/docker to ECR.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5"
    }
  }
}

provider "aws" {
  region = var.region
  default_tags {
    tags = var.tags
  }
}

locals {
  prefix = "prod/"
}

module "bucket" {
  source      = "../../modules/bucket"
  bucket_name = var.bucket_name
  prefix      = local.prefix
}

module "broker" {
  source     = "../../modules/broker"
  name       = var.name
  vpc_id     = var.vpc_id
  subnet_ids = var.private_subnet_ids
  client_security_group_ids = [
    module.workers.security_group_id,
    module.worker_lambda.security_group_id,
    module.scheduler.security_group_id,
  ]
}

module "workers" {
  source                   = "../../modules/workers_ecs"
  name                     = var.name
  image                    = var.worker_image
  vpc_id                   = var.vpc_id
  subnet_ids               = var.private_subnet_ids
  store_url                = module.bucket.store_url
  bucket_arn               = module.bucket.bucket_arn
  store_prefix             = local.prefix
  broker_secret_arn        = module.broker.credentials_secret_arn
  broker_security_group_id = module.broker.security_group_id
  broker_name              = var.name
  max_workers              = var.max_workers
  environment              = var.worker_environment
}

module "worker_lambda" {
  source                   = "../../modules/worker_lambda"
  name                     = "${var.name}-worker"
  image                    = var.lambda_image
  vpc_id                   = var.vpc_id
  subnet_ids               = var.private_subnet_ids
  store_url                = module.bucket.store_url
  bucket_arn               = module.bucket.bucket_arn
  store_prefix             = local.prefix
  broker_arn               = module.broker.broker_arn
  broker_secret_arn        = module.broker.credentials_secret_arn
  broker_security_group_id = module.broker.security_group_id
  environment              = var.worker_environment
}

module "scheduler" {
  source                   = "../../modules/scheduler"
  name                     = "${var.name}-scheduler"
  image                    = var.lambda_image
  schedule_expression      = var.schedule_expression
  job_template             = var.job_template
  vpc_id                   = var.vpc_id
  subnet_ids               = var.private_subnet_ids
  store_url                = module.bucket.store_url
  bucket_arn               = module.bucket.bucket_arn
  store_prefix             = local.prefix
  broker_secret_arn        = module.broker.credentials_secret_arn
  broker_security_group_id = module.broker.security_group_id
}
