variable "name" {
  description = "Name prefix for every resource"
  type        = string
  default     = "oxwright"
}
