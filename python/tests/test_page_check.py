"""The block-table check of paged launches (a debug mode): used entries outside the pool and
lengths past the table, found on the device and reported with their sequence, block and entry.

On any machine with torch: the check itself on CPU tensors, in torch (qattn.paged) and in C++
(torch.ops.attn_opt.check_block_table, where the extension is built), the report and the modes.
On a GPU: DecodePlan(check_pages=...) and GpuDecodeKernel(check_pages=...) over the paged kernels
of tests/paged_cases.py — kernels from ``qattn.build`` or prebuilt into ``$QATTN_GPU_KERNELS`` by
``python python/tests/test_gpu_paged.py --prebuild DIR`` (this file needs no others).
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import qattn  # noqa: E402
from qattn import paged  # noqa: E402

torch = pytest.importorskip("torch")
from qattn import torch_ops  # noqa: E402
from qattn.paged import BlockTableError, PageErrors  # noqa: E402

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")
needs_extension = pytest.mark.skipif(not torch_ops.HAS_EXTENSION,
                                     reason="the torch extension is not built")


def table_with(lens, page, pages, blocks, pad=-1, seed=0):
    """A block table of shuffled pages for the lengths, unused entries set to ``pad``."""
    table, _ = paged.allocate(lens, page, num_pages=pages, max_blocks=blocks, seed=seed, pad=pad)
    return torch.from_numpy(table)


def check_both(table, lens, page, pages, state=None):
    """(the torch check's state, the C++ op's state, or None without the extension)."""
    s = paged.check_block_table(table, lens, page, pages,
                                None if state is None else state.clone())
    if not torch_ops.HAS_EXTENSION:
        return s, None
    return s, torch_ops.check_block_table(table, lens, page, pages,
                                          None if state is None else state.clone())


# --- any machine with torch ------------------------------------------------------------------

@pytest.mark.parametrize("pad", [-1, 2 ** 31 - 1, 1 << 20, 40])
def test_unused_entries_are_not_reported(pad):
    lens = torch.tensor([37, 0, 16, 1], dtype=torch.int32)
    table = table_with(lens.tolist(), 16, 40, 8, pad=pad)
    assert (table == pad).sum() > 0  # padding is there, past each sequence's pages
    for state in check_both(table, lens, 16, 40):
        if state is not None:
            assert not PageErrors.from_state(state.tolist())
            assert state.tolist() == paged.new_page_state().tolist()


@pytest.mark.parametrize("entry", [40, -1, 1 << 20, 2 ** 31 - 1])
def test_a_used_entry_outside_the_pool_is_reported(entry):
    lens = torch.tensor([37, 0, 16, 50], dtype=torch.int32)
    table = table_with(lens.tolist(), 16, 40, 8, pad=-1)
    table[3, 2] = entry  # sequence 3 uses blocks 0..3
    table[0, 2] = entry  # sequence 0 uses blocks 0..2: the first offender
    for state in check_both(table, lens, 16, 40):
        if state is not None:
            errors = PageErrors.from_state(state.tolist())
            assert errors and errors.bad_entries == 2 and errors.bad_lengths == 0
            assert errors.entry == (0, 2, entry, 40)
            assert errors.length is None


def test_without_seq_lens_every_entry_is_used():
    table = torch.zeros(2, 3, dtype=torch.int32)
    table[1, 2] = 7
    for state in check_both(table, None, 16, 7):
        if state is not None:
            assert PageErrors.from_state(state.tolist()).entry == (1, 2, 7, 7)


def test_lengths_past_the_table_are_reported():
    table = torch.zeros(3, 4, dtype=torch.int32)  # capacity 4 · 16 = 64
    lens = torch.tensor([64, 65, -3], dtype=torch.int32)
    for state in check_both(table, lens, 16, 1):
        if state is not None:
            errors = PageErrors.from_state(state.tolist())
            assert errors.bad_lengths == 2 and errors.length == (1, 65, 64)
            assert errors.bad_entries == 0
            assert "seq_lens[1] = 65" in errors.message()


def test_the_first_offender_is_kept_and_counts_add_up():
    lens = torch.tensor([32, 32], dtype=torch.int32)
    first = torch.tensor([[0, 9], [1, 2]], dtype=torch.int32)
    second = torch.tensor([[5, 0], [1, 2]], dtype=torch.int32)
    for check in (paged.check_block_table,
                  torch_ops.check_block_table if torch_ops.HAS_EXTENSION else None):
        if check is None:
            continue
        state = check(first, lens, 16, 4)
        check(second, lens, 16, 4, state)
        check(second, lens, 16, 6, state)  # a larger pool: 5 is inside it
        errors = PageErrors.from_state(state.tolist())
        assert errors.bad_entries == 2
        assert errors.entry == (0, 1, 9, 4)


@needs_extension
@pytest.mark.parametrize("seed", range(6))
def test_cpp_check_equals_the_torch_check(seed):
    g = torch.Generator().manual_seed(seed)
    b, blocks, page, pages = 1 + seed, 1 + 3 * seed, 2 ** (seed % 5), 5 + seed
    table = torch.randint(-3, pages + 3, (b, blocks), generator=g, dtype=torch.int32)
    lens = torch.randint(-2, blocks * page + 3, (b,), generator=g, dtype=torch.int32)
    state = paged.new_page_state()
    for _ in range(2):
        ours, cpp = check_both(table, lens if seed % 2 else None, page, pages, state)
        assert ours.tolist() == cpp.tolist()
        state = ours
        table = torch.randint(-3, pages + 3, (b, blocks), generator=g, dtype=torch.int32)


@needs_extension
def test_cpp_check_refuses_bad_arguments():
    table = torch.zeros(2, 3, dtype=torch.int32)
    state = paged.new_page_state()
    with pytest.raises(qattn.KernelArgumentError, match="block_table must be int32"):
        torch_ops.check_block_table(table.long(), None, 16, 4, state)
    with pytest.raises(qattn.KernelArgumentError, match="seq_lens must be int32 \\[2\\]"):
        torch_ops.check_block_table(table, torch.zeros(3, dtype=torch.int32), 16, 4, state)
    with pytest.raises(qattn.KernelArgumentError, match="state must be a contiguous int64"):
        torch_ops.check_block_table(table, None, 16, 4, state[:5])
    with pytest.raises(qattn.KernelArgumentError, match="page_size must be >= 1"):
        torch_ops.check_block_table(table, None, 0, 4, state)


def test_check_block_table_has_a_fake():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        table = torch.zeros(2, 3, dtype=torch.int32)
        state = torch.zeros(paged.PAGE_STATE_SIZE, dtype=torch.int64)
        torch_ops.ops.check_block_table(table, None, 16, 4, state)
        with pytest.raises(qattn.KernelArgumentError, match="state"):
            torch_ops.ops.check_block_table(table, None, 16, 4, state[:3])


def test_the_error_names_sequence_block_entry_and_pool():
    none = paged.NO_OFFENDER
    errors = PageErrors.from_state([3, 2 * 8 + 5, 1 << 20, 40, 8, 0, none, 0, 0,
                                    0, none, 0, 0, 0, 0])
    assert errors.entry == (2, 5, 1 << 20, 40)
    err = BlockTableError(errors)
    assert isinstance(err, qattn.QattnError) and isinstance(err, ValueError)
    assert str(err).startswith("block_table[2, 5] = 1048576 (sequence 2, block 5) is outside "
                               "the pool of 40 pages [0, 40); 3 used entries")
    assert not PageErrors.from_state(paged.new_page_state().tolist())
    with pytest.raises(ValueError, match="15 entries"):
        PageErrors.from_state([0])


def cu(values):
    return torch.tensor(values, dtype=torch.int32)


@pytest.mark.parametrize("offsets,first,count", [
    ([0, 40, 41, 41, 64], None, 0),       # well formed, one sequence without rows
    ([0, 40, 30, 50, 64], (1, 40, 30), 1),  # out of order
    ([0, 40, 70, 80, 64], (1, 40, 70), 3),  # past T = 64 (and the next ones start past it)
    ([-2, 40, 41, 41, 64], (0, -2, 40), 1),  # negative
    ([0, 50, 51, 51, 64], (0, 0, 50), 1),   # more rows than max_seqlen_q = 40
])
def test_ragged_offsets_are_checked(offsets, first, count):
    """cu_seqlens_q's sequences must be in order, inside [0, T] and at most max_seqlen_q rows:
    what the kernel would otherwise clamp (a longer sequence cut) is reported, in torch and in
    C++ alike."""
    checks = [paged.check_cu_seqlens]
    if torch_ops.HAS_EXTENSION:
        checks.append(torch_ops.check_cu_seqlens)
    states = []
    for check in checks:
        state = check(cu(offsets), 64, 40)
        errors = PageErrors.from_state(state.tolist())
        assert errors.bad_offsets == count and bool(errors) == (count > 0)
        assert errors.offset == (None if first is None else (*first, 64, 40))
        assert errors.bad_entries == errors.bad_lengths == 0
        states.append(state.tolist())
    assert all(s == states[0] for s in states)
    if first is not None:
        with pytest.raises(BlockTableError, match=rf"cu_seqlens_q\[{first[0]}\], "
                                                  rf"cu_seqlens_q\[{first[0] + 1}\] = "
                                                  rf"{first[1]}, {first[2]} \(sequence"):
            raise BlockTableError(PageErrors.from_state(states[0]))


@needs_extension
def test_ragged_check_keeps_the_first_offender_and_refuses_bad_arguments():
    state = torch_ops.check_cu_seqlens(cu([0, 40, 30, 64]), 64, 40)
    torch_ops.check_cu_seqlens(cu([0, 50, 60, 64]), 64, 40, state)
    errors = PageErrors.from_state(state.tolist())
    assert errors.bad_offsets == 2 and errors.offset == (1, 40, 30, 64, 40)
    with pytest.raises(qattn.KernelArgumentError, match="cu_seqlens_q must be"):
        torch_ops.check_cu_seqlens(cu([0]), 64, 40)
    with pytest.raises(qattn.KernelArgumentError, match="cu_seqlens_q must be a contiguous int32"):
        torch_ops.check_cu_seqlens(cu([0, 4, 8]).long(), 64, 40)
    with pytest.raises(qattn.KernelArgumentError, match="state must be a contiguous int64"):
        torch_ops.check_cu_seqlens(cu([0, 4, 8]), 64, 40, state[:5])
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        torch_ops.ops.check_cu_seqlens(cu([0, 4, 8]), 64, 40,
                                       torch.zeros(paged.PAGE_STATE_SIZE, dtype=torch.int64))


def test_modes(monkeypatch):
    monkeypatch.delenv("QATTN_CHECK_PAGES", raising=False)
    assert paged.check_pages_mode() is None
    assert paged.check_pages_mode(True) == "raise"
    assert paged.check_pages_mode(False) is None
    assert paged.check_pages_mode("record") == "record"
    for env, mode in (("0", None), ("", None), ("1", "raise"), ("record", "record")):
        monkeypatch.setenv("QATTN_CHECK_PAGES", env)
        assert paged.check_pages_mode() == mode
        assert paged.check_pages_mode(False) is None  # an explicit mode wins
    with pytest.raises(ValueError, match="check_pages must be"):
        paged.check_pages_mode("always")


@needs_extension
def test_plan_refuses_check_pages_on_a_contiguous_kernel():
    try:
        kernel = qattn.build(qattn.attention("decode", batch=None, kv_len=None, q_len=1,
                                             q_heads=8, kv_heads=2, head_dim=128, kv_dtype="i8",
                                             granularity="per_token_head", seq_lens=True,
                                             mode="half_int8"))
    except qattn.AttnOptNotFound:
        pytest.skip("attn-opt is not available")
    with pytest.raises(qattn.KernelArgumentError, match="a ragged batch.s cu_seqlens_q, and .* has neither"):
        torch_ops.DecodePlan(kernel, device="cuda:0", batch=1, kv_len=64, check_pages=True)
    with pytest.raises(qattn.KernelArgumentError, match="check_pages must be"):
        torch_ops.DecodePlan(kernel, device="cuda:0", batch=1, kv_len=64, check_pages="often")


# --- GPU ---------------------------------------------------------------------------------------

NAME = "paged_i8_p16"


def gpu_case(lens, seed=0):
    """test_gpu_paged's pools (poisoned unused entries) for NAME, the kernel and a plan maker."""
    import test_gpu_paged as tp
    c = tp.CASES[NAME]
    data = tp.make_pools(c, lens, seed=seed)
    p = data["pools"]
    seq = torch.tensor(lens, dtype=torch.int32, device="cuda")
    args = (data["q"], p["k"], p["v"], p["k_scale"], p["v_scale"])
    kernel = tp.kernel_for(NAME)

    def plan(**kw):
        return torch_ops.DecodePlan(kernel, device="cuda", batch=len(lens),
                                    kv_len=tp.paged_cases.capacity(NAME), **kw)
    return dict(data=data, seq=seq, args=args, kernel=kernel, plan=plan,
                pages=int(p["k"].shape[0]), capacity=tp.paged_cases.capacity(NAME))


