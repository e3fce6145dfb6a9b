#!/usr/bin/env python3
"""Check recorded HTTP answers against an OpenAPI 3.1 file: each answer's status is
one the operation declares (or a problem document of a path outside the file), its
Content-Type is the declared one, and a JSON body is valid under the declared schema
(JSON Schema 2020-12, python3-jsonschema). Usage: openapi_check.py OPENAPI.json DIR;
DIR/index holds "METHOD PATH STATUS NAME" lines, DIR/NAME.head and NAME.body the
answer (tests/lib/api.sh's http)."""
import json
import re
import sys

import jsonschema


def inline(node, doc):
    """The schema with every #/components/... reference replaced by its target."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return inline(target, doc)
        return {k: inline(v, doc) for k, v in node.items()}
    if isinstance(node, list):
        return [inline(v, doc) for v in node]
    return node


def operation(doc, method, path):
    for tmpl, ops in doc["paths"].items():
        rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", tmpl) + "$"
        if re.match(rx, path):
            return ops.get(method.lower()), tmpl
    return None, None


def content_type(head):
    ct = ""
    for line in head.splitlines():
        if line.lower().startswith("content-type:"):
            ct = line.split(":", 1)[1].strip().split(";")[0]
    return ct


def check(doc, d, method, path, status, name):
    head = open(f"{d}/{name}.head", encoding="latin-1").read()
    body = open(f"{d}/{name}.body", "rb").read()
    ct = content_type(head)
    op, tmpl = operation(doc, method, path)
    if method == "OPTIONS":  # a path's methods and the CORS preflight (info.description)
        return None if status == "204" and not body else f"OPTIONS {path}: {status}, expected 204 with no body"
    if op is None:  # a path or method the API does not have: a problem document
        schema, want = doc["components"]["schemas"]["Problem"], "application/problem+json"
    else:
        # an exact status, else its range ("4XX")
        resp = op["responses"].get(status, op["responses"].get(status[0] + "XX"))
        if resp is None:
            return f"{method} {tmpl}: status {status} is not declared"
        resp = inline(resp, doc)
        if ct not in resp.get("content", {}):
            return f"{method} {tmpl} {status}: Content-Type {ct} is not declared"
        schema, want = resp["content"][ct]["schema"], ct
    if ct != want:
        return f"{method} {path} {status}: Content-Type {ct}, expected {want}"
    if not ct.endswith("json"):
        return None
    try:
        jsonschema.Draft202012Validator(inline(schema, doc)).validate(json.loads(body))
    except jsonschema.ValidationError as e:
        return f"{method} {path} {status} ({name}): {e.message} at {list(e.absolute_path)}"
    return None


def main():
    doc = json.load(open(sys.argv[1]))
    jsonschema.Draft202012Validator.check_schema(inline(doc["components"]["schemas"], doc)["Job"])
    bad = 0
    for line in open(f"{sys.argv[2]}/index"):
        method, path, status, name = line.split()
        if status == "000":
            continue  # no answer (a connection the test expected to be cut)
        why = check(doc, sys.argv[2], method, path, status, name)
        if why:
            print("openapi: " + why)
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
