output "function_arn" {
  description = "The worker function."
  value       = aws_lambda_function.worker.arn
}

output "security_group_id" {
  description = "The function's security group (give it to the broker module's client_security_group_ids)."
  value       = aws_security_group.worker.id
}

output "log_group" {
  description = "The function's log group."
  value       = aws_cloudwatch_log_group.worker.name
}
