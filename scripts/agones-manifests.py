#!/usr/bin/env python3
"""Validates deploy/agones/*.yaml against Agones' own CRD schemas, offline.

The schemas are the `openAPIV3Schema` of the GameServer, Fleet and
FleetAutoscaler CustomResourceDefinitions in Agones' install manifest
(../shared/reference/agones/install.yaml), each written out as a JSON schema
and checked with check-jsonschema (PyPI). Two things are added to what the
API server itself would say:
- an object with listed properties and no `x-kubernetes-preserve-unknown-fields`
  takes no other keys, since the API server silently drops ("prunes") them:
  a misspelt field is an error here, not a setting quietly lost;
- apiVersion and kind must name the CRD's group, a served version and kind.
Every manifest under deploy/agones/broken/ must be refused, so the check is
seen to fail on what it should.

usage: agones-manifests.py INSTALL_YAML CHECK_JSONSCHEMA_BIN MANIFEST_DIR
"""
import json
import pathlib
import subprocess
import sys
import tempfile

import yaml

KINDS = ("GameServer", "Fleet", "FleetAutoscaler")


def strict(node):
    """Objects with properties and no preserve-unknown-fields take nothing else."""
    if isinstance(node, dict):
        if (
            "properties" in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in node
        ):
            node["additionalProperties"] = False
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node


def schemas(install_yaml, out_dir):
    """{kind: (api_versions, schema_path)} from the CRDs of the install manifest."""
    found = {}
    with open(install_yaml, encoding="utf-8") as f:
        for doc in yaml.safe_load_all(f):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            kind = doc["spec"]["names"]["kind"]
            if kind not in KINDS:
                continue
            group = doc["spec"]["group"]
            for version in doc["spec"]["versions"]:
                if not version.get("served"):
                    continue
                schema = strict(version["schema"]["openAPIV3Schema"])
                # Every object has these; the CRD leaves them to Kubernetes.
                schema["properties"].update(
                    apiVersion={"type": "string"}, kind={"type": "string"}, metadata={"type": "object"}
                )
                # OpenAPI 3.0 schemas are JSON Schema draft 4 (a boolean
                # exclusiveMinimum, for one).
                schema["$schema"] = "http://json-schema.org/draft-04/schema#"
                path = pathlib.Path(out_dir) / f"{kind}-{version['name']}.json"
                path.write_text(json.dumps(schema), encoding="utf-8")
                found.setdefault(kind, []).append((f"{group}/{version['name']}", path))
    missing = [k for k in KINDS if k not in found]
    if missing:
        sys.exit(f"agones-manifests: no CRD schema for {missing} in {install_yaml}")
    return found


def check(manifest, found, checker):
    """None when the manifest is valid, else why not."""
    docs = [d for d in yaml.safe_load_all(manifest.read_text(encoding="utf-8")) if d]
    if len(docs) != 1:
        return f"{len(docs)} documents (one a file)"
    doc = docs[0]
    kind, api = doc.get("kind"), doc.get("apiVersion")
    versions = dict(found.get(kind, []))
    if api not in versions:
        return f"apiVersion {api!r} kind {kind!r}: not a served Agones kind ({sorted(versions) or KINDS})"
    run = subprocess.run(
        [checker, "--schemafile", str(versions[api]), str(manifest)],
        capture_output=True,
        text=True,
    )
    out = (run.stdout + run.stderr).strip()
    if run.returncode != 0 and "validation errors were encountered" not in out:
        sys.exit(f"agones-manifests: check-jsonschema could not check {manifest}:\n{out}")
    return out if run.returncode != 0 else None


def main():
    install_yaml, checker, manifest_dir = sys.argv[1:4]
    if not pathlib.Path(install_yaml).is_file():
        sys.exit(f"agones-manifests: no Agones install manifest at {install_yaml} (shared/ beside the checkout, "
                 "or ARENA_AGONES_INSTALL_YAML): the manifests cannot be checked")
    manifest_dir = pathlib.Path(manifest_dir)
    with tempfile.TemporaryDirectory() as tmp:
        found = schemas(install_yaml, tmp)
        good = sorted(manifest_dir.glob("*.yaml"))
        broken = sorted((manifest_dir / "broken").glob("*.yaml"))
        if not good or not broken:
            sys.exit(f"agones-manifests: nothing to check in {manifest_dir} (or no broken/ examples)")
        failed = False
        for manifest in good:
            why = check(manifest, found, checker)
            if why:
                failed = True
                print(f"INVALID {manifest}:\n{why}")
            else:
                print(f"valid   {manifest}")
        for manifest in broken:
            why = check(manifest, found, checker)
            if why is None:
                failed = True
                print(f"ACCEPTED {manifest}, which should have been refused")
            else:
                first = next((l for l in why.splitlines() if "$." in l or "apiVersion" in l), why.splitlines()[0])
                print(f"refused {manifest} (as it should be): {first.strip()}")
        if failed:
            sys.exit(1)
        print(f"agones-manifests: {len(good)} manifests valid against Agones' CRD schemas, "
              f"{len(broken)} broken ones refused")


if __name__ == "__main__":
    main()
