"""Durable state for dpcore's stateful services (PINP today; every future interactive service).

A service's privacy guarantee is only as good as its memory: a session that forgets answers or
updates after a crash, or that is handed an older copy of its state, would answer again from a
budget it has already spent. This module is the one place where such state is read and written.

Two backends, one interface (:class:`StateStore`):

* :class:`FileStateStore` (default) — one JSON document, written atomically and durably: a
  temporary file in the same directory, ``fsync``, ``os.replace``, ``fsync`` of the directory.
  A reader sees the old document or the new one, never a mix; after ``write`` returns, the new
  one survives a power cut (POSIX semantics of ``rename`` + ``fsync``).
* :class:`SQLiteStateStore` — the same document in one row of an SQLite database in WAL mode
  with ``synchronous=FULL`` (Python's standard library), for users who run a service for real:
  commits are transactional and durable, and the sequence check below runs inside the same
  ``BEGIN IMMEDIATE`` transaction as the write.

Both stores keep a **sequence number** ``seq`` in the document, bound to the model fingerprint
and covered by the document's SHA-256 checksum. Every write must find the stored ``seq`` equal to
the one this session last read or wrote, and stores ``seq + 1``; otherwise
:class:`StateRollbackError` is raised before anything is written. ``load(min_seq=...)`` refuses a
document older than a sequence number the caller recorded elsewhere.

Threat model (also in docs/privacy.md): the checksum detects accidental corruption and
truncation; it is not keyed, so whoever can write the file can forge a consistent document. A
rollback to an older *valid* copy cannot be detected from the file alone (it is exactly what an
older state looked like); it is detected (a) while a session is live — the next commit finds a
``seq`` it did not write — and (b) at load time if the caller passes the last ``seq`` it saw
(``PINP.state_seq``), kept somewhere the attacker cannot roll back. Someone who controls the disk
and every copy of ``seq`` can roll the budget back; that is outside what a library can prevent.

A POSIX advisory lock (``path + ".lock"``) keeps two live sessions from sharing one state.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from typing import Callable, Optional
from dpcore.exceptions import StateRollbackError

__all__ = [
    "StateRollbackError",
    "StateStore",
    "FileStateStore",
    "SQLiteStateStore",
    "open_state_store",
    "checksum",
    "atomic_write",
]

#: Fault-injection point for crash tests: called with a stage name at every step of a write
#: (``"tmp_written"``, ``"tmp_synced"``, ``"replaced"``, ``"dir_synced"`` for files;
#: ``"sqlite_written"``, ``"sqlite_committed"`` for SQLite). ``None`` in normal use; the kill-sweep
#: worker (tests/kernel_learning/_pinp_worker.py) sets it to SIGKILL itself at a chosen moment.
FAULT_HOOK: Optional[Callable[[str], None]] = None

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _fault(stage: str) -> None:
    if FAULT_HOOK is not None:
        FAULT_HOOK(stage)


def checksum(doc: dict) -> str:
    """SHA-256 of the canonical JSON of ``doc`` without its ``checksum`` field (not keyed)."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably (temp file, fsync, replace, fsync dir)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            _fault("tmp_written")
            os.fsync(f.fileno())
        _fault("tmp_synced")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fault("replaced")
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    _fault("dir_synced")


def _temp_prefix(path: str) -> str:
    return "." + os.path.basename(path) + ".dpcore-"