gpu = pytest.mark.skipif(not (CUDA and torch_ops.HAS_EXTENSION),
                         reason="needs CUDA and the torch extension")


@gpu
@pytest.mark.parametrize("seed", range(3))  # the unused entries hold -1, 2^31 - 1, 1 << 20
def test_plan_reports_used_entries_outside_the_pool(seed):
    g = gpu_case([200, 37], seed=seed)
    plan = g["plan"](check_pages="record")
    assert plan.check_pages_mode == "record"
    table = g["data"]["table"]
    good = plan.run(*g["args"], seq_lens=g["seq"], block_table=table)
    assert not plan.page_errors()  # the padding past each sequence's pages is not reported
    for entry in (g["pages"], -1, 1 << 20):
        bad = table.clone()
        bad[1, 2] = entry  # sequence 1 reads blocks 0..2
        out = plan.run(*g["args"], seq_lens=g["seq"], block_table=bad)
        torch.cuda.synchronize()
        assert torch.isfinite(out.float()).all() and torch.equal(out[0], good[0])
        errors = plan.page_errors()
        assert errors.bad_entries == 1 and errors.entry == (1, 2, entry, g["pages"])
        with pytest.raises(BlockTableError, match=rf"block_table\[1, 2\] = {entry} \(sequence 1, "
                                                  rf"block 2\) is outside the pool of "
                                                  rf"{g['pages']} pages"):
            plan.check_pages()
        assert not plan.page_errors()  # check_pages reset it


