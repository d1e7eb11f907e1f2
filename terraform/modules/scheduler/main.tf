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

resource "aws_cloudwatch_log_group" "scheduler" {
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.log_kms_key_arn
  tags              = var.tags
}

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "scheduler" {
  name_prefix        = "${var.name}-"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "vpc" {
  role       = aws_iam_role.scheduler.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
}

# Writes each batch's batch.json; reads nothing else.
data "aws_iam_policy_document" "scheduler" {
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.scheduler.arn}:*"]
  }
  statement {
    sid       = "Batches"
    actions   = ["s3:PutObject"]
    resources = ["${var.bucket_arn}/${var.store_prefix}batches/*"]
  }
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "scheduler"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.scheduler.json
}

resource "aws_security_group" "scheduler" {
  name_prefix = "${var.name}-"
  description = "oxwright scheduler Lambda: no inbound"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.scheduler.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  description       = "HTTPS to S3"
}

resource "aws_vpc_security_group_egress_rule" "amqps" {
  security_group_id            = aws_security_group.scheduler.id
  referenced_security_group_id = var.broker_security_group_id
  ip_protocol                  = "tcp"
  from_port                    = 5671
  to_port                      = 5671
  description                  = "AMQPS to the broker"
}

resource "aws_lambda_function" "scheduler" {
  #checkov:skip=CKV_AWS_272:Lambda code signing covers .zip packages only; this function is a container image (sign the image in ECR instead)
  #checkov:skip=CKV_AWS_116:a failed tick is logged and the next tick submits again; a DLQ of schedule events holds nothing worth replaying
  function_name                  = var.name
  role                           = aws_iam_role.scheduler.arn
  package_type                   = "Image"
  image_uri                      = var.image
  memory_size                    = 256
  timeout                        = 60
  reserved_concurrent_executions = 1
  kms_key_arn                    = var.env_kms_key_arn

  image_config {
    entry_point = ["/usr/local/bin/oxwright-scheduler-lambda"]
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = [aws_security_group.scheduler.id]
  }

  # The template travels in the environment (OXWRIGHT_SCHEDULE_JOB); the
  # broker URL with its password is encrypted with env_kms_key_arn and is
  # in Terraform's state: keep the state encrypted and access-controlled.
  environment {
    variables = {
      OXWRIGHT_S3            = var.store_url
      OXWRIGHT_AMQP_URL      = jsondecode(data.aws_secretsmanager_secret_version.broker.secret_string)["amqp_url"]
      OXWRIGHT_SCHEDULE_JOB  = jsonencode(var.job_template)
      OXWRIGHT_SCHEDULE_NAME = var.name
      RUST_LOG               = "info"
    }
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [aws_cloudwatch_log_group.scheduler, aws_iam_role_policy_attachment.vpc]
  tags       = var.tags
}

resource "aws_cloudwatch_event_rule" "tick" {
  name                = var.name
  description         = "oxwright: submit the job template on a schedule"
  schedule_expression = var.schedule_expression
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "scheduler" {
  rule = aws_cloudwatch_event_rule.tick.name
  arn  = aws_lambda_function.scheduler.arn
}

resource "aws_lambda_permission" "events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.scheduler.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.tick.arn
}
