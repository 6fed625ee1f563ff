#!/usr/bin/env bash
# Check a built dpcore wheel: abi3 tag, contents (extension module, bundled data, typing marker),
# then install it into a FRESH throw-away virtualenv and import it + run a tiny smoke call from a
# directory outside the source tree.
#
#   bash scripts/check_wheel.sh dist/dpcore-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl
set -euo pipefail
# shellcheck source=scripts/_env.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/_env.sh"

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: bash scripts/check_wheel.sh path/to/dpcore-*.whl" >&2
    exit 2
fi
WHEEL="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
NAME="$(basename "$WHEEL")"

header "Wheel tag and contents: $NAME"
case "$NAME" in
    *-abi3-*) echo "ok: abi3 wheel" ;;
    *) echo "error: $NAME is not an abi3 wheel (expected a tag like cp39-abi3)" >&2; exit 1 ;;
esac
"$(base_python)" - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
required = {
    "extension module dpcore/_core": lambda n: n.startswith("dpcore/_core") and n.endswith((".so", ".pyd")),
    "dpcore/__init__.py": lambda n: n == "dpcore/__init__.py",
    "dpcore/py.typed": lambda n: n == "dpcore/py.typed",
    "dpcore/datasets/__init__.py": lambda n: n == "dpcore/datasets/__init__.py",
    "dpcore/datasets/data/adult.data.gz": lambda n: n == "dpcore/datasets/data/adult.data.gz",
    "dpcore/datasets/data/adult.test.gz": lambda n: n == "dpcore/datasets/data/adult.test.gz",
    "dpcore/datasets/data/shuttle.csv.gz": lambda n: n == "dpcore/datasets/data/shuttle.csv.gz",
}
missing = [what for what, ok in required.items() if not any(ok(n) for n in names)]
stray = [n for n in names if n.startswith(("python/", "tests/", "src/")) or "__pycache__" in n]
ext = [n for n in names if n.endswith((".so", ".pyd"))]
print(f"{len(names)} files; extension modules: {ext}")
if missing or stray or len(ext) != 1:
    print(f"error: missing={missing} stray={stray} extension modules={ext}", file=sys.stderr)
    sys.exit(1)
print("ok: extension module, package sources, py.typed and bundled Adult data present")
PY

header "Fresh virtualenv: pip install the wheel, import, smoke call"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/dpcore-wheel-check.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
make_venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install --quiet "$WHEEL"
echo "installed into $TMP/venv: $("$TMP/venv/bin/python" -m pip list 2>/dev/null | grep -E '^(dpcore|numpy|scipy|tqdm) ' | tr -s ' ' | paste -sd ',' -)"
cd "$TMP"   # outside the source tree: only the installed wheel can be imported
"$TMP/venv/bin/python" - <<'PY'
import os
import sys

import numpy as np

import dpcore
from dpcore.datasets import load_adult

here = os.path.realpath(dpcore.__file__)
assert here.startswith(os.path.realpath(sys.prefix)), f"dpcore imported from {here}, not the fresh venv"
print(f"import dpcore {dpcore.__version__} from {here}")

rng = np.random.default_rng(0)
X = rng.normal(size=(64, 5))
X /= np.linalg.norm(X, axis=1, keepdims=True)
Z, mu = X[:9], rng.normal(size=64)
f = dpcore.kernel_predict(Z, X, mu, kernel="rbf", gamma=0.5)
ref = np.exp(-0.5 * ((Z[:, None, :] - X[None, :, :]) ** 2).sum(-1)) @ mu
assert np.allclose(f, ref, rtol=0, atol=1e-10), np.abs(f - ref).max()
print(f"kernel_predict (rbf, 9x64): max |dpcore - numpy| = {np.abs(f - ref).max():.2e}")

a = dpcore.laplace_mechanism(0.25, 0.01, 1.0, random_state=7)
b = dpcore.laplace_mechanism(0.25, 0.01, 1.0, random_state=7)
assert np.isfinite(a) and a == b, (a, b)
print(f"laplace_mechanism(0.25, sensitivity=0.01, epsilon=1, random_state=7) = {float(a):.6f} (reproducible)")

d = load_adult("test")
norms = np.linalg.norm(d.X, axis=1)
assert d.X.shape[0] == 16281 and norms.max() <= 1.0 and set(np.unique(d.y)) == {-1.0, 1.0}
print(f"load_adult('test') from the wheel's package data: X {d.X.shape}, max ||x|| = {norms.max():.3f}")
from dpcore.datasets import load_shuttle

s = load_shuttle("test")
assert np.linalg.norm(s.X, axis=1).max() <= 1.0 and set(np.unique(s.y)) == {-1.0, 1.0}
print(f"load_shuttle('test') from the wheel's package data: X {s.X.shape}")
print("ok: fresh-virtualenv import and smoke call")
PY

header "Fresh virtualenv with every extra: pip install 'dpcore[dask,demo,test]', run the documented workflows"
make_venv "$TMP/venv-extras"
"$TMP/venv-extras/bin/python" -m pip install --quiet "$WHEEL[dask,demo,test]"
"$TMP/venv-extras/bin/python" - <<'PY'
# [dask]: docs/scaling.md §5 end to end on a local Parquet file and an in-process distributed Client
import os
import tempfile

import numpy as np
import pandas as pd
import dask.dataframe as dd
from dask.distributed import Client

from dpcore import ldp

proto = ldp.SparseRegressionProtocol(dim=8, n_users=2000, epsilon=2.0, delta=1e-6, projection_dim=4)
rng = np.random.default_rng(0)
X = rng.normal(size=(2000, 8)) / 4.0
X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
y = np.clip(X[:, 0], -1, 1)
Zr, vr = ldp.simulate(X, y, proto, random_state=0)
with tempfile.TemporaryDirectory() as tmp, Client(processes=False, n_workers=1, threads_per_worker=1):
    frame = pd.DataFrame(np.asarray(Zr), columns=[f"z_{j}" for j in range(4)]).assign(v=np.asarray(vr))
    dd.from_pandas(frame, npartitions=2).to_parquet(os.path.join(tmp, "reports"))
    reports = dd.read_parquet(os.path.join(tmp, "reports"))
    Z = reports[[f"z_{j}" for j in range(4)]].to_dask_array().compute_chunk_sizes()
    v = reports["v"].to_dask_array().compute_chunk_sizes()
    model = ldp.LDPSparseRegression(proto).fit(Z, v)
assert np.all(np.isfinite(model.coef_)), model.coef_
print("ok: [dask] docs/scaling.md §5 (Parquet -> Dask arrays -> LDPSparseRegression) in a fresh virtualenv")
# [demo]: the plotting backend of the main job; [test]: the test runner and property-based tests
import matplotlib, sklearn, pytest, hypothesis  # noqa: E401,F401
print("ok: [demo] and [test] extras import")
PY