@gpu
def test_raise_mode_raises_at_the_end_of_the_run(monkeypatch):
    g = gpu_case([200, 37])
    monkeypatch.setenv("QATTN_CHECK_PAGES", "1")
    plan = g["plan"]()
    assert plan.check_pages_mode == "raise"
    plan.run(*g["args"], seq_lens=g["seq"], block_table=g["data"]["table"])
    bad = g["data"]["table"].clone()
    bad[0, 12] = -1  # sequence 0 reads blocks 0..12
    with pytest.raises(BlockTableError, match=r"block_table\[0, 12\] = -1"):
        plan.run(*g["args"], seq_lens=g["seq"], block_table=bad)


@gpu
@pytest.mark.parametrize("seed", range(4))
def test_the_check_on_the_device_equals_the_torch_check(seed):
    """torch.ops.attn_opt.check_block_table on CUDA tensors, twice into one state, against
    qattn.paged.check_block_table, with no host synchronization."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    b, blocks, page, pages = 3 + seed, 5 + 7 * seed, 16, 40
    state = paged.new_page_state("cuda")
    ours = state.clone()
    torch.cuda.synchronize()
    for _ in range(2):
        table = torch.randint(-2, pages + 2, (b, blocks), generator=g, device="cuda",
                              dtype=torch.int32)
        lens = torch.randint(-1, blocks * page + 2, (b,), generator=g, device="cuda",
                             dtype=torch.int32)
        table[-1, 0], lens[-1] = pages, 1  # at least one offender
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            torch_ops.check_block_table(table, lens, page, pages, state)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        paged.check_block_table(table, lens, page, pages, ours)
    assert state.tolist() == ours.tolist()
    assert PageErrors.from_state(state.tolist()).bad_entries >= 2


@gpu
def test_no_check_no_report_and_no_sync(monkeypatch):
    monkeypatch.delenv("QATTN_CHECK_PAGES", raising=False)
    g = gpu_case([200, 37])
    plan = g["plan"]()
    assert plan.check_pages_mode is None and list(torch_ops.ops.plan_info(plan.handle))[7] == 0
    bad = g["data"]["table"].clone()
    bad[1, 0] = 1 << 20
    out = torch.empty_like(g["data"]["q"])
    plan.run(*g["args"], seq_lens=g["seq"], block_table=bad, out=out)  # warm: maps encoded
    recording = g["plan"](check_pages="record")
    recording.run(*g["args"], seq_lens=g["seq"], block_table=bad, out=out)
    torch.cuda.synchronize()
    stats = lambda: torch.cuda.memory_stats(out.device)
    before = stats()
    torch.cuda.set_sync_debug_mode("error")
    try:  # neither the plain run nor the recording check synchronizes
        plan.run(*g["args"], seq_lens=g["seq"], block_table=bad, out=out)
        plain = stats()
        recording.run(*g["args"], seq_lens=g["seq"], block_table=bad, out=out)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    # The plain run allocates nothing; the check's scratch is the plan's, and what its reductions
    # take for a moment comes from torch's caching allocator (no new device memory).
    assert plain["allocation.all.allocated"] == before["allocation.all.allocated"]
    assert stats()["segment.all.allocated"] == before["segment.all.allocated"]
    with pytest.raises(qattn.KernelArgumentError, match="made without check_pages"):
        plan.page_errors()
    assert recording.page_errors().bad_entries == 2


@gpu
def test_the_op_checks_through_the_dispatcher_too():
    g = gpu_case([200, 37])
    plan = g["plan"](check_pages="record")
    bad = g["data"]["table"].clone()
    bad[1, 1] = g["pages"] + 1
    q, k, v, ks, vs = g["args"]
    out = torch.empty_like(q)
    torch_ops.ops.decode(plan.handle, q, k, v, ks, vs, None, None, None, g["seq"], None, out,
                         None, bad)
    assert plan.page_errors().entry == (1, 1, g["pages"] + 1, g["pages"])


@gpu
def test_capture_and_replay_with_the_check():
    """A plan in raise mode captured into a CUDA graph: the capture records only; replays with a
    table changed on the device record what they read, and the report raises after them."""
    g = gpu_case([200, 37])
    plan = g["plan"](check_pages=True)
    table, lens = g["data"]["table"].clone(), g["seq"].clone()
    q, *rest = g["args"]
    out = plan.run(q, *rest, seq_lens=lens, block_table=table)  # warm up, good table
    graph_out = torch.empty_like(out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, *rest, seq_lens=lens, block_table=table, out=graph_out)
        with pytest.raises(qattn.GpuError, match="cannot do: read it after the capture"):
            plan.page_errors()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(graph_out, out) and not plan.page_errors()
    table[0, 5] = -1
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    errors = plan.page_errors()
    assert errors.bad_entries == 2 and errors.entry == (0, 5, -1, g["pages"])
    with pytest.raises(BlockTableError, match=r"block_table\[0, 5\] = -1"):
        plan.check_pages()
    table.copy_(g["data"]["table"])
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(graph_out, out) and not plan.page_errors()


@gpu
def test_ctypes_launcher_checks_before_the_launch(monkeypatch):
    g = gpu_case([200, 37])
    monkeypatch.delenv("QATTN_CHECK_PAGES", raising=False)
    kernel, table = g["kernel"], g["data"]["table"]
    want = kernel(*g["args"], seq_lens=g["seq"], block_table=table)
    got = kernel(*g["args"], seq_lens=g["seq"], block_table=table, check_pages=True)
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    bad = table.clone()
    bad[1, 2] = 2 ** 31 - 1
    out = torch.zeros_like(want)
    with pytest.raises(BlockTableError, match=r"block_table\[1, 2\] = 2147483647"):
        kernel(*g["args"], seq_lens=g["seq"], block_table=bad, check_pages=True, out=out)
    assert not out.float().abs().any()  # nothing launched
    monkeypatch.setenv("QATTN_CHECK_PAGES", "1")
    with pytest.raises(BlockTableError):
        kernel(*g["args"], seq_lens=g["seq"], block_table=bad)
    kernel(*g["args"], seq_lens=g["seq"], block_table=bad, check_pages=False)
    with pytest.raises(qattn.KernelArgumentError, match="check_pages must be"):
        kernel(*g["args"], seq_lens=g["seq"], block_table=table, check_pages="often")
