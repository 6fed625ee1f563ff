"""Progress bars for long calls, behind the one ``verbose`` flag every estimator, service and function shares.

``verbose`` (``bool`` or ``int``, default ``False``) has one meaning across dpcore: falsy (``False``, ``0``) shows
nothing; truthy (``True``, ``1``, ...) shows a tqdm progress bar on stderr for every part of a call that can take
more than a few seconds (solver iterations, rounds, batches of queries or users, candidates, audit samples). Where
a loop runs in Rust without callbacks the bar counts the Python-level pieces around it (batches, chunks, rounds).
Log messages are independent of ``verbose``: they go through :mod:`logging` (module loggers under ``"dpcore"``,
at DEBUG and INFO; nothing is shown unless the application configures logging, e.g.
``logging.basicConfig(level=logging.INFO)``).

Privacy. Progress bars and log messages are shown to the **curator** running the call — the party that already
holds the private data — on their own terminal or log handlers. They are not part of any released object: no
estimator, release, service answer or saved file stores them. A bar's ``total`` is a public quantity
(``max_iter``, the number of rounds, queries, users or candidates); its postfix (a solver gap, a count of
updates) may depend on the data and is for the curator's eyes only, like the data itself. Do not forward
progress output or dpcore's log records to the people who receive the release.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

__all__ = ["VERBOSE_DOC", "check_verbose", "progress_bar"]

#: The numpydoc entry of ``verbose``, the same in every docstring (the first sentence is shared; each
#: docstring may add one line saying what its bar counts).
VERBOSE_DOC = (
    "verbose : bool or int, default=False\n"
    "    Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the\n"
    "    :mod:`logging` messages are for the curator only and never part of a release."
)


def check_verbose(verbose: object) -> bool:
    """Validate ``verbose`` (a bool or a non-negative int, numpy ones included) and return whether to show bars."""
    if isinstance(verbose, (bool, np.bool_, numbers.Integral)):
        if int(verbose) < 0:
            raise ValueError(f"verbose must be a bool or a non-negative int, got {verbose!r}")
        return bool(verbose)
    raise ValueError(f"verbose must be a bool or a non-negative int, got {verbose!r}")


class NoProgress:
    """The silent bar: the part of tqdm's interface dpcore uses, doing nothing."""

    n = 0
    total: Optional[float] = None

    def update(self, n: float = 1) -> None:
        self.n += n  # type: ignore[assignment]

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_description(self, desc: Optional[str] = None, refresh: bool = True) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "NoProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(verbose: object, *, total: Optional[float] = None, desc: str = "", unit: str = "it",
                 leave: bool = False, **kwargs: Any) -> Any:
    """A tqdm bar if ``verbose`` is truthy, else a :class:`NoProgress` with the same interface.

    Parameters
    ----------
    verbose : bool or int
        The caller's ``verbose`` (validated here).
    total : float, optional
        Expected number of steps. Must be a public quantity (``max_iter``, rounds, queries, ...), never a
        count that depends on the private data.
    desc, unit, leave, **kwargs
        Passed to :class:`tqdm.auto.tqdm`.

    Returns
    -------
    tqdm.auto.tqdm or NoProgress
        Use as a context manager, or call ``close()``.
    """
    if not check_verbose(verbose):
        return NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=leave, **kwargs)
