output "broker_arn" {
  description = "The broker's ARN (the worker Lambda's event source)."
  value       = aws_mq_broker.rabbitmq.arn
}

output "endpoint" {
  description = "The broker's AMQPS endpoint (amqps://host:5671), without credentials."
  value       = aws_mq_broker.rabbitmq.instances[0].endpoints[0]
}

# The version's ARN (the secret's), so that a reader of the value waits
# until the credentials are written.
output "credentials_secret_arn" {
  description = "Secrets Manager secret holding username, password and amqp_url (OXWRIGHT_AMQP_URL)."
  value       = aws_secretsmanager_secret_version.broker.arn
}

output "security_group_id" {
  description = "The broker's security group."
  value       = aws_security_group.broker.id
}
