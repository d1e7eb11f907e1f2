# The worker as a Lambda function (infra/docker/lambda.Dockerfile), fed by
# an Amazon MQ event source mapping on one queue: for event-triggered and
# bursty checks. AWS runs ONE concurrent execution environment per RabbitMQ
# event source mapping unless AWS Support raises it, so horizontal batch
# throughput comes from the ECS workers (workers_ecs), not from here.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

# Checks on cloud events: the routes travel in the environment
# (OXWRIGHT_CHECK_EVENTS), the check files in the image.
locals {
  check_environment = var.checks.routes == null ? {} : {
    OXWRIGHT_SCHEDULER__CHECKS = var.checks.dir
    OXWRIGHT_CHECK_EVENTS      = var.checks.routes
  }
}

data "aws_secretsmanager_secret_version" "broker" {
  secret_id = var.broker_secret_arn
}

data "aws_iam_policy_document" "worker" {
  statement {
    sid       = "Artefacts"
    actions   = ["s3:GetObject", "s3:PutObject"]
    resources = ["${var.bucket_arn}/${var.store_prefix}*"]
  }
  statement {
    sid       = "ListArtefacts"
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.store_prefix}*"]
    }
  }
  # What the event source mapping needs to read the queue for the function.
  statement {
    sid       = "Broker"
    actions   = ["mq:DescribeBroker"]
    resources = [var.broker_arn]
  }
  statement {
    sid       = "BrokerSecret"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.broker_secret_arn]
  }
}

module "function" {
  source           = "../lambda_function"
  name             = var.name
  description      = "oxwright worker Lambda"
  image            = var.image
  policy_json      = data.aws_iam_policy_document.worker.json
  role_policy_name = "worker"
  limits = {
    memory_mb            = var.memory_mb
    timeout_s            = var.timeout_s
    reserved_concurrency = var.reserved_concurrency
    tmp_mb               = var.tmp_mb
  }
  network = {
    vpc_id                   = var.vpc_id
    subnet_ids               = var.subnet_ids
    broker_security_group_id = var.broker_security_group_id
    https_reason             = "HTTPS: S3 and the sites fetched"
  }
  environment = merge({
    OXWRIGHT_S3       = var.store_url
    OXWRIGHT_AMQP_URL = jsondecode(data.aws_secretsmanager_secret_version.broker.secret_string)["amqp_url"]
    RUST_LOG          = "info"
  }, local.check_environment, var.environment)
  env_kms_key_arn = var.env_kms_key_arn
  logs            = var.logs
  tags            = var.tags
}

resource "aws_lambda_event_source_mapping" "queue" {
  event_source_arn = var.broker_arn
  function_name    = module.function.function_arn
  queues           = [var.queue_name]
  batch_size       = var.batch_size
  enabled          = true

  source_access_configuration {
    type = "VIRTUAL_HOST"
    uri  = "/"
  }

  source_access_configuration {
    type = "BASIC_AUTH"
    uri  = var.broker_secret_arn
  }
}

# EventBridge rules that run checks: a schedule, or a pattern of events
# (a deploy's); a route names the rule with `rule`.
resource "aws_cloudwatch_event_rule" "check" {
  for_each            = var.checks.rules
  name                = each.key
  description         = "oxwright checks on ${var.name}"
  schedule_expression = each.value.schedule
  event_pattern       = each.value.pattern
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "check" {
  for_each = var.checks.rules
  rule     = aws_cloudwatch_event_rule.check[each.key].name
  arn      = module.function.function_arn
}

resource "aws_lambda_permission" "check_rule" {
  for_each      = var.checks.rules
  statement_id  = "check-rule-${each.key}"
  action        = "lambda:InvokeFunction"
  function_name = module.function.function_arn
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.check[each.key].arn
}

resource "aws_lambda_permission" "check_bucket" {
  for_each      = toset(var.checks.buckets)
  statement_id  = "check-bucket-${replace(each.key, "/[^A-Za-z0-9_-]/", "-")}"
  action        = "lambda:InvokeFunction"
  function_name = module.function.function_arn
  principal     = "s3.amazonaws.com"
  source_arn    = each.key
}
