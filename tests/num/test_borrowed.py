"""Arrays borrowed without reference counting (sim.num.borrowed): the same memory, shape
and strides as the array they borrow from, and no record of that memory to count."""

import numpy as np
import pytest

from sim.jit import intrinsic, njit
from sim.num.borrowed import borrowed


@intrinsic
def _meminfo_address(typingctx, array):
    """The address of an array's memory record (0: none, nothing counts its references)."""
    from numba.core import types

    def codegen(context, builder, sig, args):
        view = context.make_array(sig.args[0])(context, builder, value=args[0])
        return builder.ptrtoint(view.meminfo, context.get_value_type(types.intp))

    return types.intp(array), codegen


@njit
def _through_borrowed(x, value):
    """Writes ``value`` at ``x``'s first element through a borrowed view; the view's
    shape, strides, sum, and the memory records of ``x`` and of the view."""
    view = borrowed(x)
    view.flat[0] = value
    return view.shape, view.strides, view.sum(), _meminfo_address(x), _meminfo_address(view)


@pytest.mark.parametrize("x", [
    np.arange(10, dtype=np.uint16),
    np.arange(24, dtype=np.int64).reshape(4, 6),
    np.arange(40, dtype=np.int32)[::3],  # not contiguous
])
def test_borrowed_is_the_same_memory_without_its_record(x):
    want_sum = x.sum() - x.flat[0] + 7
    shape, strides, total, owner_record, view_record = _through_borrowed(x, 7)
    assert x.flat[0] == 7  # written through the view: the same memory
    assert shape == x.shape and strides == x.strides and total == want_sum
    assert owner_record != 0  # numpy's array is counted inside numba...
    assert view_record == 0  # ...its borrowed view is not
