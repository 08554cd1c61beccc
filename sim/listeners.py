"""Who hears what the machine does: typed listener protocols and their lists.

A :class:`~sim.machine.Machine` tells the :class:`LayerListener` objects of
``machine.listeners`` when a layer starts and ends; a memory tells the
:class:`MemoryListener` objects of its ``listeners`` of every write, and
``Memory.notify_feature`` (called by :func:`sim.dma.feature.write_feature`)
tells them which feature cube the write held.  Any number may listen at once
(``nvdla-sim loadable --layers`` and a diff recorder, say); each is added and
removed on its own.

This module is the shared floor: a unit tells its memory's listeners without
knowing who listens (``sim.diff``, ``sim.gen`` and ``sim.runtime`` sit above
the units).
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar, runtime_checkable


@runtime_checkable
class LayerListener(Protocol):
    """Told by the machine when each layer starts and ends."""

    def layer_begin(self, index: int, engine, ctx) -> None:
        """Layer ``index`` (0 = the machine's first) of ``engine`` starts with context ``ctx``."""

    def layer_end(self) -> None:
        """The layer that began last has run (not called when it raised)."""


@runtime_checkable
class RegisterListener(Protocol):
    """Told by the machine of every CSB register write, before the write takes effect."""

    def wrote_register(self, register, value: int) -> None:
        """``register`` (a ``regs.Register``) is written ``value``."""


@runtime_checkable
class MemoryListener(Protocol):
    """Told by a memory of every write, and of the feature cubes DMA writes held."""

    def wrote(self, memory, addr: int, size: int) -> None:
        """``memory`` has written ``size`` bytes at ``addr``."""

    def wrote_feature(self, memory, addr: int, layout, precision: str,
                      what: str) -> None:
        """The last write of ``memory`` at ``addr`` held this feature cube (``what``: the
        register naming its address)."""


L = TypeVar("L")


class Listeners(Generic[L]):
    """An ordered list of listeners: told in the order they were added, each once."""

    def __init__(self):
        self._items: list[L] = []

    def add(self, listener: L) -> L:
        if not any(item is listener for item in self._items):
            self._items.append(listener)
        return listener

    def remove(self, listener: L) -> None:
        """Stop telling ``listener``; ValueError if it does not listen."""
        for i, item in enumerate(self._items):
            if item is listener:
                del self._items[i]
                return
        raise ValueError(f"{listener!r} does not listen here")

    def __iter__(self):
        return iter(tuple(self._items))  # a listener may remove itself while told

    def __len__(self) -> int:
        return len(self._items)

    def items_view(self) -> list[L]:
        """The list of listeners itself, kept current by add/remove (never to be changed
        by its holder): its truth value is a check as cheap as any (``Machine.write_reg``
        makes it on every write)."""
        return self._items

    def __contains__(self, listener) -> bool:
        return any(item is listener for item in self._items)


class LayerListeners(Listeners[LayerListener]):
    """A machine's layer listeners."""

    def layer_begin(self, index: int, engine, ctx) -> None:
        for listener in self:
            listener.layer_begin(index, engine, ctx)

    def layer_end(self) -> None:
        for listener in self:
            listener.layer_end()


class RegisterListeners(Listeners[RegisterListener]):
    """A machine's register-write listeners."""

    def wrote_register(self, register, value: int) -> None:
        for listener in self:
            listener.wrote_register(register, value)


class MemoryListeners(Listeners[MemoryListener]):
    """A memory's write listeners; the memory tells this list, the list tells each."""

    def wrote(self, memory, addr: int, size: int) -> None:
        for listener in self:
            listener.wrote(memory, addr, size)

    def wrote_feature(self, memory, addr: int, layout, precision: str,
                      what: str) -> None:
        for listener in self:
            listener.wrote_feature(memory, addr, layout, precision, what)


def memory_listeners(memory) -> MemoryListeners:
    """The write listeners of ``memory`` (a ``sim.dram.Memory``)."""
    return memory.listeners


__all__ = ["LayerListener", "LayerListeners", "Listeners", "MemoryListener", "MemoryListeners",
           "RegisterListener", "RegisterListeners",
           "memory_listeners"]
