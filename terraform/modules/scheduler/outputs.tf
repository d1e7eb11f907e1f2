output "function_arn" {
  description = "The scheduler function."
  value       = aws_lambda_function.scheduler.arn
}

output "rule_arn" {
  description = "The schedule rule."
  value       = aws_cloudwatch_event_rule.tick.arn
}

output "security_group_id" {
  description = "The function's security group (give it to the broker module's client_security_group_ids)."
  value       = aws_security_group.scheduler.id
}
