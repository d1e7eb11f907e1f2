output "function_arn" {
  description = "The function."
  value       = aws_lambda_function.this.arn
}

output "function_name" {
  description = "The function's name."
  value       = aws_lambda_function.this.function_name
}

output "security_group_id" {
  description = "The function's security group."
  value       = aws_security_group.this.id
}

output "log_group" {
  description = "The function's log group."
  value       = aws_cloudwatch_log_group.this.name
}
