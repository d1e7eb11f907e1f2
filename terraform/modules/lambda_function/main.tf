# One oxwright image function in the VPC: its log group, its role (the VPC
# access policy, writing its own logs, and the statements its caller
# grants), a security group with no inbound and two outbound rules (HTTPS,
# AMQPS to the broker), and the function. The worker and the scheduler
# functions are both this, with their own entry point, limits and grants.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.logs.retention_days
  kms_key_id        = var.logs.kms_key_arn
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

resource "aws_iam_role" "this" {
  name_prefix        = "${var.name}-"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

# Network interfaces in the VPC (to reach the private broker).
resource "aws_iam_role_policy_attachment" "vpc" {
  role       = aws_iam_role.this.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
}

data "aws_iam_policy_document" "this" {
  source_policy_documents = [var.policy_json]
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:*"]
  }
}

resource "aws_iam_role_policy" "this" {
  name   = var.role_policy_name
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.this.json
}

resource "aws_security_group" "this" {
  name_prefix = "${var.name}-"
  description = "${var.description}: no inbound"
  vpc_id      = var.network.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.this.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  description       = var.network.https_reason
}

resource "aws_vpc_security_group_egress_rule" "amqps" {
  security_group_id            = aws_security_group.this.id
  referenced_security_group_id = var.network.broker_security_group_id
  ip_protocol                  = "tcp"
  from_port                    = 5671
  to_port                      = 5671
  description                  = "AMQPS to the broker"
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_272:Lambda code signing covers .zip packages only; this function is a container image (sign the image in ECR instead)
  #checkov:skip=CKV_AWS_116:the worker's event source mapping invokes it synchronously (a failed job is dead-lettered by oxwright on the broker with error.json); a failed scheduler tick is logged and the next tick submits again
  function_name                  = var.name
  role                           = aws_iam_role.this.arn
  package_type                   = "Image"
  image_uri                      = var.image
  memory_size                    = var.limits.memory_mb
  timeout                        = var.limits.timeout_s
  reserved_concurrent_executions = var.limits.reserved_concurrency
  kms_key_arn                    = var.env_kms_key_arn

  image_config {
    entry_point = var.entry_point
  }

  ephemeral_storage {
    size = var.limits.tmp_mb
  }

  vpc_config {
    subnet_ids         = var.network.subnet_ids
    security_group_ids = [aws_security_group.this.id]
  }

  # The function reads its configuration from the environment only. What
  # the caller puts there (the broker URL with its password) is encrypted
  # with env_kms_key_arn and is in Terraform's state: keep the state
  # encrypted and access-controlled.
  environment {
    variables = var.environment
  }

  tracing_config {
    mode = "Active"
  }

  depends_on = [aws_cloudwatch_log_group.this, aws_iam_role_policy_attachment.vpc]
  tags       = var.tags
}
