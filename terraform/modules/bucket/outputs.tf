output "bucket_name" {
  description = "The artefact bucket's name."
  value       = aws_s3_bucket.artefacts.id
}

output "bucket_arn" {
  description = "The artefact bucket's ARN (for IAM policies)."
  value       = aws_s3_bucket.artefacts.arn
}

output "store_url" {
  description = "The value of OXWRIGHT_S3 for workers and the scheduler."
  value       = "s3://${aws_s3_bucket.artefacts.id}/${var.prefix}"
}
