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


def test_grids_resolve_through_the_launch_abi_table():
    from qattn.gpu import GpuError, resolve_grid

    combine = {"name": "f_combine", "grid": ["row_blocks", "groups", "batch"]}
    assert resolve_grid(combine, {"rows": 130, "groups": 2, "batch": 16}) == (33, 2, 16)
    prefill = {"name": "f", "grid": ["persistent_ctas", 1, 1]}
    inputs = {"sms": 132, "q_len": 1000, "q_chunk": 64, "groups": 2, "batch": 3}
    assert resolve_grid(prefill, inputs) == (96, 1, 1)  # min(132, ceil(1000 / 64) * 2 * 3)
    quantize = {"name": "q", "grid": ["quantize_ctas", 1, 1]}
    assert resolve_grid(quantize, {"batch": 3, "new_tokens": 5, "groups_per_token": 8,
                                   "groups_per_cta": 16}) == (8, 1, 1)  # ceil(120 / 16)
    with pytest.raises(GpuError, match="'row_blocks' needs the launch input 'rows'"):
        resolve_grid(combine, {"groups": 2, "batch": 16})
    with pytest.raises(GpuError, match="unknown grid symbol 'row' "):
        resolve_grid({"name": "k", "grid": ["row", 1, 1]}, {"rows": 4})
    with pytest.raises(GpuError, match=r"grid extent 2 \('batch'\) = 70000 is outside 1..65535"):
        resolve_grid(combine, {"rows": 4, "groups": 1, "batch": 70000})


def test_kernel_arguments_bind_by_the_launch_abi_table():
    from qattn.gpu import GpuError, kernel_args
    from qattn.kernels import KernelArgumentError
    from qattn.launch_abi import PARAMS

    keep = []
    meta = {"name": "f", "params": ["k_map", "q", "num_splits"]}
    argv = kernel_args(meta, {"k_map": 0x1000, "q": 0xABC0, "num_splits": 3, "out": 5}, keep)
    assert argv[0] == 0x1000  # a tensor map: the descriptor's own address
    assert ctypes.c_uint64.from_address(argv[1]).value == 0xABC0
    assert ctypes.c_int32.from_address(argv[2]).value == 3
    assert PARAMS["num_splits"][0] == "int32" and PARAMS["k_map"][0] == "tensor_map"
    with pytest.raises(GpuError, match="'q_sacle' is not in the launch ABI table"):
        kernel_args({"name": "f", "params": ["q_sacle"]}, {"q": 1}, [])
    with pytest.raises(GpuError, match=r"'v_map' \(tiled map over the V cache\) is not supplied"):
        kernel_args({"name": "f", "params": ["v_map"]}, {"k_map": 1}, [])
    with pytest.raises(KernelArgumentError, match="f: batch = -1 is outside"):
        kernel_args({"name": "f", "params": ["batch"]}, {"batch": -1}, [])
