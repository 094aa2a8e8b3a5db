#!/usr/bin/env bash
# Create the LMDeploy test environment: .engines/lmdeploy (a venv, gitignored) with LMDeploy's
# wheel (no dependencies), CPU torch, only what its parser modules, parser tests and OpenAI
# serving code import (requirements.txt here), and chatfmt from this tree (../engine_env.sh).
#
# LMDeploy's own parser tests are not on the package index (LMDeploy publishes wheels only, no
# source distribution). They are read from a checkout of LMDeploy at the installed release:
#   LMDEPLOY_SRC=/path/to/lmdeploy bash tests/engines/lmdeploy/setup.sh
# or, where fetching from GitHub is allowed, with --fetch-tests (a shallow clone of the tag).
# Without them run.py still runs chatfmt's adapter and serving-path tests (no gate).
# Reruns are fast: pip's cache and the existing venv are reused.
set -euo pipefail
VERSION="${LMDEPLOY_VERSION:-0.18.0}"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
FETCH="${1:-}"
source "$ROOT/tests/engines/engine_env.sh"

engine_venv lmdeploy "lmdeploy==$VERSION"
echo "LMDeploy $VERSION environment ready: $ENV"
engine_tests lmdeploy https://github.com/InternLM/lmdeploy "v$VERSION" \
  tests/test_lmdeploy/serve/parsers
