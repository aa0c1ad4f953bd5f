"""Guarded buffers and raw kernel calls, for tests that check CPU kernels never address outside
their buffers.

``Guarded(shape, dtype)`` is an array that ends exactly where an inaccessible page (PROT_NONE)
begins and starts after a canary zone of a known pattern, itself preceded by an inaccessible page:
a read or write past the end, or far before the start, faults at once; a write just before the
start changes the canary, which ``intact()`` reports. ``raw_call`` calls a kernel's C interface
directly with hand-made memref descriptors (any extents, strides, offset or pointer), bypassing the
Python wrapper's checks, so that the kernel's own prologue is what is tested.
"""

import ctypes
import mmap

import numpy as np

from qattn.kernels import _desc_type

PAGE = mmap.PAGESIZE
PATTERN = 0xA5
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class Guarded:
    """A C-contiguous array of ``shape`` and ``dtype`` between a canary zone and a fence page."""

    def __init__(self, shape, dtype, rng=None):
        dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        body = max(-(-self.nbytes // PAGE), 1) * PAGE
        self._map = mmap.mmap(-1, body + 2 * PAGE)
        raw = np.frombuffer(self._map, np.uint8)
        raw[:] = PATTERN
        for at in (0, PAGE + body):
            if _libc.mprotect(ctypes.c_void_p(raw.ctypes.data + at), PAGE, 0):  # PROT_NONE
                raise OSError(ctypes.get_errno(), "mprotect failed")
        self.start = PAGE + body - self.nbytes
        self._canary = raw[PAGE:self.start]
        payload = raw[self.start:self.start + self.nbytes]
        if rng is not None and self.nbytes:
            payload[:] = rng.integers(0, 256, self.nbytes, dtype=np.uint8)
            if dtype.kind == "f":  # finite values: the kernels read them
                payload.view(dtype)[:] = rng.standard_normal(self.nbytes // dtype.itemsize)
        self.array = payload.view(dtype).reshape(shape)

    def intact(self) -> bool:
        return bool((self._canary == PATTERN).all())


def descriptor(array, sizes=None, strides=None, offset=0, pointer=None):
    """A memref descriptor of ``array`` (its shape and row-major strides unless given)."""
    sizes = list(array.shape if sizes is None else sizes)
    if strides is None:
        strides, step = [0] * len(sizes), 1
        for d in range(len(sizes) - 1, -1, -1):
            strides[d], step = step, step * max(sizes[d], 0)
    desc = _desc_type(len(sizes))()
    ptr = array.ctypes.data if pointer is None else pointer
    desc.allocated = desc.aligned = ptr
    desc.offset = offset
    for d, (n, s) in enumerate(zip(sizes, strides)):
        desc.sizes[d], desc.strides[d] = n, s
    return desc


def raw_call(fn, values, descriptors=None):
    """The kernel's status when called through its C interface with ``values`` (arrays and ints);
    ``descriptors`` {argument index: descriptor} replace the ones made from the arrays."""
    descriptors = descriptors or {}
    args = []
    for a, v in zip(fn.args, values):
        if not a.is_buffer:
            args.append(ctypes.c_int64(v))
            continue
        desc = descriptors.get(a.index) or descriptor(v)
        args.append(ctypes.byref(desc))
    return fn._fn(*args)
