"""Strict argument types in the Python API: flags are bools, extents positive ints, dtypes known
names, static scales finite and positive; bad input raises a ValueError / TypeError naming the
argument (never a KeyError, a ZeroDivisionError or a NumPy error), and an attn-opt crash is
reported as a crash, with its signal, the spec's path and attn-opt's stderr."""

import os
import stat
from pathlib import Path

import numpy as np
import pytest

import qattn
from qattn import quant
from qattn.compiler import CompileError
from qattn.cpu import attend

DECODE = dict(batch=2, q_len=1, kv_len=64, q_heads=4, kv_heads=1, head_dim=64)


@pytest.mark.parametrize("flag", ["causal", "alibi", "seq_lens", "symmetric", "hadamard"])
@pytest.mark.parametrize("value", ["false", "true", 0, 1, None])
def test_attention_flags_are_bools(flag, value):
    with pytest.raises(TypeError, match=f"{flag} must be True or False"):
        qattn.attention("decode", **DECODE, **{flag: value})


def test_seq_lens_false_string_does_not_turn_the_feature_on():
    assert "seq_lens" not in qattn.attention("decode", **DECODE, seq_lens=False).text
    assert "seq_lens" in qattn.attention("decode", **DECODE, seq_lens=True).text


@pytest.mark.parametrize("kwargs, match", [
    (dict(heads=0), "heads must be a positive int"),
    (dict(head_dim=True), "head_dim must be a positive int"),
    (dict(batch=2**63), "batch must be a positive int"),
    (dict(dtype="int8"), "unknown dtype 'int8'; expected one of i8, ui8, f8E4M3FN"),
    (dict(granularity=3), "granularity must be a granularity string"),
    (dict(granularity="per_group<0>"), "unknown granularity"),
    (dict(symmetric="false"), "symmetric must be True or False"),
])
def test_quantize_spec_arguments(kwargs, match):
    args = dict(batch=2, tokens=1, heads=2, head_dim=64, capacity=8)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        qattn.quantize("append", **args)


@pytest.mark.parametrize("kwargs, match", [
    (dict(quant_tile=0), "quant_tile must be a positive int"),
    (dict(head_dim_v="512"), "head_dim_v must be a positive int"),
    (dict(rope_dim=-1), "rope_dim must be a non-negative int"),
    (dict(softmax_scale=float("nan")), "softmax_scale must be None or a positive finite"),
    (dict(sparse="no"), "sparse must be True or False"),
    (dict(crossover=1), "crossover must be True or False"),
])
def test_mla_spec_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        qattn.spec.mla_decode(batch=1, sq=1, heads=64, kv_len=128, topk=64, **kwargs)


X = np.linspace(-2, 2, 2 * 2 * 16, dtype=np.float32).reshape(2, 2, 16)


@pytest.mark.parametrize("dtype", ["int8", "I8", "fp8", "f8E4M3FN", "u8", None])
def test_misspelt_dtype_is_refused(dtype):
    with pytest.raises(ValueError, match=r"unknown dtype .*; expected one of i8, e4m3"):
        quant.quantize(X, dtype, "per_tensor", np.array([0.1], np.float32))


@pytest.mark.parametrize("bad", [0.0, float("nan"), -0.5, float("inf"), 1e-45])
def test_static_scales_must_be_finite_and_positive(bad):
    with pytest.raises(ValueError, match="scales must be finite and positive"):
        quant.quantize(X, "i8", "per_head", np.array([0.1, bad], np.float32))
    with pytest.raises(ValueError, match="scales must be finite and positive"):
        quant.quantize_asym(X, "u8", "per_tensor", np.array([bad], np.float32),
                            np.array([3], np.uint8))


def test_static_zero_points_in_code_range():
    with pytest.raises(ValueError, match=r"zeros must be integers in \[0, 255\]"):
        quant.quantize_asym(X, "u8", "per_tensor", np.array([0.1], np.float32), np.array([300]))
    codes, s, z = quant.quantize_asym(X, "u8", "per_tensor", np.array([0.02], np.float32),
                                      np.array([128], np.uint8))
    assert z.dtype == np.uint8 and z[0] == 128 and codes.max() == 228


@pytest.mark.parametrize("x", [[["a"]], None, "1.5", [[[1.0, "2"]]], np.ones((1, 1, 2), bool),
                               np.ones((1, 1, 2), complex)])
def test_non_numeric_input_is_a_value_error(x):
    """Strings, None, booleans and complex values are refused, not converted to numbers."""
    with pytest.raises(ValueError, match="x must be an array of numbers"):
        quant.quantize(x, "i8", "per_tensor")
    if x is not None:  # scales=None: dynamic scales
        with pytest.raises(ValueError, match="scales must be an array of numbers"):
            quant.quantize(X, "i8", "per_tensor", scales=x)


