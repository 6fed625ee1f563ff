# Shared set-up for dpcore's scripts (sourced, not executed).
#
# Provides:
#   ROOT       absolute path of the repository
#   VENV       the project virtualenv (default $ROOT/.venv; override with DPCORE_VENV)
#   PY         $VENV/bin/python
#   header     print a section header
#   ensure_venv / ensure_rust / install_dev_requirements

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DPCORE_VENV:-$ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PYTHONUNBUFFERED=1

header() {
    printf '\n==== %s ====\n' "$*"
}

# Interpreter used to create virtualenvs: $PYTHON, else python3.
base_python() {
    local cand
    for cand in "${PYTHON:-}" python3 python; do
        if [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1; then
            echo "$cand"
            return 0
        fi
    done
    echo "error: no python3 interpreter found (set PYTHON=/path/to/python3)" >&2
    return 1
}

# make_venv DIR: create a virtualenv at DIR with the stdlib venv module, falling back to the
# `virtualenv` package (Debian's python3 may come without ensurepip/python3-venv).
make_venv() {
    local dir="$1" py
    py="$(base_python)"
    if "$py" -m venv "$dir" 2>/dev/null && [ -x "$dir/bin/python" ] && "$dir/bin/python" -m pip --version >/dev/null 2>&1; then
        return 0
    fi
    rm -rf "$dir"
    echo "python -m venv unavailable; using the virtualenv package instead"
    "$py" -m pip install --user --quiet virtualenv || "$py" -m pip install --quiet --break-system-packages --user virtualenv
    "$py" -m virtualenv --quiet "$dir"
}

ensure_venv() {
    if [ -x "$PY" ] && "$PY" -c 'import sys; assert sys.version_info >= (3, 9)' 2>/dev/null \
        && "$PY" -m pip --version >/dev/null 2>&1; then
        echo "reusing virtualenv $VENV ($("$PY" --version 2>&1))"
    else
        echo "creating virtualenv $VENV"
        rm -rf "$VENV"
        make_venv "$VENV"
        "$PY" -m pip install --quiet --upgrade pip
    fi
    export VIRTUAL_ENV="$VENV"
    export PATH="$VENV/bin:$PATH"
}

ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        echo "error: cargo not found; install Rust (https://rustup.rs) and retry" >&2
        return 1
    fi
    echo "$(cargo --version); $(rustc --version)"
}

install_dev_requirements() {
    "$PY" -m pip install --quiet -r "$ROOT/requirements-dev.txt"
    echo "installed requirements-dev.txt into $VENV"
}
