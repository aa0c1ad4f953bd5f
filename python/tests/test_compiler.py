"""Tests of qattn.compiler: running attn-opt, surfacing its diagnostics, locating the binary."""

import pytest

import qattn
from conftest import EXAMPLES


def test_examples_exist(repo_root):
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_round_trips(path):
    result = qattn.compile(path.read_text(), passes=())
    assert isinstance(result.output, str)
    assert "func.func @" in result.output
    # The printed module parses again and prints identically.
    assert qattn.compile(result.output, passes=()).output == result.output


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_default_pipeline(path):
    out = qattn.compile(path.read_text()).output
    assert "target = #attn.target<" in out


def test_spec_from_path(repo_root):
    result = qattn.compile(repo_root / "examples" / "decode_int8_mqa.mlir", passes=())
    assert "@decode_int8_mqa" in result.output
    assert result.command[0].endswith("attn-opt")


def test_emit_ptx_decode(repo_root):
    # sm_90a decode lowers to a real PTX module with WGMMA and TMA.
    text = (repo_root / "examples" / "decode_int8_mqa.mlir").read_text()
    ptx = qattn.compile(text, emit="ptx").output
    assert ".target sm_90a" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ptx
    assert "cp.async.bulk.tensor.4d" in ptx


# fp8 prefill at head_dim 256: valid attn, but no lowering (fp8 takes head_dim 64 or 128).
FP8_D256 = """func.func @fp8_d256(%q: memref<1x256x8x256xf8E4M3FN>, %k: memref<1x256x8x256xf8E4M3FN>,
                   %v: memref<1x256x8x256xf8E4M3FN>, %qs: memref<1x256x8xf32>,
                   %ks: memref<1x256x8xf32>, %vs: memref<8xf32>, %o: memref<1x256x8x256xbf16>) {
  attn.attention prefill ins(%q, %k, %v : memref<1x256x8x256xf8E4M3FN>, memref<1x256x8x256xf8E4M3FN>, memref<1x256x8x256xf8E4M3FN>)
      q_scale(%qs : memref<1x256x8xf32>) k_scale(%ks : memref<1x256x8xf32>) v_scale(%vs : memref<8xf32>)
      outs(%o : memref<1x256x8x256xbf16>)
      {q_quant = #attn.quant<f8E4M3FN, per_token_head>, k_quant = #attn.quant<f8E4M3FN, per_token_head>,
       v_quant = #attn.quant<f8E4M3FN, per_head>, target = #attn.target<sm_90a>}
  return
}
"""


def test_emit_ptx_not_supported():
    with pytest.raises(qattn.CompileError) as info:
        qattn.compile(FP8_D256, emit="ptx")
    err = info.value
    assert "not supported yet" in str(err)
    assert any("not supported yet" in d.message and "head_dim 256" in d.message and d.line == 4
               for d in err.errors)
    assert err.returncode == 1 and "not supported yet" in err.stderr


@pytest.mark.parametrize("emit,kind", [("cubin", bytes), ("obj", bytes), ("header", str)])
def test_other_emits_never_fake_output(repo_root, emit, kind):
    # Either a real artifact of the right type, or a CompileError with attn-opt's errors.
    text = (repo_root / "examples" / "prefill_fp8_per_block.mlir").read_text()
    try:
        result = qattn.compile(text, emit=emit)
    except qattn.CompileError as err:
        assert err.errors and err.returncode != 0
    else:
        assert isinstance(result.output, kind) and len(result.output) > 0


def test_unknown_emit_is_value_error():
    with pytest.raises(ValueError):
        qattn.compile("func.func @f() { return }", emit="llvm")


def test_parse_error_has_location():
    with pytest.raises(qattn.CompileError) as info:
        qattn.compile("func.func @f(\n  %x: memref<4xf32> {\n  return\n}\n", passes=())
    (first, *_) = info.value.errors
    assert first.severity == "error" and first.line is not None and first.column is not None


def test_bad_pass_name_is_compile_error():
    with pytest.raises(qattn.CompileError) as info:
        qattn.compile("func.func @f() { return }", passes=("no-such-pass",))
    assert info.value.diagnostics and "no-such-pass" in str(info.value)


def test_target_option_sets_default_target():
    spec = qattn.attention(batch=1, q_len=1, kv_len=64, q_heads=4, kv_heads=4, head_dim=64,
                           target=None)
    out = qattn.compile(spec, passes=("attn-normalize",), target="sm_90a").output
    assert "#attn.target<sm_90a>" in out
    assert any(a == "--attn-normalize=target=sm_90a"
               for a in qattn.compile(spec, passes=(), target="sm_90a").command)


def test_missing_binary_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_OPT", str(tmp_path / "does-not-exist" / "attn-opt"))
    with pytest.raises(qattn.AttnOptNotFound) as info:
        qattn.find_attn_opt()
    assert isinstance(info.value, qattn.QattnError)
    assert "ATTN_OPT" in str(info.value)
    with pytest.raises(qattn.AttnOptNotFound):
        qattn.compile("func.func @f() { return }")
    with pytest.raises(qattn.AttnOptNotFound):
        qattn.version()


def test_missing_binary_explicit(tmp_path):
    with pytest.raises(qattn.AttnOptNotFound):
        qattn.compile("func.func @f() { return }", attn_opt=tmp_path / "nope")


def test_version():
    v = qattn.version()
    assert v.startswith("attn-opt")
    assert "0.1.0" in v


def test_parse_diagnostics_without_location():
    diags = qattn.parse_diagnostics("attn-opt: Unknown command line argument '--x'.\n")
    assert diags == [qattn.Diagnostic("error", None, None,
                                      "attn-opt: Unknown command line argument '--x'.")]
    diags = qattn.parse_diagnostics("<stdin>:3:5: warning: hm\n  foo\n    ^\n")
    assert diags == [qattn.Diagnostic("warning", 3, 5, "hm")]