def test_non_numeric_granularity_is_a_value_error():
    with pytest.raises(ValueError, match="granularity must be a string"):
        quant.quantize(X, "i8", None)


def test_compile_options_are_checked():
    with pytest.raises(ValueError, match="timeout must be None or a positive number"):
        qattn.compile("module {}", timeout="10")
    with pytest.raises(TypeError, match="passes must be a pass name or a list"):
        qattn.compile("module {}", passes=[1])
    with pytest.raises(ValueError, match="target must be None or a target name"):
        qattn.compile("module {}", target="avx2; rm")
    with pytest.raises(TypeError, match="cache must be True or False"):
        qattn.build("module {}", cache="no")


def fake_attn_opt(tmp_path, signal_name):
    """An attn-opt that prints its version, or writes to stderr and dies of `signal_name`."""
    exe = tmp_path / "attn-opt"
    exe.write_text("#!/bin/sh\n"
                   'if [ "$1" = --version ]; then echo "attn-opt 0.0.0"; exit 0; fi\n'
                   "cat >/dev/null\n"
                   'echo "Stack dump: frame 0 somewhere" >&2\n'
                   f"kill -{signal_name} $$\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_crash_names_signal_spec_and_stderr(tmp_path):
    exe = fake_attn_opt(tmp_path, "SEGV")
    spec = qattn.quantize("dynamic", batch=1, tokens=1, heads=2, head_dim=64, target="avx2")
    with pytest.raises(CompileError) as info:
        qattn.compile(spec, emit="obj", attn_opt=exe)
    msg = str(info.value)
    assert "attn-opt crashed (SIGSEGV)" in msg and "Stack dump: frame 0" in msg
    assert "exit status" not in msg
    path = msg.split("on the spec ", 1)[1].split(";", 1)[0]
    assert Path(path).read_text() == spec.text
    os.unlink(path)
    # A spec given as a path is named as it is.
    own = tmp_path / "spec.mlir"
    own.write_text(spec.text)
    with pytest.raises(CompileError, match=f"crashed \\(SIGABRT\\) on the spec {own}"):
        qattn.compile(own, emit="obj", attn_opt=fake_attn_opt(tmp_path, "ABRT"))


def test_unreadable_spec_path(tmp_path):
    with pytest.raises(qattn.QattnError, match="cannot read the spec"):
        qattn.compile(tmp_path / "missing.mlir")


def test_nomad_attend_checks_shapes_before_building():
    q = np.zeros((4, 64), np.float32)
    kv = np.zeros((10, 0, 64), np.float32)
    with pytest.raises(ValueError, match="need H, S, dsub >= 1"):
        attend(q, np.zeros((0, 32, 16, 2), np.float32), kv, kv)
    kv = np.zeros((10, 2, 64), np.float32)
    with pytest.raises(ValueError, match="positive multiple of the codebooks' 2 heads"):
        attend(np.zeros((3, 64), np.float32), np.zeros((2, 32, 16, 2), np.float32), kv, kv)
    with pytest.raises(ValueError, match=r"length must be None or an int in \[0, 10\]"):
        attend(q, np.zeros((2, 32, 16, 2), np.float32), kv, kv, length=11)
    with pytest.raises(ValueError, match="keys must be an array of numbers"):
        attend(q, np.zeros((2, 32, 16, 2), np.float32), [["x"]], kv)


def test_mla_token_format_arguments():
    from qattn import mla
    assert mla.token_bytes() == 656
    for kwargs in (dict(tile=0), dict(dv=500), dict(rope=-1), dict(dv=True), dict(tile="128")):
        with pytest.raises(ValueError, match="the FP8 token format needs ints"):
            mla.token_bytes(**kwargs)
    with pytest.raises(ValueError, match="the FP8 token format needs ints"):
        mla.pack_fp8(np.zeros((2, 100), np.float32))  # fewer values than Dv = 512
    with pytest.raises(ValueError, match="last axis of 656 bytes"):
        mla.unpack_fp8(np.zeros((2, 600), np.uint8))
    packed = mla.pack_fp8(np.ones((2, 576), np.float32))
    assert packed.shape == (2, 656) and np.allclose(mla.unpack_fp8(packed), 1.0)


def test_nomad_spec_arguments():
    from qattn.cpu import nomad_spec
    assert "attn.pq.attention" in nomad_spec(4, 2, 64, 2, "avx2")
    for args, match in (((4, 0, 64, 2, "avx2"), "kv_heads must be a positive int"),
                        ((4, 2, 64, 0, "avx2"), "dsub must be a positive int"),
                        ((4, 2, 64, 2.0, "avx2"), "dsub must be a positive int"),
                        ((4, 2, 64, 2, "sse"), "unknown isa 'sse'")):
        with pytest.raises(ValueError, match=match):
            nomad_spec(*args)
