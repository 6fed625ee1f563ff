#!/usr/bin/env bash
# Install dpcore and run ALL tests:
#   1. Rust: `cargo test` on the pure-Rust core (no `python` feature);
#   2. build ONE release abi3 wheel (`maturin build --release -o dist`) and force-reinstall it
#      into the repository's .venv;
#   3. Python: `pytest -n 2 --durations=20` against the installed wheel (pytest-xdist, two workers on CI's two
#      cores; DPCORE_PYTEST_WORKERS to change; exit code 5, "no tests collected", fails);
#   4. install the same wheel into a FRESH virtualenv, import it and run a smoke call.
# Exits non-zero if any step fails. Idempotent; works from any directory.
# Override the virtualenv with DPCORE_VENV=..., extra pytest arguments with PYTEST_ADDOPTS.
set -euo pipefail
# shellcheck source=scripts/_env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/_env.sh"
cd "$ROOT"

FAILED=()
START=$SECONDS

header "Toolchain"
ensure_rust

header "Python environment ($VENV)"
ensure_venv
install_dev_requirements

header "Rust tests (cargo test, pure-Rust core without the python feature)"
if cargo test; then
    echo "ok: cargo test"
else
    FAILED+=("cargo test")
fi

header "Build the release abi3 wheel (maturin build --release -o dist)"
rm -f "$ROOT"/dist/dpcore-*.whl
"$VENV/bin/maturin" build --release -o "$ROOT/dist"
shopt -s nullglob
WHEELS=("$ROOT"/dist/dpcore-*.whl)
shopt -u nullglob
if [ "${#WHEELS[@]}" -ne 1 ]; then
    echo "error: expected exactly one wheel in dist/, found ${#WHEELS[@]}" >&2
    exit 1
fi
WHEEL="${WHEELS[0]}"
echo "built $(basename "$WHEEL")"

header "Install the wheel into $VENV"
"$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
"$PY" -m pip check
"$PY" -c 'import dpcore; print("dpcore", dpcore.__version__, "from", dpcore.__file__)'

header "Python tests (pytest, 2 workers, the 20 slowest tests listed at the end)"
set +e
"$PY" -m pytest -n "${DPCORE_PYTEST_WORKERS:-2}" --durations=20
RC=$?
set -e
if [ "$RC" -eq 0 ]; then
    echo "ok: pytest"
elif [ "$RC" -eq 5 ]; then
    echo "error: pytest collected no tests (exit code 5)" >&2
    FAILED+=("pytest (no tests collected)")
else
    FAILED+=("pytest (exit code $RC)")
fi

header "Wheel check: abi3 tag, contents, fresh-virtualenv install + import"
if bash "$ROOT/scripts/check_wheel.sh" "$WHEEL"; then
    echo "ok: wheel check"
else
    FAILED+=("wheel check")
fi

header "Summary ($((SECONDS - START)) s)"
if [ "${#FAILED[@]}" -ne 0 ]; then
    printf 'FAILED: %s\n' "${FAILED[@]}" >&2
    exit 1
fi
echo "all tests passed: cargo test, pytest, wheel install in a fresh virtualenv"
