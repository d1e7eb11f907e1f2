# The scheduler as a Lambda function behind an EventBridge schedule: on
# each tick it publishes the configured job template to the broker,
# confirmed (the code `oxwright submit` uses). Same image as the worker
# function, its other entry point.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

data "aws_secretsmanager_secret_version" "broker" {
  secret_id = var.broker_secret_arn
}

# Writes each batch's batch.json; reads nothing else.
data "aws_iam_policy_document" "scheduler" {
  statement {
    sid       = "Batches"
    actions   = ["s3:PutObject"]
    resources = ["${var.bucket_arn}/${var.store_prefix}batches/*"]
  }
}

# The template travels in the environment (OXWRIGHT_SCHEDULE_JOB).
module "function" {
  source           = "../lambda_function"
  name             = var.name
  description      = "oxwright scheduler Lambda"
  image            = var.image
  entry_point      = ["/usr/local/bin/oxwright-scheduler-lambda"]
  policy_json      = data.aws_iam_policy_document.scheduler.json
  role_policy_name = "scheduler"
  limits = {
    memory_mb            = 256
    timeout_s            = 60
    reserved_concurrency = 1
  }
  network = {
    vpc_id                   = var.vpc_id
    subnet_ids               = var.subnet_ids
    broker_security_group_id = var.broker_security_group_id
    https_reason             = "HTTPS to S3"
  }
  environment = {
    OXWRIGHT_S3            = var.store_url
    OXWRIGHT_AMQP_URL      = jsondecode(data.aws_secretsmanager_secret_version.broker.secret_string)["amqp_url"]
    OXWRIGHT_SCHEDULE_JOB  = jsonencode(var.job_template)
    OXWRIGHT_SCHEDULE_NAME = var.name
    RUST_LOG               = "info"
  }
  env_kms_key_arn = var.env_kms_key_arn
  logs            = var.logs
  tags            = var.tags
}

resource "aws_cloudwatch_event_rule" "tick" {
  name                = var.name
  description         = "oxwright: submit the job template on a schedule"
  schedule_expression = var.schedule_expression
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "scheduler" {
  rule = aws_cloudwatch_event_rule.tick.name
  arn  = module.function.function_arn
}

resource "aws_lambda_permission" "events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = module.function.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.tick.arn
}
