"""``@record``: the project's dataclass, quicker to define at import.

A dataclass compiles each method it writes (``exec``), at import: the 45 a
loadable run defines took ~37 ms of its start-up.  ``record`` lets
:func:`dataclasses.dataclass` write only ``__init__`` (and, frozen, the
``__setattr__``/``__delattr__`` guards) and gives the record ``__eq__``,
``__hash__`` and ``__repr__`` built from closures instead, which behave as the
dataclass's own: the same fields (``compare``, ``hash``, ``repr``), the same
class check, values compared and hashed as one tuple, the same text, ``...``
for a record inside its own repr.  A method the class defines itself is kept,
and ``__hash__`` follows the dataclass's rules (frozen: by the fields; else
None, unhashable; an explicit one wins).

The register table (:mod:`regs`) and the trace's op classes have their own
hand-written base, ``regs.Record``, for classes whose constructors are written out;
records declared as fields use this.
"""

from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter


def record(cls=None, /, *, frozen: bool = True):
    """``@record`` (frozen) or ``@record(frozen=False)``: ``@dataclass(frozen=...)``."""
    def wrap(cls):
        return _record(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _record(cls, frozen: bool):
    own = cls.__dict__
    explicit_hash = not ("__hash__" not in own or
                         (own["__hash__"] is None and "__eq__" in own))
    cls = dataclasses.dataclass(cls, frozen=frozen, eq=False, repr=False)
    fields = dataclasses.fields(cls)
    if "__repr__" not in own:
        _add(cls, _repr([f.name for f in fields if f.repr]))
    if "__eq__" not in own:
        _add(cls, _eq(_values([f.name for f in fields if f.compare])))
    if not explicit_hash:  # frozen: hashed by the fields; mutable: unhashable
        if frozen:
            _add(cls, _hash(_values([f.name for f in fields
                                     if (f.compare if f.hash is None else f.hash)])))
        else:
            cls.__hash__ = None
    return cls


def _add(cls, method) -> None:
    method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
    setattr(cls, method.__name__, method)


def _values(names: list[str]):
    """The function giving a record's ``names`` fields as a tuple."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return attrgetter(*names)


def _eq(values):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values):
    def __hash__(self):
        return hash(values(self))

    return __hash__


def _repr(names: list[str]):
    values = _values(names)

    @reprlib.recursive_repr()
    def __repr__(self):
        pairs = zip(names, values(self), strict=True)
        text = ", ".join([f"{name}={value!r}" for name, value in pairs])
        return f"{self.__class__.__qualname__}({text})"

    return __repr__
