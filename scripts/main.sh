#!/usr/bin/env bash
# Install dpcore (release build of the Rust extension) into the repository's .venv and run the
# main job: the end-to-end demo on UCI Adult (`python -m dpcore.demo`).
#
#   bash scripts/main.sh                 # full demo, artifacts under ./artifacts
#   bash scripts/main.sh --quick         # small sizes (about a minute)
#   bash scripts/main.sh --help          # all demo options
#
# Idempotent: reuses .venv (override with DPCORE_VENV=...) and cargo's incremental build.
set -euo pipefail
# shellcheck source=scripts/_env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/_env.sh"

header "Toolchain"
ensure_rust

header "Python environment ($VENV)"
ensure_venv
install_dev_requirements

header "Build and install dpcore (maturin develop --release)"
cd "$ROOT"
"$VENV/bin/maturin" develop --release
"$PY" -c 'import dpcore; print("dpcore", dpcore.__version__, "from", dpcore.__file__)'

header "Main job: python -m dpcore.demo $*"
exec "$PY" -m dpcore.demo "$@"
