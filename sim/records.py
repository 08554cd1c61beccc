"""``@record``: the project's dataclass, quicker to define at import.

A dataclass compiles each method it writes (``exec``) when its class is
defined: the 44 records a loadable run defines cost ~30 ms of every process,
most of it compiling ``__init__`` and the frozen guards.  ``record`` lets
:func:`dataclasses.dataclass` collect the fields only (``dataclasses.fields``
and ``dataclasses.replace`` work as for any dataclass), for a record of plain
fields not before they are first asked for (:func:`_plain_fields`), and writes
no code:

* ``__init__`` is a template compiled once per number of fields, its
  parameter names and the field names it stores renamed to the record's
  (``CodeType.replace``), so the signature, defaults and every error message
  are the dataclass's own; a default factory and ``__post_init__`` run after
  the stores, as in the dataclass;
* a frozen record's ``__setattr__``/``__delattr__`` refuse as the dataclass's
  do; ``__eq__``, ``__hash__`` and ``__repr__`` are closures with the
  dataclass's rules: the same fields (``compare``, ``hash``, ``repr``), the same
  class check, values compared and hashed as one tuple, the same text, ``...``
  for a record inside its own repr.

A method the class defines itself is kept, and ``__hash__`` follows the
dataclass's rules (frozen: by the fields; else None, unhashable; an explicit
one wins).  Fields outside ``__init__`` (``init=False``) and ``InitVar`` are
not supported and are refused when the class is defined.

The register table (:mod:`regs`) and the trace's op classes have their own
hand-written base, ``regs.Record``, for classes whose constructors are written out;
records declared as fields use this.
"""

from __future__ import annotations

import dataclasses
import reprlib
import threading
import types
from operator import attrgetter


class _Factory:
    """The default of a factory field's parameter: "call the factory" (the dataclass's rule,
    and its text in signatures)."""

    def __repr__(self) -> str:
        return "<factory>"


_CALL_FACTORY = _Factory()


def record(cls=None, /, *, frozen: bool = True):
    """``@record`` (frozen) or ``@record(frozen=False)``: ``@dataclass(frozen=...)``."""
    def wrap(cls):
        return _record(cls, frozen)

    return wrap if cls is None else wrap(cls)


def replace(obj, /, **changes):
    """``dataclasses.replace(obj, **changes)`` of a record, without having the dataclass
    collect the record's fields first (deferred to their first use: half a millisecond of a
    process that never needs them).  Every field of a record is an ``__init__`` parameter
    (``init=False`` is refused) and ``__match_args__`` names them all."""
    cls = type(obj)
    names = cls.__match_args__
    unknown = changes.keys() - set(names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    return cls(**{name: changes[name] if name in changes else getattr(obj, name)
                  for name in names})


def _record(cls, frozen: bool):
    own = cls.__dict__  # live: what the class defines itself, read before anything is added
    explicit_hash = not ("__hash__" not in own or
                         (own["__hash__"] is None and "__eq__" in own))
    own_init = "__init__" in own
    documented = bool(own.get("__doc__"))
    if not documented:  # a placeholder, so the dataclass does not work out a text (slow)
        cls.__doc__ = "-"
    fields = _plain_fields(cls)
    if fields is None:  # the dataclass collects them now
        cls = _collect(cls)
        fields = dataclasses.fields(cls)
        _refuse_unsupported(cls, fields)
    else:  # when first asked for
        _defer_collecting(cls, fields)
    if not own_init:
        cls.__init__ = _init(cls, fields)
    if not documented:  # the dataclass's text: the class's name and signature
        cls.__doc__ = cls.__name__ + (_inspected_signature_text(cls) if own_init
                                      else _signature_text(cls.__init__))
    if frozen:
        _freeze(cls, frozenset(f.name for f in fields))
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


def _collect(cls):
    """The dataclass collects the fields only: init=False and frozen=False write no code."""
    return dataclasses.dataclass(cls, init=False, frozen=False, eq=False, repr=False)


# --- the fields, collected by the dataclass only when asked for -------------------

class _Field:
    """What :func:`_record` reads of a field (a :class:`dataclasses.Field`'s attributes)."""

    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "compare",
                 "hash")

    def __init__(self, name: str, kind: str, declared) -> None:
        self.name, self.type, self.init = name, kind, True
        if isinstance(declared, dataclasses.Field):
            self.default, self.default_factory = declared.default, declared.default_factory
            self.repr, self.compare, self.hash = declared.repr, declared.compare, declared.hash
        else:
            self.default, self.default_factory = declared, dataclasses.MISSING
            self.repr, self.compare, self.hash = True, True, None


