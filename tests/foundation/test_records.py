"""``@record`` (sim.records) behaves as ``@dataclass`` with the same ``frozen``: equality,
hashing, text, immutability, and the methods a class writes itself."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
import threading
from dataclasses import field

import pytest

from sim.records import record

BODIES = {
    "plain": "    x: int\n    y: object = 0\n",
    "not compared": "    x: int\n    y: object = field(default=0, compare=False)\n",
    "not hashed or shown": "    x: int\n    y: object = field(default=0, repr=False, hash=False)\n",
    "one field": "    x: int\n    y: object = field(default=0, init=False, compare=False)\n",
    "factory": "    x: int\n    y: object = field(default_factory=list)\n",
    "own eq": "    x: int\n    y: object = 0\n    def __eq__(self, other):\n        return True\n",
    "own hash": "    x: int\n    y: object = 0\n    def __hash__(self):\n        return 7\n",
    "own repr": "    x: int\n    y: object = 0\n    def __repr__(self):\n        return 'R'\n",
    "post init": "    x: int\n    y: object = 0\n    def __post_init__(self):\n"
                 "        self.__dict__['z'] = (self.x, self.y)\n",
    "unset outside init": "    x: int\n"
                          "    y: object = field(init=False, compare=False, repr=False)\n",
    "factory outside init": "    x: int\n    y: object = field(default_factory=list, init=False)\n",
    "own init": "    x: int\n    y: object = 0\n    def __init__(self, x, y=0):\n"
                "        self.__dict__.update(x=x, y=y)\n",
    "documented": "    '''A record.'''\n    x: int\n    y: object = field(default=0)\n",
}

#: Calls whose outcome (the instance's attributes, or the TypeError and its text) must be
#: the dataclass's: positional and keyword arguments, too few, too many, unknown, twice.
CALLS = [((), {}), ((1,), {}), ((1, 2), {}), ((1, 2, 3), {}), ((), {"x": 1}),
         ((), {"x": 1, "y": 2}), ((1,), {"z": 3}), ((1,), {"x": 2}), ((), {"y": 2})]


def _classes(body: str, frozen: bool, future: bool = False):
    """The class of ``body`` as a dataclass and as a record, both named C; ``future``: its
    annotations as text (``from __future__ import annotations``, as the project's)."""
    made = []
    head = "from __future__ import annotations\n" if future else ""
    for deco in (dataclasses.dataclass(frozen=frozen), record(frozen=frozen)):
        space = {"field": field}
        # not inheriting this module's future import: "types" means annotations as types
        code = compile(f"{head}class C:\n{body}", "<test>", "exec", dont_inherit=True)
        exec(code, space)  # noqa: S102 - the test's own class bodies
        made.append(deco(space["C"]))
    return made


def _outcome(compute):
    """What ``compute()`` gives, or the error it raises."""
    try:
        return compute()
    except TypeError as exc:
        return type(exc).__name__, str(exc)


def _class_attributes(cls):
    return {name: vars(cls).get(name, "absent") for name in ("x", "y")}


def _behaviour(cls):
    before = _class_attributes(cls)  # before anything asks for the fields
    a, b, c = cls(1), cls(1), cls(2)
    out = [before, repr(a), a == b, a != c, a == 1, a != 1, cls.__hash__ is None, cls.__doc__,
           cls.__match_args__, [repr(f) for f in dataclasses.fields(cls)],
           dataclasses.is_dataclass(cls), _class_attributes(cls),
           cls.__eq__.__qualname__, cls.__repr__.__qualname__]
    out.append(_outcome(lambda: cls(1) == cls(1, 5)))  # differing in y alone
    if cls.__hash__ is not None:
        out += [_outcome(lambda: (hash(a) == hash(b), hash(a), hash(c))),
                _outcome(lambda: hash(cls(1)) == hash(cls(1, 5)))]
    for obj, name in ((a, "x"), (a, "other")):
        try:
            setattr(obj, name, 5)
            out.append(("set", getattr(obj, name)))
        except dataclasses.FrozenInstanceError as exc:
            out.append(("refused", str(exc)))
        try:
            delattr(obj, name)
            out.append("deleted")
        except (dataclasses.FrozenInstanceError, AttributeError) as exc:
            out.append(("refused", type(exc).__name__, str(exc)))
    out += [copy.deepcopy(b) == b, copy.copy(b) == b, repr(dataclasses.replace(b, x=3))]
    out += [_outcome(lambda args=args, kwargs=kwargs: vars(cls(*args, **kwargs)))
            for args, kwargs in CALLS]
    out += [str(inspect.signature(cls)), cls.__init__.__qualname__]
    return out


@pytest.mark.parametrize("future", [False, True], ids=["types", "texts"])
@pytest.mark.parametrize("frozen", [True, False], ids=["frozen", "mutable"])
@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_record_behaves_as_the_dataclass(body, frozen, future):
    dataclass_cls, record_cls = _classes(body, frozen, future)
    # annotations as text, and fields inside __init__: collected when first asked for
    deferred = future and "init=False" not in body
    assert isinstance(vars(record_cls)["__dataclass_fields__"], dict) != deferred
    assert _behaviour(record_cls) == _behaviour(dataclass_cls)


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_fields_collected_when_asked_for_are_those_collected_at_once(body, monkeypatch):
    import sim.records

    def made():
        space = {"field": field}
        exec(f"from __future__ import annotations\nclass C:\n{body}", space)  # noqa: S102
        cls = record(space["C"])
        return [_class_attributes(cls), repr(cls.__dataclass_params__),
                [repr(f) for f in dataclasses.fields(cls)], _class_attributes(cls),
                cls.__match_args__, cls.__doc__]

    deferred = made()
    monkeypatch.setattr(sim.records, "_plain_fields", lambda cls: None)
    assert deferred == made()


@pytest.mark.parametrize("body", [
    "    x: int\n    y: list = []\n",  # a mutable default
    "    x: int\n    y = field(default=0)\n",  # a field() without an annotation
    "    x: int\n    y: typing.ClassVar[int] = 0\n",
    "    x: int\n    y: dataclasses.InitVar[int] = 0\n",
])
def test_a_class_the_dataclass_refuses_or_reads_apart_is_collected_at_once(body):
    """What the dataclass refuses, it refuses when the record is defined; pseudo-fields
    are its to read: either way the record is the dataclass's."""
    outcomes = []
    for deco in (dataclasses.dataclass(frozen=True), record):
        space = {"field": field, "typing": __import__("typing"), "dataclasses": dataclasses}
        exec(f"from __future__ import annotations\nclass C:\n{body}", space)  # noqa: S102
        try:
            cls = deco(space["C"])
        except (TypeError, ValueError) as exc:
            outcomes.append((type(exc).__name__, str(exc)))
            continue
        assert isinstance(vars(cls)["__dataclass_fields__"], dict)
        outcomes.append([repr(f) for f in dataclasses.fields(cls)])
    assert outcomes[0] == outcomes[1]


def test_a_record_inside_its_own_repr_shows_dots():
    dataclass_cls, record_cls = _classes("    x: object = None\n", False)
    texts = []
    for cls in (dataclass_cls, record_cls):
        obj = cls()
        obj.x = [obj]
        texts.append(repr(obj))
    assert texts[0] == texts[1] == "C(x=[...])"


def test_a_record_subclass_compares_by_its_own_fields():
    @record
    class Base:
        x: int

    @record
    class Child(Base):
        y: int = 0

    assert Child(1, 2) == Child(1, 2) != Child(1, 3)
    assert Base(1) != Child(1)  # another class: not equal, as dataclasses
    assert hash(Child(1, 2)) == hash((1, 2)) and repr(Child(1, 2)) == (
        "test_a_record_subclass_compares_by_its_own_fields.<locals>.Child(x=1, y=2)")


@pytest.mark.parametrize("body", [
    "    x: int = 0\n    y: int\n",  # a field without a default after one with
    "    x: int = field(default=0, kw_only=True)\n",  # keyword-only: not supported
])
def test_a_record_the_template_cannot_build_is_refused_when_defined(body):
    space = {"field": field}
    exec(f"class C:\n{body}", space)  # noqa: S102 - the test's own class body
    with pytest.raises(TypeError, match="non-default argument 'y' follows|not supported"):
        record(space["C"])


def test_records_of_many_fields_store_each_under_its_own_name():
    names = [f"f{i}" for i in range(12)]
    space: dict = {}
    body = "".join(f"    {name}: int = {i}\n" for i, name in enumerate(names))
    exec(f"class C:\n{body}", space)  # noqa: S102 - the test's own class body
    obj = record(space["C"])(*range(100, 106), f11=7)
    assert vars(obj) == {**{name: 100 + i for i, name in enumerate(names[:6])},
                         **{name: i for i, name in enumerate(names) if 6 <= i < 11}, "f11": 7}


def test_an_undocumented_record_is_documented_without_inspect(monkeypatch):
    """Its text is written out from the __init__ it was given (inspect's signature objects
    cost more than the rest of the record): inspect only for a class's own __init__."""
    import sim.records

    def refuse(cls):
        raise AssertionError(f"inspect asked for {cls.__name__}")

    monkeypatch.setattr(sim.records, "_inspected_signature_text", refuse)
    space: dict = {"field": field}
    exec("from __future__ import annotations\nclass C:\n"  # noqa: S102 - the test's own
         "    x: tuple[int, ...] | None\n    y: str = 'a'\n"
         "    z: list[int] = field(default_factory=list)\n", space)
    cls = record(space["C"])
    assert cls.__doc__ == "C(x: 'tuple[int, ...] | None', y: 'str' = 'a', " \
                          "z: 'list[int]' = <factory>)"


#: Modules with records of no docstring of their own: their texts are compared below.
RECORD_MODULES = ("sim.runtime.loadable", "sim.runtime.runner", "sim.firmware.driver",
                  "sim.sdp.fetch", "sim.conv.layer", "sim.gen.build", "sim.rtl.bench")


@pytest.mark.parametrize("module", RECORD_MODULES)
def test_the_records_texts_are_what_the_dataclass_would_write(module):
    import importlib

    made = [cls for cls in vars(importlib.import_module(module)).values()
            if isinstance(cls, type) and cls.__module__ == module
            and dataclasses.is_dataclass(cls) and cls.__doc__.startswith(f"{cls.__name__}(")]
    assert made
    for cls in made:
        assert cls.__doc__ == cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")


def test_fields_asked_for_by_many_threads_at_once():
    """Threads asking for a deferred record's fields while one has them collected all get
    them (none finds the class without its fields in the meantime)."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: the window, if any, shows
    try:
        failures = [_fields_race(trial) for trial in range(60)]
    finally:
        sys.setswitchinterval(switch)
    assert not any(failures)


def _fields_race(trial: int, threads: int = 6) -> bool:
    """Whether some thread failed to get the fields of a fresh record of 30 plain fields."""
    space: dict = {}
    exec("from __future__ import annotations\nclass Race:\n"
         + "".join(f"    f{i}: int = {i + trial}\n" for i in range(30)), space)
    cls = record(space["Race"])
    start, errors = threading.Barrier(threads), []

    def ask() -> None:
        start.wait()
        for _ in range(20):
            try:
                assert len(dataclasses.fields(cls)) == 30
            except (TypeError, AssertionError) as exc:
                errors.append(exc)
                return

    workers = [threading.Thread(target=ask) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return bool(errors)
