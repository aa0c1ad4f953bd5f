"""Tests of qattn.spec: building attn.attention specs from keyword arguments."""

import pytest

import qattn
from qattn.spec import scale_shape

MQA_INT8 = dict(batch=16, q_len=3, kv_len=8192, q_heads=16, kv_heads=1, head_dim=128,
                kv_dtype="i8", granularity="per_token_head", mode="half_int8", seq_lens=True)


def test_mqa_int8_decode_compiles_and_packs_heads():
    spec = qattn.attention("decode", **MQA_INT8)
    assert isinstance(spec, qattn.Spec) and spec.name == "attention"
    assert "memref<16x8192x1xf32>" in spec.text  # per_token_head scales [B, S, H]
    assert qattn.compile(spec, passes=()).output
    out = qattn.compile(spec, passes=("attn-normalize", "attn-select-schedule")).output
    assert "pack_q_heads = 16" in out


def test_asymmetric_decode_spec_compiles():
    spec = qattn.attention("decode", batch=None, q_len=2, kv_len=None, q_heads=8, kv_heads=2,
                           head_dim=128, kv_dtype="ui8", granularity="per_token",
                           symmetric=False)
    assert "k_zero(%kz : memref<?x?xui8>)" in spec.text
    assert "#attn.quant<ui8, per_token, asymmetric>" in spec.text
    launch = qattn.compile(spec, emit="ptx").launch
    assert '"zero_points": true' in launch and '"kv_dtype": "ui8"' in launch
    with pytest.raises(ValueError, match="integer codes"):
        qattn.attention("decode", batch=1, q_len=1, kv_len=8, q_heads=1, kv_heads=1,
                        head_dim=64, kv_dtype="f8E4M3FN", granularity="per_token",
                        symmetric=False)


def test_sinks_and_lse_operands():
    spec = qattn.attention("decode", **MQA_INT8, sinks=True, lse=True)
    assert "sinks(%sinks : memref<16xf32>)" in spec.text
    assert "outs(%o : memref<16x3x16x128xbf16>) lse(%lse : memref<16x3x16xf32>)" in spec.text
    assert qattn.compile(spec, passes=()).output
    plain = qattn.attention("decode", **MQA_INT8)
    assert "sinks" not in plain.text and "lse" not in plain.text
    for flag in ("sinks", "lse"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False"):
            qattn.attention("decode", **MQA_INT8, **{flag: 1})


def test_softcap_attribute():
    spec = qattn.attention("decode", **MQA_INT8, softcap=30)
    assert "softcap = 30.0 : f32" in spec.text
    assert qattn.compile(spec, passes=()).output
    for bad in (0, -1.0, float("inf"), True, "30"):
        with pytest.raises(ValueError, match="softcap must be a positive finite number"):
            qattn.attention("decode", **MQA_INT8, softcap=bad)


def test_sinks_and_lse_are_decode_features():
    spec = qattn.attention("prefill", batch=2, q_len=64, kv_len=128, q_heads=8, kv_heads=2,
                           head_dim=128, sinks=True)
    with pytest.raises(qattn.CompileError, match="sinks is implemented for decode only"):
        qattn.compile(spec, passes=())


def test_gqa_head_mismatch_is_compile_error():
    spec = qattn.attention("decode", batch=2, q_len=1, kv_len=1024, q_heads=6, kv_heads=4,
                           head_dim=128)
    with pytest.raises(qattn.CompileError) as info:
        qattn.compile(spec)
    errors = info.value.errors
    assert errors, info.value.stderr
    assert any(d.line is not None and "not a multiple" in d.message for d in errors)
    assert "not a multiple" in str(info.value)


@pytest.mark.parametrize("granularity,shape", [
    ("per_tensor", [1]),
    ("per_token", [2, 100]),
    ("per_head", [4]),
    ("per_token_head", [2, 100, 4]),
    ("per_group<64>", [2, 100, 4, 2]),
    ("per_block<1x128>", [2, 100, 4, 1]),
    ("per_block<64x96>", [2, 2, 4, 2]),
    ("per_channel", [4, 128]),
])
def test_scale_shapes(granularity, shape):
    assert scale_shape(granularity, [2, 100, 4, 128]) == shape


def test_dynamic_extents():
    assert scale_shape("per_block<128x128>", [None, None, 4, 128]) == [None, None, 4, 1]
    spec = qattn.attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=16, kv_heads=1,
                           head_dim=128, q_dtype="i8", kv_dtype="i8", granularity="per_token",
                           causal=True)
    assert "memref<?x?x16x128xi8>" in spec.text and "q_scale(%qs : memref<?x?xf32>)" in spec.text
    assert "@attention" in qattn.compile(spec).output


