"""Forged state files (issue 22, item 3), shared by tests/kernel_learning/test_state_security.py and
benches/probe_state_forgery.py.

An attacker who can write the disk edits a service's state file. For every edit listed in the issue
(and a few more) the file is rewritten the ways such an attacker can:

* ``"plain"``: the edited document as plain JSON with its SHA-256 checksum recomputed (what loaded
  before the sealed format);
* ``"wrong-key"``: the edited document sealed under a key the attacker made up;
* ``"bytes"``: the sealed file itself with a byte flipped / truncated / an older sealed copy of
  *another* state of the same kind substituted.

:func:`forge_all` returns ``(tried, rejected, accepted_names)`` for one object kind and one mode:
``"sealed"`` (the default key file) or ``"unauthenticated"`` (the explicit opt-out, where only the
field validation on load stands between the forgery and the service).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _pinp_worker import SESSION, build_model, unit_ball  # noqa: E402

import dpcore  # noqa: E402
from dpcore._internal.sealing import SealingKey, resolve_key, seal  # noqa: E402
from dpcore._internal.state import checksum, parse_document  # noqa: E402

PINP_FMT = "dpcore.pinp.state/3"
GP_FMT = "dpcore.gp_service.state/2"


def _b64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode()


def _unb64(s) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), "<f8")


def _pinp_calibration(model, params):
    p = dict(params)
    return asdict(dpcore.PINP(model, p["epsilon"], p["delta"], beta=p["beta"], n_queries=p["n_queries"],
                              data_norm=p["data_norm"], norm_bound=p["norm_bound"], random_state=0).privacy_)


def _gp_calibration(model, params):
    p = dict(params)
    return asdict(dpcore.GPService(model, p["epsilon"], p["delta"], data_norm=p["data_norm"],
                                   max_exact_queries=p["max_exact_queries"], ridge=p["ridge"],
                                   random_state=0).privacy_)


def pinp_edits(model):
    """(name, edit(doc) -> doc) for a PINP state document (the issue's list and more)."""
    def scaled(key, f):
        def edit(d):
            base = d["params"][key] if d["params"][key] is not None else d["calibration"][key]
            d["params"][key] = type(base)(base * f)
            d["calibration"] = _pinp_calibration(model, d["params"])
            return d
        return edit

    def set_(key, value):
        def edit(d):
            d[key] = value
            return d
        return edit

    def zero_all(d):
        d.update(n_answered=0, n_updates=0, points=_b64(np.zeros((0, 3))), alphas=_b64(np.zeros(0)))
        return d

    def big_alpha(d):
        a = _unb64(d["alphas"]).copy()
        a[:] = 1e300
        d["alphas"] = _b64(a)
        return d

    def far_points(d):
        p = _unb64(d["points"]).copy() * 10.0
        d["points"] = _b64(p)
        return d

    def nested(d):
        d["extra"] = _NESTED  # replaced by 5000 nested lists in the encoded text (json.dumps would recurse)
        return d

    def nan_alpha(d):
        a = _unb64(d["alphas"]).copy()
        a[0] = np.nan
        d["alphas"] = _b64(a)
        return d

    return [
        ("epsilon x10, calibration recomputed", scaled("epsilon", 10.0)),
        ("n_queries x10, calibration recomputed", scaled("n_queries", 10)),
        ("norm_bound x10, calibration recomputed", scaled("norm_bound", 10.0)),
        ("counters zeroed, points and alphas emptied", zero_all),
        ("n_answered = 0", set_("n_answered", 0)),
        ("n_answered negative", set_("n_answered", -5)),
        ("n_updates beyond B", set_("n_updates", 10**9)),
        ("alphas = 1e300", big_alpha),
        ("alpha NaN", nan_alpha),
        ("update points outside the ball", far_points),
        ("points not base64", set_("points", "***")),
        ("calibration edited (sigma / 10)", lambda d: (d["calibration"].__setitem__("sigma", d["calibration"]["sigma"] / 10), d)[1]),
        ("parameters with an extra key", lambda d: (d["params"].__setitem__("extra", 1.0), d)[1]),
        ("deeply nested JSON", nested),
        ("fingerprint of another model", set_("fingerprint", "0" * 64)),
        ("seq forged upwards", set_("seq", 10**6)),
    ]


def gp_edits(model):
    def scaled(key, f):
        def edit(d):
            d["params"][key] = d["params"][key] * f
            d["calibration"] = _gp_calibration(model, d["params"])
            return d
        return edit

    def answers(fn):
        def edit(d):
            a = _unb64(d["answers"]).copy()
            d["answers"] = _b64(fn(a))
            return d
        return edit

    def xi(fn):
        def edit(d):
            x = _unb64(d["xi"]).copy()
            d["xi"] = _b64(fn(x))
            return d
        return edit

    def drop_last_batch(d):
        m = d["batches"].pop()
        t = sum(d["batches"])
        d["points"] = _b64(_unb64(d["points"])[: t * d["dim"]])
        d["xi"] = _b64(_unb64(d["xi"])[:t])
        d["answers"] = _b64(_unb64(d["answers"])[:t])
        assert m > 0
        return d

    def far_points(d):
        d["points"] = _b64(_unb64(d["points"]) * 10.0)
        return d

    def set_(key, value):
        def edit(d):
            d[key] = value
            return d
        return edit

    return [
        ("epsilon x10, calibration recomputed", scaled("epsilon", 10.0)),
        ("answers edited (+1)", answers(lambda a: a + 1.0)),
        ("answers set to NaN", answers(lambda a: np.full_like(a, np.nan))),
        ("xi zeroed", xi(np.zeros_like)),
        ("xi truncated", xi(lambda x: x[:-1])),
        ("last batch dropped (factor hash kept)", drop_last_batch),
        ("points outside the ball", far_points),
        ("batches forged", set_("batches", [10**9])),
        ("max_exact_queries x10, calibration recomputed", scaled("max_exact_queries", 10)),
        ("calibration edited (noise / 10)", lambda d: (d["calibration"].__setitem__("noise_scale", d["calibration"]["noise_scale"] / 10), d)[1]),
        ("fingerprint of another model", set_("fingerprint", "0" * 64)),
        ("dim forged", set_("dim", 7)),
    ]


def _write(path, blob: bytes) -> None:
    with open(path, "r+b") as f:  # in place: the file keeps its inode and mode
        f.truncate(0)
        f.write(blob)


_NESTED = "__nested__"


def _text(doc) -> str:
    return json.dumps(doc, sort_keys=True).replace(json.dumps(_NESTED), "[" * 5000 + "]" * 5000)


def _plain(doc) -> bytes:
    doc = {k: v for k, v in doc.items() if k != "checksum"}
    doc["checksum"] = checksum(doc)
    return _text(doc).encode()


def make_state(kind: str, directory, mode: str, tag: str = "s", state_key=None):
    """A closed state of ``kind`` with a few committed batches; returns ``(path, model, key, fmt)``."""
    model = build_model()
    if state_key is None:
        state_key = "keyfile" if mode == "sealed" else "unauthenticated"
    path = str(Path(directory) / f"{kind}-{tag}.json")
    rng = np.random.default_rng(3)
    if kind == "PINP":
        svc = dpcore.PINP(model, **SESSION, state_path=path, state_key=state_key, random_state=1)
        for _ in range(3):
            svc.predict(unit_ball(rng, 40, 3))
        assert svc.n_updates > 0
        fmt = PINP_FMT
    else:
        svc = dpcore.GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=50, state_path=path,
                               state_key=state_key, random_state=1)
        for _ in range(3):
            svc.decision_function(unit_ball(rng, 4, 3))
        fmt = GP_FMT
    svc.close()
    key = resolve_key(state_key, os.path.realpath(path), create=False)
    return path, model, key, fmt


