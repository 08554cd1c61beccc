"""Arrays whose references are not counted, for kernels called once per row of a layer.

Numba counts the references to an array's memory with an atomic add and subtract
(``NRT_incref``/``NRT_decref``) wherever it cannot prove them pointless, and a kernel
whose arrays live across loops and calls keeps them: the fully connected layers'
block kernel (:mod:`sim.num.mac_fc`), called once per kernel of the layer, spent 70% of
a 64-lane call and 15% of a 4096-lane one in them (about 20 atomic pairs a call, each
near 10 ns on the AMD EPYC measured; threads sharing the data's counts make them
dearer).  An array without its memory's record (``meminfo`` null, as numba's own views
of foreign memory have) is counted by nothing: each count is a test of a null pointer.
Such an array must not outlive the array it borrows from, which its caller holds.
"""

from __future__ import annotations

from sim.jit import intrinsic


@intrinsic
def borrowed(typingctx, array):
    """``array`` itself (the same data, shape and strides), its references not counted:
    only for use while the caller holds ``array`` (never stored, nor returned)."""
    from numba.core import cgutils, types

    def codegen(context, builder, sig, args):
        view = context.make_array(sig.args[0])(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    if not isinstance(array, types.Array):
        return None
    return array(array), codegen