def _plain_fields(cls) -> list[_Field] | None:
    """The fields of a record the dataclass need not collect when it is defined (it
    took ~100 us a record, a third of the record): one of its own annotations each, as
    text (``from __future__ import annotations``), none a ``ClassVar``, ``InitVar`` or
    ``KW_ONLY``, no dataclass base, defaults the dataclass accepts, a ``field()`` only
    with a default or factory and flags.  None for any other class: the dataclass
    collects its fields at once (and refuses what it refuses)."""
    if type(cls) is not type or any(hasattr(base, "__dataclass_fields__")
                                    for base in cls.__mro__[1:]):
        return None
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    if any(isinstance(value, dataclasses.Field) and name not in annotations
           for name, value in own.items()):
        return None  # a field() without an annotation: the dataclass's TypeError
    fields = []
    for name, kind in annotations.items():
        if not isinstance(kind, str) or any(word in kind for word in _PSEUDO_FIELDS):
            return None
        declared = getattr(cls, name, dataclasses.MISSING)
        if isinstance(declared, dataclasses.Field):
            if name not in own or declared.init is not True or declared.kw_only not in (
                    dataclasses.MISSING, False):
                return None
            default = declared.default
        else:
            default = declared
        if isinstance(default, types.MemberDescriptorType) or (
                default is not dataclasses.MISSING and type(default).__hash__ is None):
            return None  # a slot; a mutable default (the dataclass's ValueError)
        fields.append(_Field(name, kind, declared))
    return fields


_PSEUDO_FIELDS = ("ClassVar", "InitVar", "KW_ONLY")  # what the dataclass reads in annotations


def _defer_collecting(cls, fields: list[_Field]) -> None:
    """Leave ``cls`` as the dataclass leaves it but for ``__dataclass_fields__`` and
    ``__dataclass_params__``, which it makes at their first use
    (:class:`_Uncollected`): a default given by ``field()`` becomes the class attribute
    (a factory's none), and ``__match_args__`` names the fields."""
    declared = {f.name: cls.__dict__[f.name] for f in fields
                if isinstance(cls.__dict__.get(f.name), dataclasses.Field)}
    for name, field in declared.items():
        if field.default is dataclasses.MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, field.default)
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in fields)
    for name in _COLLECTED:
        setattr(cls, name, _Uncollected(cls, name, declared))


_COLLECTED = ("__dataclass_fields__", "__dataclass_params__")
_COLLECTING = threading.RLock()  # reentrant: a collection may meet another record's


class _Uncollected:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record whose fields the
    dataclass has not collected yet: the first to ask (``dataclasses.fields``,
    ``replace``, ``asdict``, ``is_dataclass``) has them collected, from the class
    attributes it was defined with, and gets what the dataclass made."""

    def __init__(self, cls, name: str, declared: dict) -> None:
        self.cls, self.name, self.declared = cls, name, declared

    def __get__(self, obj, owner=None):
        cls = self.cls
        with _COLLECTING:
            if isinstance(cls.__dict__.get(self.name), _Uncollected):
                # the descriptors stay until the dataclass replaces them (it reads only the
                # bases' fields): a thread asking meanwhile waits here, never finds none
                for name, field in self.declared.items():  # as the class was defined
                    setattr(cls, name, field)
                _collect(cls)
        return cls.__dict__[self.name]


def _refuse_unsupported(cls, fields) -> None:
    """Keyword-only fields and ``InitVar`` pseudo-fields change ``__init__``'s shape beyond
    the template's: refused when the class is defined rather than built wrong."""
    names = {g.name for g in fields}
    pseudo = [f for name, f in cls.__dataclass_fields__.items() if name not in names]
    if any(getattr(f, "kw_only", False) is True for f in fields) or any(
            "InitVar" in str(f.type) for f in pseudo):
        raise TypeError(f"@record {cls.__qualname__}: keyword-only fields and InitVar "
                        "are not supported; use @dataclass")


