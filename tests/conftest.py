"""Shared fixtures for dpcore's test suite.

The suite runs against the *installed* dpcore (the wheel that scripts/test.sh builds, or a
``maturin develop`` install); the header printed by pytest says which one was imported.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Every property-based test is deterministic in outcome (the guide's rule): derandomised example
# generation and no example database, unless a test's own @settings says more.
settings.register_profile("dpcore", derandomize=True, database=None)
settings.load_profile("dpcore")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO_ROOT.parent / "shared" / "datasets"


def pytest_report_header(config):
    try:
        import dpcore

        where = f"dpcore {dpcore.__version__} imported from {Path(dpcore.__file__).parent}"
    except Exception as exc:  # pragma: no cover - reported, and every test will fail loudly
        where = f"dpcore NOT importable: {exc!r}"
    return [where, f"shared datasets: {SHARED_DATASETS} ({'present' if SHARED_DATASETS.is_dir() else 'absent'})"]


@pytest.fixture(scope="session")
def shared_datasets_dir() -> Path:
    """``../shared/datasets`` beside the repository (present in CI and on the dev machines).

    In CI (``CI`` set) a missing directory is a failure; elsewhere the test is skipped with an
    explicit reason (reported by ``-ra``), never silently.
    """
    if not SHARED_DATASETS.is_dir():
        msg = f"shared datasets directory not found at {SHARED_DATASETS}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED_DATASETS


@pytest.fixture
def python_sigint():
    """Python's default SIGINT handler for the duration of a test.

    A shell that starts a job in the background without job control (``cmd &`` in a script, as some CI
    runners do) starts it with SIGINT *ignored*; Python then keeps ``SIG_IGN`` and
    ``_thread.interrupt_main()`` is a no-op. Tests that simulate Ctrl-C install the default handler
    (which raises ``KeyboardInterrupt``) so that their outcome does not depend on how pytest was launched.
    """
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def dask_client():
    """A LocalCluster of 2 in-process workers × 1 thread and its Client, one per test module (skips without dask)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