@pytest.mark.parametrize("granularity", ["per_tensor", "per_token", "per_token_head",
                                         "per_group<64>", "per_block<1x128>", "per_channel"])
def test_granularities_verify(granularity):
    spec = qattn.attention("decode", batch=4, q_len=1, kv_len=4096, q_heads=32, kv_heads=8,
                           head_dim=128, kv_dtype="f8E4M3FN", granularity=granularity)
    qattn.compile(spec, passes=())


def test_schedule_alibi_and_fp8_prefill():
    spec = qattn.attention("prefill", batch=4, q_len=4096, kv_len=4096, q_heads=16, kv_heads=16,
                           head_dim=128, q_dtype="f8E4M3FN", kv_dtype="f8E4M3FN",
                           granularity="per_block<128x128>", alibi=True, name="prefill_fp8",
                           schedule={"stages": 2, "pingpong": True, "cluster": [1, 1, 1]})
    assert "alibi(%slopes : memref<16xf32>)" in spec.text
    out = qattn.compile(spec).output
    assert "@prefill_fp8" in out and "#attn.mode<fp8>" in out and "pingpong = true" in out


def test_v_granularity_half_int8_prefill():
    # half_int8 with per_token_head K and one V scale per head: V's scale goes into O's rescale.
    spec = qattn.attention("prefill", batch=None, q_len=None, kv_len=None, q_heads=16,
                           kv_heads=1, head_dim=128, q_dtype="i8", kv_dtype="i8",
                           granularity="per_token_head", v_granularity="per_head",
                           name="pf_vh")
    assert "k_scale(%ks : memref<?x?x1xf32>)" in spec.text
    assert "v_scale(%vs : memref<1xf32>)" in spec.text
    assert "v_quant = #attn.quant<i8, per_head>" in spec.text
    launch = qattn.compile(spec, emit="ptx").launch
    assert '"k_quant": "per_token_head"' in launch and '"v_quant": "per_head"' in launch
    with pytest.raises(ValueError, match="v_granularity given"):
        qattn.attention("decode", batch=1, q_len=1, kv_len=8, q_heads=1, kv_heads=1,
                        head_dim=64, v_granularity="per_head")


def test_split_kv_auto():
    spec = qattn.attention(**{**MQA_INT8, "schedule": {"pack_q_heads": 16, "split_kv": "auto"}})
    assert "split_kv = auto" in spec.text
    assert "pack_q_heads = 16" in qattn.compile(spec, passes=()).output


@pytest.mark.parametrize("bad", [
    dict(kv_dtype="int8"), dict(q_dtype="fp8"), dict(granularity="per_row"),
    dict(granularity="per_group<0>"), dict(kind="encode"), dict(mode="int4"),
    dict(target="sm_80"), dict(head_dim=-1), dict(batch="16"), dict(name="1bad name"),
])
def test_type_level_nonsense_is_value_error(bad):
    kwargs = dict(kind="decode", batch=1, q_len=1, kv_len=16, q_heads=4, kv_heads=4,
                  head_dim=64, kv_dtype="i8")
    kwargs.update(bad)
    with pytest.raises(ValueError):
        qattn.attention(**kwargs)
