output "name" {
  description = "Name prefix in use"
  value       = var.name
}
