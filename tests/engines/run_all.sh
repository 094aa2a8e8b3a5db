#!/usr/bin/env bash
# The engine step of CI: for vLLM, LMDeploy and SGLang, build the engine's test environment
# (.engines/<engine>, a venv from the package index; see each setup.sh) and run the engine's
# own parser tests with its parsers and with chatfmt's adapters (the gate), then chatfmt's
# adapter and serving-path tests in that environment. Any failure fails the step.
set -euo pipefail
cd "$(dirname "$0")/../.."
for engine in vllm lmdeploy sglang; do
  echo "== $engine"
  bash "tests/engines/$engine/setup.sh"
  python "tests/engines/$engine/run.py"
done
