variable "bucket_name" {
  description = "Required, and not passed."
  type        = string
}

variable "undocumented" {
  type    = string
  default = "x"
}