def _load(kind, path, model, mode):
    state_key = "keyfile" if mode == "sealed" else "unauthenticated"
    cls = dpcore.PINP if kind == "PINP" else dpcore.GPService
    cls.load(path, model, state_key=state_key).close()


def forge_all(kind: str, directory, mode: str):
    """Try every forgery against a fresh state of ``kind``; return ``(tried, rejected, accepted_names)``."""
    path, model, key, fmt = make_state(kind, directory, mode)
    good = Path(path).read_bytes()
    doc = parse_document(good, key, fmt, "forgery source")
    edits = pinp_edits(model) if kind == "PINP" else gp_edits(model)
    attempts = []
    for name, edit in edits:
        forged = edit(json.loads(json.dumps(doc)))
        attempts.append((f"{name} [plain, checksum recomputed]", _plain(forged)))
        if mode == "sealed":
            made_up = SealingKey(secrets.token_bytes(32), "attacker")
            attempts.append((f"{name} [sealed under a made-up key]",
                             seal(_text(forged).encode(), made_up, fmt)))
    if mode == "sealed":
        flipped = bytearray(good)
        flipped[len(flipped) // 2] ^= 1
        attempts.append(("one bit flipped", bytes(flipped)))
        attempts.append(("truncated", good[: len(good) - 7]))
        other_path, _, _, _ = make_state(kind, directory, mode, tag="other")  # its own key file: another key
        attempts.append(("another state's sealed file", Path(other_path).read_bytes()))
        other_kind = "GPService" if kind == "PINP" else "PINP"
        op, _, _, _ = make_state(other_kind, directory, mode, tag="kind", state_key=path + ".key")  # same key
        attempts.append(("a state of another kind, same key", Path(op).read_bytes()))
    rejected, accepted = 0, []
    for name, blob in attempts:
        _write(path, blob)
        try:
            _load(kind, path, model, mode)
        except (ValueError, TypeError, RuntimeError):
            rejected += 1
        else:
            accepted.append(name)
    _write(path, good)
    _load(kind, path, model, mode)  # the genuine file still loads
    return len(attempts), rejected, accepted


def release_edits():
    """(name, edit(doc) -> doc) for a KernelRelease file (the issue's list)."""
    def set_(key, value):
        def edit(d):
            d[key] = value
            return d
        return edit

    def mu(fn):
        def edit(d):
            d["mu"] = _b64(fn(_unb64(d["mu"]).copy()))
            return d
        return edit

    edits = [(f"epsilon = {v!r}", set_("epsilon", v)) for v in (-1.0, float("nan"), float("inf"), 0.0)]
    edits += [(f"delta = {v!r}", set_("delta", v)) for v in (1.5, -0.1, float("nan"))]
    edits += [(f"data_norm = {v!r}", set_("data_norm", v)) for v in (-1.0, float("nan"), 0.0)]
    edits += [
        ("mu x10", mu(lambda m: m * 10.0)),
        ("mu = 1e308", mu(lambda m: np.full_like(m, 1e308))),
        ("mu NaN", mu(lambda m: np.full_like(m, np.nan))),
        ("one class", set_("classes", [1])),
        ("three classes", set_("classes", [-1, 0, 1])),
        ("classes reversed", set_("classes", [1, -1])),
        ("empty calibration", set_("calibration", {})),
        ("shape forged", set_("shape", [10**9, 2])),
        ("points not base64", set_("points", "***")),
        ("kernel gamma = -1", lambda d: (d["kernel"].__setitem__("gamma", -1.0), d)[1]),
        ("mechanism unknown", set_("mechanism", "nonsense")),
        ("intercept = inf", set_("intercept", float("inf"))),
    ]
    return edits


def _plain_with_nan(doc) -> bytes:
    """JSON with NaN/inf allowed (Python's json writes them), checksum recomputed as the old format did."""
    doc = {k: v for k, v in doc.items() if k != "checksum"}
    doc["checksum"] = checksum(doc)
    return json.dumps(doc, sort_keys=True).encode()


def forge_release(directory, mode: str):
    """The KernelRelease forgeries: ``mode="plain"`` (no key: checksum + field validation) or ``"sealed"``
    (``save/load(key=...)``). Returns ``(tried, rejected, accepted_names)``."""
    rng = np.random.default_rng(0)
    X = unit_ball(rng, 300, 2)
    y = np.where(X[:, 0] > 0, 1, -1)
    svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
    rel = dpcore.TDDL(svm, 1.0, 1e-6, data_norm=1.0, random_state=0).fit(X[:40]).release_
    path = str(Path(directory) / "release.json")
    key = secrets.token_bytes(32) if mode == "sealed" else None
    rel.save(path)
    doc = json.loads(Path(path).read_text())
    attempts = []
    for name, edit in release_edits():
        forged = edit(json.loads(json.dumps(doc)))
        attempts.append((f"{name} [plain, checksum recomputed]", _plain_with_nan(forged)))
        if mode == "sealed":
            made_up = SealingKey(secrets.token_bytes(32), "attacker")
            body = {k: v for k, v in forged.items() if k != "checksum"}
            attempts.append((f"{name} [sealed under a made-up key]",
                             seal(json.dumps(body, sort_keys=True).encode(), made_up, "dpcore.kernel_release/1")))
    if mode == "sealed":
        rel.save(path, key=key)
        good = Path(path).read_bytes()
        flipped = bytearray(good)
        flipped[len(flipped) // 2] ^= 1
        attempts += [("one bit flipped", bytes(flipped)), ("truncated", good[:-5])]
    rejected, accepted = 0, []
    for name, blob in attempts:
        Path(path).write_bytes(blob)
        try:
            dpcore.KernelRelease.load(path, key=key)
        except (ValueError, TypeError):
            rejected += 1
        else:
            accepted.append(name)
    rel.save(path, key=key)
    dpcore.KernelRelease.load(path, key=key)  # the genuine file loads
    return len(attempts), rejected, accepted
