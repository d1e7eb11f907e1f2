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

data "aws_secretsmanager_secret_version" "broker" {
  secret_id = var.broker_secret_arn
}

resource "aws_cloudwatch_log_group" "worker" {
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

resource "aws_iam_role" "worker" {
  name_prefix        = "${var.name}-"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

# Network interfaces in the VPC (to reach the private broker).
resource "aws_iam_role_policy_attachment" "vpc" {
  role       = aws_iam_role.worker.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
}

data "aws_iam_policy_document" "worker" {
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.worker.arn}:*"]
  }
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

resource "aws_iam_role_policy" "worker" {
  name   = "worker"
  role   = aws_iam_role.worker.id
  policy = data.aws_iam_policy_document.worker.json
}

resource "aws_security_group" "worker" {
  name_prefix = "${var.name}-"
  description = "oxwright worker Lambda: no inbound"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.worker.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  description       = "HTTPS: S3 and the sites fetched"
}

resource "aws_vpc_security_group_egress_rule" "amqps" {
  security_group_id            = aws_security_group.worker.id
  referenced_security_group_id = var.broker_security_group_id
  ip_protocol                  = "tcp"
  from_port                    = 5671
  to_port                      = 5671
  description                  = "AMQPS to the broker (reports)"
}

resource "aws_lambda_function" "worker" {
  #checkov:skip=CKV_AWS_272:Lambda code signing covers .zip packages only; this function is a container image (sign the image in ECR instead)
  #checkov:skip=CKV_AWS_116:the event source mapping invokes it synchronously (no async DLQ applies); a failed job is dead-lettered by oxwright on the broker with error.json
  function_name                  = var.name
  role                           = aws_iam_role.worker.arn
  package_type                   = "Image"
  image_uri                      = var.image
  memory_size                    = var.memory_mb
  timeout                        = var.timeout_s
  reserved_concurrent_executions = var.reserved_concurrency
  kms_key_arn                    = var.env_kms_key_arn

  ephemeral_storage {
    size = var.tmp_mb
  }

  vpc_config {
    subnet_ids         = var.subnet_ids
    security_group_ids = [aws_security_group.worker.id]
  }

  # The function reads its configuration from the environment only. The
  # broker URL (with its password) is in the function's configuration,
  # encrypted with env_kms_key_arn, and in Terraform's state: keep the
  # state encrypted and access-controlled.
  environment {
    variables = merge({
      OXWRIGHT_S3       = var.store_url
      OXWRIGHT_AMQP_URL = jsondecode(data.aws_secretsmanager_secret_version.broker.secret_string)["amqp_url"]
      RUST_LOG          = "info"
    }, var.environment)
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [aws_cloudwatch_log_group.worker, aws_iam_role_policy_attachment.vpc]
  tags       = var.tags
}

resource "aws_lambda_event_source_mapping" "queue" {
  event_source_arn = var.broker_arn
  function_name    = aws_lambda_function.worker.arn
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
