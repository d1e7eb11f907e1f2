# Amazon MQ for RabbitMQ: the job queues. Private (no public endpoint), in
# the given subnets, reachable on AMQPS (5671) from the workers' and the
# scheduler's security groups only; its credentials live in Secrets
# Manager, never in a variable or an output.

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

resource "random_password" "broker" {
  length  = 32
  special = false
}

resource "aws_secretsmanager_secret" "broker" {
  #checkov:skip=CKV2_AWS_57:rotating it means changing the Amazon MQ user in step (a rotation function of your own); the password is random and never leaves Secrets Manager and the functions' encrypted configuration
  name_prefix = "${var.name}-broker-"
  description = "oxwright RabbitMQ credentials (username, password, amqp_url)"
  kms_key_id  = var.kms_key_arn
  tags        = var.tags
}

resource "aws_secretsmanager_secret_version" "broker" {
  secret_id = aws_secretsmanager_secret.broker.id
  secret_string = jsonencode({
    username = var.username
    password = random_password.broker.result
    amqp_url = "amqps://${var.username}:${random_password.broker.result}@${local.host}:5671/%2f"
  })
}

resource "aws_security_group" "broker" {
  name_prefix = "${var.name}-broker-"
  description = "oxwright RabbitMQ: AMQPS from the workers and the scheduler"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

# count, not for_each: the client groups' ids are known only at apply.
resource "aws_vpc_security_group_ingress_rule" "amqps" {
  count                        = length(var.client_security_group_ids)
  security_group_id            = aws_security_group.broker.id
  referenced_security_group_id = var.client_security_group_ids[count.index]
  ip_protocol                  = "tcp"
  from_port                    = 5671
  to_port                      = 5671
  description                  = "AMQPS from an oxwright client"
}

resource "aws_mq_broker" "rabbitmq" {
  #checkov:skip=CKV_AWS_209:a customer-managed key is optional (kms_key_arn); without one Amazon MQ encrypts with an AWS-owned key
  broker_name                = var.name
  engine_type                = "RabbitMQ"
  engine_version             = var.engine_version
  host_instance_type         = var.instance_type
  deployment_mode            = var.deployment_mode
  subnet_ids                 = var.deployment_mode == "CLUSTER_MULTI_AZ" ? var.subnet_ids : [var.subnet_ids[0]]
  security_groups            = [aws_security_group.broker.id]
  publicly_accessible        = false
  auto_minor_version_upgrade = true
  apply_immediately          = false

  user {
    username = var.username
    password = random_password.broker.result
  }

  logs {
    general = true
  }

  # A customer-managed key when kms_key_arn is given, else AWS's own.
  encryption_options {
    kms_key_id        = var.kms_key_arn
    use_aws_owned_key = var.kms_key_arn == null
  }

  maintenance_window_start_time {
    day_of_week = "SUNDAY"
    time_of_day = "03:00"
    time_zone   = "UTC"
  }

  tags = var.tags
}

locals {
  # amqps://b-….mq.<region>.amazonaws.com:5671 → the host.
  host = split(":", trimprefix(aws_mq_broker.rabbitmq.instances[0].endpoints[0], "amqps://"))[0]
}
