"""sim.runtime's read_loadable maps the file (its blobs are views of the mapping) and
reads it where a mapping cannot be made: the same Loadable either way, as parse_loadable
of the bytes."""

import pytest

from sim.runtime import loadable as loadable_module
from sim.runtime.loadable import LoadableError, parse_loadable, read_loadable

from .minikmd_task import tiny_loadable


def _summary(lo):
    return (lo.version, lo.tasks, lo.memories, lo.addresses, lo.tensors, lo.events,
            lo.relocs, lo.submits,
            {name: (b.size, b.interface, b.version, bytes(b.data)) for name, b in lo.blobs.items()})


@pytest.mark.parametrize("mapped", ["populated", "plain", "read"])
def test_read_loadable_is_parse_loadable_of_the_file(tmp_path, monkeypatch, mapped):
    """Mapped with its pages populated (Linux), mapped plainly (elsewhere) or read."""
    import mmap

    data = tiny_loadable(bytes(range(64)) * 4, 256)
    path = tmp_path / "tiny.nvdla"
    path.write_bytes(data)
    if mapped == "read":
        monkeypatch.setattr(loadable_module, "_mapped", lambda path: None)
    else:
        if mapped == "plain":
            monkeypatch.delattr(mmap, "MAP_POPULATE", raising=False)
        elif not hasattr(mmap, "MAP_POPULATE"):
            pytest.skip("no MAP_POPULATE here")
        mapping = loadable_module._mapped(path)
        assert mapping is not None and bytes(mapping) == data
        with pytest.raises(TypeError):  # read-only, however it was mapped
            mapping[0] = 1
    assert _summary(read_loadable(path)) == _summary(parse_loadable(data))


def test_a_file_too_short_to_map_is_still_a_clear_error(tmp_path):
    path = tmp_path / "empty.nvdla"
    path.write_bytes(b"")
    with pytest.raises(LoadableError, match="not a loadable"):
        read_loadable(path)
