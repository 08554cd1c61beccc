"""Errors a user sees: each renders as one line, never a traceback.

This module is the one home of the project's error classes.  Every error carries
its context as data, never only as text:

- ``reason``: what is wrong;
- ``where``: the innermost place it is wrong at (a register name, a file:line),
  given where the error is raised (``SimError(reason, where=...)``);
- ``context``: outer places, outermost first, added while the error travels up
  (:meth:`ReportedError.locate`, or the :func:`located` context manager).

``str(exc)`` joins them: ``<context>: ... : <where>: <reason>``, the one line the
command line prints after ``nvdla-sim: error:``.  Adding context never changes
the error's class, so a caller tells what happened by ``isinstance`` and by the
attributes, never by reading the message.
"""

from __future__ import annotations

from contextlib import contextmanager


class ReportedError(Exception):
    """The common base of SimError and CheckFailed: a reason and where it applies."""

    exit_code = 2

    def __init__(self, reason: str = "", *, where: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.where = where
        self.context: list[str] = []

    def locate(self, where: str) -> ReportedError:
        """Add an outer place (a trace line, a layer): the place the error is reported at
        first if it has none, else context in front of it.  A place it already names is not
        added twice.  Returns the error itself, to re-raise."""
        if not where or where == self.where or where in self.context:
            return self
        if not self.where:
            self.where = where
        else:
            self.context.insert(0, where)
        return self

    def __str__(self) -> str:
        return ": ".join([*self.context, *([self.where] if self.where else []), self.reason])

    def __reduce__(self):  # picklable whatever the subclass's constructor takes
        return _restore, (type(self), self.args, self.__dict__.copy())


def _restore(cls, args, state):
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


@contextmanager
def located(where: str):
    """Errors raised in the block are located at ``where`` (see ReportedError.locate)."""
    try:
        yield
    except ReportedError as exc:
        exc.locate(where)
        raise


class SimError(ReportedError):
    """Invalid input (trace, register combination, DMA range...): exit status 2."""

    exit_code = 2


class CheckFailed(ReportedError):
    """A trace check (CRC, dump, register read) did not match: exit status 1.

    Not a SimError: a failed check is its own outcome, not invalid input."""

    exit_code = 1


class NotImplementedFeature(SimError):
    """A unit or feature the simulator does not model yet (a fact about the simulator,
    not about the input: the trace player does not locate it at a trace line)."""

    def __init__(self, unit: str, feature: str):
        super().__init__(f"not implemented: {unit} {feature}")
        self.unit = unit
        self.feature = feature


class MemoryFault(SimError):
    """A memory access outside the address space, or beyond the simulator's limits;
    ``where`` names the register (or trace line) the access was made for, if any."""


class ConfigurationError(SimError):
    """A register programs something the hardware configuration lacks or forbids."""


class LayoutError(SimError):
    """Invalid memory-layout parameters (alignment, strides, sizes, formats)."""


class SpecError(SimError):
    """An illegal request in a gen spec: names the layer, the key and the rule."""


class LoadableError(SimError):
    """A file that is not a well-formed loadable."""


class EmuError(SimError):
    """An EMU task the runtime would refuse."""


class FirmwareError(SimError):
    """The firmware cannot run: it does not build, or the run cannot progress."""


class FirmwareBuildError(SimError):
    """The firmware does not compile, or there is no C compiler."""


class FirmwareTaskFailed(SimError):
    """The firmware reported that a task failed (exit status 1)."""

    exit_code = 1


class FirmwareCrashed(SimError):
    """The firmware's process died or hung (exit status 1): the firmware's fault."""

    exit_code = 1
