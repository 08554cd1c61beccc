"""The simulator's loggers, made only once someone can listen to them.

Importing :mod:`logging` costs ~4 ms of every process.  Until something has
imported it, nobody can have given a logger a handler or a level, so each
line meets logging's defaults: below WARNING it is dropped, at WARNING and
above it reaches only the simulator's NullHandler (which keeps logging's
last-resort handler from printing it).  Either way nothing happens, so
:class:`LazyLogger` does nothing until :mod:`logging` is loaded, and from
then on is the named logger (with its NullHandler).
"""

from __future__ import annotations

import sys

DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40  # logging's levels
DEFAULT_LEVEL = WARNING  # the root logger's level until someone sets one


class LazyLogger:
    """``logging.getLogger(name)`` with a NullHandler, made at its first use after
    :mod:`logging` is imported (by anyone); until then, logging's defaults."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger = None

    def _made(self):
        """The logger, or None while :mod:`logging` is not loaded."""
        if self._logger is None:
            if "logging" not in sys.modules:
                return None
            import logging  # loaded: waits if another thread is still loading it

            self._logger = logging.getLogger(self.name)
            self._logger.addHandler(logging.NullHandler())
        return self._logger

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging's name)
        logger = self._made()
        return level >= DEFAULT_LEVEL if logger is None else logger.isEnabledFor(level)

    def log(self, level: int, msg: str, *args) -> None:
        logger = self._made()
        if logger is not None:
            logger.log(level, msg, *args)

    def info(self, msg: str, *args) -> None:
        self.log(INFO, msg, *args)

    def warning(self, msg: str, *args) -> None:
        self.log(WARNING, msg, *args)
