# The oxwright workers as an ECS Fargate service: the worker image
# (infra/docker/worker.Dockerfile) with a read-only root and /tmp as its one
# writable volume, scaled on the depth of the fetch queue (Amazon MQ's
# MessageCount, target tracking), each task with its own warm Chromium.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

data "aws_region" "current" {}

resource "aws_cloudwatch_log_group" "workers" {
  name              = "/oxwright/${var.name}/workers"
  retention_in_days = var.logs.retention_days
  kms_key_id        = var.logs.kms_key_arn
  tags              = var.tags
}

data "aws_iam_policy_document" "assume_tasks" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

# Pulls the image, writes logs, reads the broker's credentials.
resource "aws_iam_role" "execution" {
  name_prefix        = "${var.name}-exec-"
  assume_role_policy = data.aws_iam_policy_document.assume_tasks.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "execution" {
  role       = aws_iam_role.execution.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
}

data "aws_iam_policy_document" "read_secret" {
  statement {
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [var.broker_secret_arn]
  }
}

resource "aws_iam_role_policy" "read_secret" {
  name   = "read-broker-secret"
  role   = aws_iam_role.execution.id
  policy = data.aws_iam_policy_document.read_secret.json
}

# What the worker itself may do: read and write artefacts under its prefix.
resource "aws_iam_role" "task" {
  name_prefix        = "${var.name}-task-"
  assume_role_policy = data.aws_iam_policy_document.assume_tasks.json
  tags               = var.tags
}

data "aws_iam_policy_document" "artefacts" {
  statement {
    actions   = ["s3:GetObject", "s3:PutObject"]
    resources = ["${var.bucket_arn}/${var.store_prefix}*"]
  }
  statement {
    actions   = ["s3:ListBucket"]
    resources = [var.bucket_arn]
    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["${var.store_prefix}*"]
    }
  }
}

resource "aws_iam_role_policy" "artefacts" {
  name   = "artefacts"
  role   = aws_iam_role.task.id
  policy = data.aws_iam_policy_document.artefacts.json
}

resource "aws_security_group" "workers" {
  name_prefix = "${var.name}-workers-"
  description = "oxwright workers: no inbound; outbound to the broker, S3 and the sites they fetch"
  vpc_id      = var.vpc_id
  tags        = var.tags
}

resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.workers.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  description       = "HTTPS: S3, the image registry and the sites fetched"
}

resource "aws_vpc_security_group_egress_rule" "http" {
  security_group_id = aws_security_group.workers.id
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
  description       = "HTTP sites fetched (the URL policy still applies)"
}

resource "aws_vpc_security_group_egress_rule" "amqps" {
  security_group_id            = aws_security_group.workers.id
  referenced_security_group_id = var.broker_security_group_id
  ip_protocol                  = "tcp"
  from_port                    = 5671
  to_port                      = 5671
  description                  = "AMQPS to the broker"
}

resource "aws_ecs_cluster" "workers" {
  name = var.name
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
  tags = var.tags
}

resource "aws_ecs_task_definition" "worker" {
  family                   = "${var.name}-worker"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = aws_iam_role.task.arn

  ephemeral_storage {
    size_in_gib = 21
  }

  volume {
    name = "tmp"
  }

  container_definitions = jsonencode([{
    name                   = "worker"
    image                  = var.image
    essential              = true
    command                = ["worker"]
    readonlyRootFilesystem = true
    user                   = "10001"
    mountPoints            = [{ sourceVolume = "tmp", containerPath = "/tmp", readOnly = false }]
    linuxParameters        = { initProcessEnabled = true }
    environment = concat([
      { name = "OXWRIGHT_S3", value = var.store_url },
      { name = "OXWRIGHT_BROWSER__PAGES_PER_BROWSER", value = tostring(var.pages_per_browser) },
      { name = "RUST_LOG", value = "info" },
      ], [for k, v in var.environment : { name = k, value = v }]
    )
    secrets = [
      { name = "OXWRIGHT_AMQP_URL", valueFrom = "${var.broker_secret_arn}:amqp_url::" },
    ]
    stopTimeout = 120
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.workers.name
        awslogs-region        = data.aws_region.current.name
        awslogs-stream-prefix = "worker"
      }
    }
  }])

  tags = var.tags
}

resource "aws_ecs_service" "workers" {
  name            = "${var.name}-workers"
  cluster         = aws_ecs_cluster.workers.id
  task_definition = aws_ecs_task_definition.worker.arn
  desired_count   = var.min_workers
  launch_type     = "FARGATE"

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = [aws_security_group.workers.id]
    assign_public_ip = false
  }

  # A SIGTERM'd worker drains (stopTimeout above) and returns what it did
  # not start to the queue; the broker redelivers a killed one's jobs.
  deployment_minimum_healthy_percent = 50
  deployment_maximum_percent         = 200

  lifecycle {
    ignore_changes = [desired_count]
  }

  tags = var.tags
}

resource "aws_appautoscaling_target" "workers" {
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.workers.name}/${aws_ecs_service.workers.name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.min_workers
  max_capacity       = var.max_workers
}

# Target tracking on the fetch queue's depth per worker task (Amazon MQ
# publishes MessageCount per queue): more messages waiting per task than
# the target adds tasks, fewer removes them.
resource "aws_appautoscaling_policy" "queue_depth" {
  name               = "${var.name}-queue-depth"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.workers.service_namespace
  resource_id        = aws_appautoscaling_target.workers.resource_id
  scalable_dimension = aws_appautoscaling_target.workers.scalable_dimension

  target_tracking_scaling_policy_configuration {
    target_value       = var.messages_per_worker
    scale_in_cooldown  = 300
    scale_out_cooldown = 60

    customized_metric_specification {
      metrics {
        id          = "depth"
        return_data = false
        metric_stat {
          metric {
            namespace   = "AWS/AmazonMQ"
            metric_name = "MessageCount"
            dimensions {
              name  = "Broker"
              value = var.broker_name
            }
            dimensions {
              name  = "VirtualHost"
              value = "/"
            }
            dimensions {
              name  = "Queue"
              value = var.queue_name
            }
          }
          stat = "Average"
        }
      }
      metrics {
        id          = "tasks"
        return_data = false
        metric_stat {
          metric {
            namespace   = "ECS/ContainerInsights"
            metric_name = "RunningTaskCount"
            dimensions {
              name  = "ClusterName"
              value = aws_ecs_cluster.workers.name
            }
            dimensions {
              name  = "ServiceName"
              value = aws_ecs_service.workers.name
            }
          }
          stat = "Average"
        }
      }
      metrics {
        id          = "per_task"
        expression  = "depth / IF(tasks < 1, 1, tasks)"
        label       = "messages waiting per worker task"
        return_data = true
      }
    }
  }
}
