# Deliberately misformatted (the fmt self-test): the = are not aligned.
variable "a" {
  description = "x"
  type = string
}
