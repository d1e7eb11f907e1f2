output "function_arn" {
  description = "The worker function."
  value       = module.function.function_arn
}

output "security_group_id" {
  description = "The function's security group (give it to the broker module's client_security_group_ids)."
  value       = module.function.security_group_id
}

output "log_group" {
  description = "The function's log group."
  value       = module.function.log_group
}
