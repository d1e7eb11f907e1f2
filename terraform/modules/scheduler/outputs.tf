output "function_arn" {
  description = "The scheduler function."
  value       = module.function.function_arn
}

output "rule_arn" {
  description = "The schedule rule."
  value       = aws_cloudwatch_event_rule.tick.arn
}

output "security_group_id" {
  description = "The function's security group (give it to the broker module's client_security_group_ids)."
  value       = module.function.security_group_id
}
