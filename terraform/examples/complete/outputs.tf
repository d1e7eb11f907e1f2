output "store_url" {
  description = "OXWRIGHT_S3 for anything else that reads the artefacts (oxwright report, codegen)."
  value       = module.bucket.store_url
}

output "broker_endpoint" {
  description = "The broker's AMQPS endpoint (credentials in broker_credentials_secret_arn)."
  value       = module.broker.endpoint
}

output "broker_credentials_secret_arn" {
  description = "Secrets Manager secret holding OXWRIGHT_AMQP_URL (amqp_url)."
  value       = module.broker.credentials_secret_arn
}

output "workers_cluster" {
  description = "The ECS cluster of the workers."
  value       = module.workers.cluster_name
}

output "worker_function_arn" {
  description = "The worker Lambda."
  value       = module.worker_lambda.function_arn
}

output "scheduler_function_arn" {
  description = "The scheduler Lambda."
  value       = module.scheduler.function_arn
}