def _parse(raw: bytes, where: str, fmt: str) -> dict:
    try:
        doc = json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where} is corrupted or truncated (not a complete JSON document: {exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{where} is not a {fmt} state (format {got!r})")
    if doc.get("checksum") != checksum(doc):
        raise ValueError(f"{where} is corrupted or was edited (checksum mismatch)")
    if not isinstance(doc.get("seq"), int) or doc["seq"] < 0:
        raise ValueError(f"{where} has no valid sequence number (seq)")
    return doc


class StateStore:
    """Interface of a durable state store for one service session (see the module docstring)."""

    backend = ""

    def __init__(self, path: str, fmt: str):
        self.path = os.fspath(path)
        self.fmt = fmt
        self._lock_fd: Optional[int] = None

    # -- locking (one live session per state) --------------------------------------------------
    def acquire(self, who: str = "session") -> None:
        import fcntl

        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError(f"state_path {self.path!r} is in use by another live {who}") from None
        self._lock_fd = fd
        # Holding the lock, no writer of this state is live: temporary files of its interrupted
        # writes (a crash between mkstemp and rename) are garbage and are removed.
        directory = os.path.dirname(os.path.abspath(self.path))
        prefix = _temp_prefix(self.path)
        for name in os.listdir(directory):
            if name.startswith(prefix) and name.endswith(".tmp"):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass

    def release(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            try:
                os.close(fd)  # closing the descriptor drops the flock
            except OSError:
                pass

    # -- documents -----------------------------------------------------------------------------
    def exists(self) -> bool:
        raise NotImplementedError

    def read(self) -> dict:
        """The stored document, verified (format, checksum, sequence number)."""
        raise NotImplementedError

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        """Store ``doc`` with ``seq = expect_seq + 1`` (0 for a new state) and return that ``seq``.

        ``expect_seq`` is the sequence number this session last read or wrote (``None``: the state
        must not exist yet). :class:`StateRollbackError` if the stored one differs.
        """
        raise NotImplementedError

    @staticmethod
    def _seal(doc: dict, seq: int) -> dict:
        doc = dict(doc)
        doc.pop("checksum", None)
        doc["seq"] = int(seq)
        doc["checksum"] = checksum(doc)
        return doc

    def _check_seq(self, stored: Optional[int], expect_seq: Optional[int]) -> int:
        if stored != expect_seq:
            if expect_seq is None:
                raise ValueError(f"state_path {self.path!r} exists: resume that session with load()")
            raise StateRollbackError(
                f"state_path {self.path!r} changed behind this session: stored sequence number {stored!r}, "
                f"expected {expect_seq} (the state was rolled back, replaced or written by another process); "
                "nothing was written")
        return 0 if expect_seq is None else expect_seq + 1


class FileStateStore(StateStore):
    """One JSON document per state, replaced atomically and durably (module docstring)."""

    backend = "file"

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> dict:
        with open(self.path, "rb") as f:
            raw = f.read()
        return _parse(raw, repr(self.path), self.fmt)

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        stored = self.read()["seq"] if self.exists() else None
        seq = self._check_seq(stored, expect_seq)
        atomic_write(self.path, json.dumps(self._seal(doc, seq), sort_keys=True).encode())
        return seq


class SQLiteStateStore(StateStore):
    """The document in one row of an SQLite database (WAL, ``synchronous=FULL``), one transaction per write."""

    backend = "sqlite"

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("CREATE TABLE IF NOT EXISTS dpcore_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
                    "seq INTEGER NOT NULL, doc TEXT NOT NULL)")
        return con

    def exists(self) -> bool:
        if not os.path.exists(self.path):
            return False
        con = self._connect()
        try:
            return con.execute("SELECT 1 FROM dpcore_state WHERE id = 1").fetchone() is not None
        finally:
            con.close()

    def read(self) -> dict:
        if not os.path.exists(self.path):
            raise FileNotFoundError(self.path)
        con = self._connect()
        try:
            row = con.execute("SELECT seq, doc FROM dpcore_state WHERE id = 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path!r} is not a readable SQLite state ({exc})") from None
        finally:
            con.close()
        if row is None:
            raise FileNotFoundError(f"{self.path!r} holds no state")
        doc = _parse(row[1].encode(), repr(self.path), self.fmt)
        if doc["seq"] != row[0]:
            raise ValueError(f"{self.path!r} is inconsistent (row and document sequence numbers differ)")
        return doc

    def write(self, doc: dict, expect_seq: Optional[int]) -> int:
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT seq FROM dpcore_state WHERE id = 1").fetchone()
                seq = self._check_seq(None if row is None else int(row[0]), expect_seq)
                sealed = self._seal(doc, seq)
                con.execute("INSERT INTO dpcore_state (id, seq, doc) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE "
                            "SET seq = excluded.seq, doc = excluded.doc", (seq, json.dumps(sealed, sort_keys=True)))
                _fault("sqlite_written")
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            _fault("sqlite_committed")
            return seq
        finally:
            con.close()


def open_state_store(path, fmt: str, backend: str = "auto") -> StateStore:
    """The store for ``path``: ``backend="file"``, ``"sqlite"``, or ``"auto"`` (SQLite for the suffixes
    ``.sqlite``, ``.sqlite3``, ``.db``; a JSON file otherwise)."""
    path = os.fspath(path)
    if backend == "auto":
        backend = "sqlite" if path.endswith(_SQLITE_SUFFIXES) else "file"
    if backend == "file":
        return FileStateStore(path, fmt)
    if backend == "sqlite":
        return SQLiteStateStore(path, fmt)
    raise ValueError(f"state_backend must be 'auto', 'file' or 'sqlite', got {backend!r}")


class NotPicklableService:
    """Mixin refusing ``pickle``/``copy`` of a live interactive mechanism (PINP, GPService).

    A copy of a live session would keep answering from the same calibrated state as the original,
    while each copy's answers are accounted as the only ones: the same budget spent twice. Durable
    persistence is ``state_path=`` + ``load`` (one state file, sequence-numbered, rollback refused).
    """

    def _refuse_copy(self):
        name = type(self).__name__
        raise TypeError(
            f"a live {name} cannot be pickled or copied: the copy would answer from the same calibrated "
            f"state as the original, spending its budget twice. Persist it with state_path= and "
            f"{name}.load(...) instead")

    def __reduce_ex__(self, protocol):
        self._refuse_copy()

    def __copy__(self):
        self._refuse_copy()

    def __deepcopy__(self, memo):
        self._refuse_copy()
