# Shared steps of tests/engines/<engine>/setup.sh (sourced; ROOT is the checkout).
#
# engine_venv NAME SPEC: the venv .engines/NAME (ENV; made once, then reused) with CPU torch
#   from the machine's wheel, the engine SPEC (e.g. vllm==0.33.0) without its dependencies,
#   tests/engines/NAME/requirements.txt (only what its parser, test and serving modules
#   import) and chatfmt from this tree (editable, no dependencies). Sets ENV and PIP.
# engine_tests NAME REPO TAG FOLDER...: the engine's own test FOLDERs, read from a checkout at
#   the installed release (NAME_SRC, e.g. SGLANG_SRC) or, with --fetch-tests in FETCH, a
#   shallow sparse clone of TAG from REPO; copied into .engines/NAME-src. Without either the
#   folder stays absent and run.py runs only chatfmt's tests (no gate).

engine_venv() {
  local name="$1" spec="$2"
  ENV="$ROOT/.engines/$name"
  [ -x "$ENV/bin/python" ] || "${PYTHON:-python3.11}" -m venv "$ENV"
  PIP=("$ENV/bin/pip" install -q --disable-pip-version-check)
  "${PIP[@]}" "torch==2.13.0"
  "${PIP[@]}" --no-deps "$spec"
  "${PIP[@]}" -r "$ROOT/tests/engines/$name/requirements.txt"
  "${PIP[@]}" --no-deps -e "$ROOT"
}

engine_tests() {
  local name="$1" repo="$2" tag="$3"
  shift 3
  local var checkout dest="$ROOT/.engines/$name-src" folder
  var="$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')_SRC"
  checkout="${!var:-}"
  if [ -z "$checkout" ] && [ "${FETCH:-}" = "--fetch-tests" ]; then
    checkout="$ENV/$name-git"
    if [ ! -d "$checkout" ]; then  # the repositories are large: only the test folders
      git clone -q --depth 1 --filter=blob:none --sparse --branch "$tag" "$repo" "$checkout"
      git -C "$checkout" sparse-checkout set "$@"
    fi
  fi
  if [ -n "$checkout" ]; then
    rm -rf "$dest"
    for folder in "$@"; do
      mkdir -p "$dest/$folder"
      cp -r "$checkout/$folder/." "$dest/$folder/"
    done
  fi
  for folder in "$@"; do
    if [ -d "$dest/$folder" ]; then
      echo "$name's own tests: $dest/$folder"
    else
      echo "$name's own tests: $folder not set up (${var} or --fetch-tests)"
    fi
  done
}
