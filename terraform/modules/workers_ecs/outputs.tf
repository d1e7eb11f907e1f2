output "cluster_name" {
  description = "The ECS cluster."
  value       = aws_ecs_cluster.workers.name
}

output "service_name" {
  description = "The worker service."
  value       = aws_ecs_service.workers.name
}

output "security_group_id" {
  description = "The workers' security group (give it to the broker module's client_security_group_ids)."
  value       = aws_security_group.workers.id
}

output "log_group" {
  description = "The workers' log group."
  value       = aws_cloudwatch_log_group.workers.name
}
