"""Progress of long fits: where a progress display is useful, and a line that shows it.

PyMC draws its progress bars with ``rich``, whose live display in a notebook is an
``ipywidgets`` widget (its state is saved in the notebook). The bar here is plain text on
one line that rewrites itself with a carriage return, which terminals and Jupyter both
render; where neither is attached (a log file, a captured stream) only whole lines are
written.

Messages that are not progress go to the ``"bayes_rvm"`` logger. As PyMC does for its
``"pymc"`` logger, the package shows its ``INFO`` lines on standard error when the
application has configured no logging of its own; configure the ``"bayes_rvm"`` logger
(or the root logger) to send them elsewhere or silence them.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

__all__ = ["ProgressLine", "announce_compilation", "interactive", "logger"]

logger = logging.getLogger("bayes_rvm")
if not logging.root.handlers and not logger.handlers:
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.StreamHandler())

#: Said once per process, when numba compiles (rather than loads from its cache) the
#: package's compiled code: the first fit of a new installation waits for it.
COMPILING = (
    "bayes_rvm: compiling the solver once for this installation (about 10 s; "
    "later fits load it from numba's cache)"
)
_compilation_listener = None


def announce_compilation() -> None:
    """Log :data:`COMPILING` the first time numba compiles a function of this package.

    Registered by the modules that define compiled functions, at their import. Numba
    raises its ``"numba:compile"`` event only for a real compilation, not for a load from
    its on-disk cache, so a fit with a warm cache says nothing.
    """
    global _compilation_listener
    if _compilation_listener is not None:
        return
    from numba.core import event

    class Notice(event.Listener):
        said = False

        def on_start(self, event_) -> None:
            function = getattr(event_.data.get("dispatcher"), "py_func", None)
            module = getattr(function, "__module__", None) or ""  # None for exec-made code
            if self.said or not module.startswith("bayes_rvm"):
                return
            self.said = True
            logger.info(COMPILING)

        def on_end(self, event_) -> None:
            pass

    _compilation_listener = Notice()
    event.register("numba:compile", _compilation_listener)


def interactive(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default ``sys.stderr``) is a terminal, or the code runs in a
    notebook kernel: where a progress display is seen as it changes."""
    stream = sys.stderr if stream is None else stream
    if stream is not None and hasattr(stream, "isatty") and stream.isatty():
        return True
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel")


class ProgressLine:
    """Progress of ``total`` steps: one line per finished step and, with ``bar``, a bar
    on the last line (steps done, elapsed and remaining time) that rewrites itself.

    Parameters
    ----------
    total : int
        Number of steps.
    title : str
        Prefix of every line, e.g. ``"RVC"``.
    stream : file, optional
        Where to write (default ``sys.stdout``, where the solvers print their progress).
    bar : bool, optional
        Draw the bar; by default when :func:`interactive` says the stream is watched.
    """

    width = 20

    def __init__(
        self, total: int, title: str, stream: TextIO | None = None, bar: bool | None = None
    ):
        self.total, self.title = total, title
        self.stream = sys.stdout if stream is None else stream
        self.bar = interactive(self.stream) if bar is None else bar
        self.start = time.perf_counter()
        self.done = 0
        self.shown = 0  # length of the bar on the screen
        self._draw()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def step(self, message: str) -> None:
        """One more step done: write ``message`` on its own line, then redraw the bar."""
        self.done += 1
        self._write(f"[{self.title}] {message}; {self.elapsed():.1f} s elapsed")
        self._draw()

    def close(self) -> None:
        """Erase the bar."""
        if self.shown:
            self._write("", end="\r")

    def _write(self, text: str, end: str = "\n") -> None:
        if self.shown:  # over the bar, padded so that none of it remains
            text = "\r" + text.ljust(self.shown)
            self.shown = 0
        self.stream.write(text + end)
        self.stream.flush()

    def _draw(self) -> None:
        if not self.bar or self.done >= self.total:
            return
        filled = round(self.width * self.done / self.total)
        text = (
            f"[{self.title}] [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{self.done}/{self.total}, {self.elapsed():.1f} s"
        )
        if self.done:
            left = self.elapsed() * (self.total - self.done) / self.done
            text += f", about {left:.0f} s left"
        self._write(text, end="")
        self.shown = len(text)