# --- __init__ without compiling: a template per field count, renamed -------------

_TEMPLATES: dict[tuple[int, bool], types.CodeType] = {}


def _template(count: int, finish: bool) -> types.CodeType:
    """The code of ``__init__(__record_self__, p0, ..., p<count-1>)`` storing parameter
    ``i`` under the placeholder key ``"\0field<i>"`` in the instance's ``__dict__``, then,
    with ``finish``, calling the global ``__record_finish__(self)``.  Compiled once per
    shape; :func:`_init` renames the parameters and keys.  Stores into ``__dict__`` go
    around a frozen record's ``__setattr__``, as the dataclass's ``object.__setattr__``."""
    shape = (count, finish)
    if shape not in _TEMPLATES:
        params = "".join(f", p{i}" for i in range(count))
        lines = [f"def __init__(__record_self__{params}):",
                 "    __record_dict__ = __record_self__.__dict__"]
        lines += [f"    __record_dict__['\\0field{i}'] = p{i}" for i in range(count)]
        if finish:
            lines.append("    __record_finish__(__record_self__)")
        space: dict = {}
        exec(compile("\n".join(lines), "<record __init__>", "exec"), space)  # noqa: S102
        _TEMPLATES[shape] = space["__init__"].__code__
    return _TEMPLATES[shape]


def _init(cls, fields):
    """The dataclass's ``__init__`` for ``fields``, from :func:`_template`."""
    params = [f for f in fields if f.init]
    defaults = []
    for f in params:
        if f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            defaults.append(_CALL_FACTORY)
        elif defaults:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    finish = _finisher(cls, fields)
    code = _template(len(params), finish is not None)
    names = {f"\0field{i}": f.name for i, f in enumerate(params)}
    code = code.replace(
        co_varnames=("__record_self__", *names.values(), "__record_dict__"),
        co_consts=tuple(names.get(c, c) if isinstance(c, str) else c for c in code.co_consts),
        **_qualname(f"{cls.__qualname__}.__init__"))
    init = types.FunctionType(code, {"__record_finish__": finish}, "__init__",
                              tuple(defaults) or None)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in params}, "return": None}
    return init


def _qualname(name: str) -> dict:
    """``co_qualname`` where code has one (Python 3.11+; error messages name it)."""
    return {"co_qualname": name} if hasattr(types.CodeType, "co_qualname") else {}


def _finisher(cls, fields):
    """What ``__init__`` does after storing its parameters, or None: default factories
    called (for a field outside ``__init__`` too; one with a plain default is left to the
    class attribute, as the dataclass leaves it), ``__post_init__`` called."""
    factories = [(f.name, f.default_factory) for f in fields
                 if f.default_factory is not dataclasses.MISSING]
    post_init = hasattr(cls, "__post_init__")
    if not (factories or post_init):
        return None

    def finish(self):
        values = self.__dict__
        for name, factory in factories:
            if values.get(name, _CALL_FACTORY) is _CALL_FACTORY:
                values[name] = factory()
        if post_init:
            self.__post_init__()

    return finish


def _signature_text(init) -> str:
    """``str(inspect.signature(cls))`` without `` -> None``, written out: inspect's
    signature objects cost more than the whole record for the records without a
    docstring."""
    from inspect import formatannotation  # inspect: already loaded by dataclasses

    defaults = init.__defaults__ or ()
    names = init.__code__.co_varnames[1:init.__code__.co_argcount]
    first_default = len(names) - len(defaults)
    parts = []
    for i, name in enumerate(names):
        text = f"{name}: {formatannotation(init.__annotations__[name])}"
        parts.append(text if i < first_default else f"{text} = {defaults[i - first_default]!r}")
    return f"({', '.join(parts)})"


def _inspected_signature_text(cls) -> str:
    """The dataclass's text for a class with its own ``__init__``."""
    import inspect

    try:
        return str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
        return ""


def _freeze(cls, names: frozenset) -> None:
    """The frozen dataclass's guards: the record's own class refuses every assignment and
    deletion, a subclass those of the record's fields."""
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    _add(cls, __setattr__)
    _add(cls, __delattr__)


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
