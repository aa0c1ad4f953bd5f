"""The GPU runtime's launch-time checks, which run before the driver is touched (so they are
tested here without a GPU): every extent of a launch configuration is checked alone, so a product
of large extents cannot wrap around into an accepted configuration."""

import ctypes

import pytest

from qattn.gpu import _LaunchConfig, runtime_library



@pytest.fixture(scope="module")
def rt():
    try:
        lib = ctypes.CDLL(runtime_library())
    except Exception as e:  # noqa: BLE001 - not built here
        pytest.skip(f"no libattn_rt.so: {e}")
    lib.attn_rt_launch.restype = ctypes.c_int
    lib.attn_rt_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(_LaunchConfig),
                                   ctypes.c_void_p, ctypes.c_void_p]
    lib.attn_rt_last_error.restype = ctypes.c_char_p
    lib.attn_rt_status_name.restype = ctypes.c_char_p
    return lib


def launch(rt, grid, block, cluster=(1, 1, 1)):
    cfg = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block),
                        (ctypes.c_uint * 3)(*cluster), 0, 0)
    fake_kernel = ctypes.c_void_p(0x1000)  # never dereferenced: the checks come first
    status = rt.attn_rt_launch(fake_kernel, ctypes.byref(cfg), None, None)
    return status, rt.attn_rt_last_error().decode()


@pytest.mark.parametrize("grid, block, cluster, message", [
    ((1, 1, 1), (65536, 65536, 1), (1, 1, 1), "block extent 65536 exceeds 1024"),
    ((1, 1, 1), (1024, 2, 1), (1, 1, 1), "2048 threads per CTA exceed 1024"),
    ((2**31, 1, 1), (128, 1, 1), (1, 1, 1), "grid extent 0 of 2147483648 exceeds"),
    ((1, 65536, 1), (128, 1, 1), (1, 1, 1), "grid extent 1 of 65536 exceeds 65535"),
    ((65536, 65536, 1), (128, 1, 1), (65536, 65536, 1), "exceeds"),
    ((16, 1, 1), (128, 1, 1), (16, 1, 1), "cluster extent 16 exceeds the portable maximum"),
    ((0, 1, 1), (128, 1, 1), (1, 1, 1), "must be >= 1"),
])
def test_launch_configuration_refused(rt, grid, block, cluster, message):
    status, error = launch(rt, grid, block, cluster)
    assert rt.attn_rt_status_name(status).decode() == "invalid-argument"
    assert message in error


def test_int32_launch_scalars_are_not_wrapped():
    from qattn.gpu import int32_arg
    from qattn.kernels import KernelArgumentError

    assert int32_arg("k", "batch", 7).value == 7
    assert int32_arg("k", "kv_len", 2**31 - 1).value == 2**31 - 1
    for bad in (-1, 2**31, 2**64 + 5):
        with pytest.raises(KernelArgumentError, match=f"k: kv_len = {bad} is outside"):
            int32_arg("k", "kv_len", bad)
