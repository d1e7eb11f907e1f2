# Deliberately broken (tf_refs.py --self-test): every planted mistake must
# be reported.
resource "aws_s3_bucket" "real" {
  bucket = var.missing
  tags   = { owner = local.nowhere }
}

output "ghost" {
  description = "A resource that is not declared."
  value       = aws_s3_bucket.ghost.arn
}

module "child" {
  source = "./child"
  colour = "blue"
}
