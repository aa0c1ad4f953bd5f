"""The ``attn_opt`` attention function and mask function registered with transformers'
``AttentionInterface`` / ``AttentionMaskInterface``.

The attention function receives what every transformers attention function receives (query
``[B, Hq, S, D]``, key / value ``[B, Hkv, L, D]`` as the cache's ``update`` returned them, the mask,
``scaling``, ...) and returns ``(out [B, S, Hq, D], None)``:

* after a ``QattnCache`` update (a paged cache): one query token reads the pages with the paged
  decode kernel of its format (through the shared block table); a prompt (the cache was empty)
  runs the causal bf16 prefill kernel on the prompt's own K/V (its rows were appended to the pages
  by the update); several query tokens after a bf16 prefix (chunked prefill) gather the prefix's
  pages into a contiguous copy and run the prefill kernel over it — correct, not fast (a copy of
  the whole prefix per layer and call); several query tokens after an int8 / fp8 prefix raise
  ``UnsupportedError``;
* with any other cache (or none): key / value are the whole bf16 sequence; they are copied into the
  kernels' layout and attended with the bf16 prefill (or decode) kernel — correct, not fast.

The mask function returns no mask: it raises ``UnsupportedError`` for padding (any False in the 2-D
attention mask), packed sequences, sliding windows and other mask functions, which the kernels
cannot express. Queries of a model not in bfloat16, dropout, gradients, a scaling other than
head_dim ** -0.5, softcapping, sinks and non-causal attention raise as well.
"""

from __future__ import annotations

import torch
from transformers.masking_utils import causal_mask_function

from .cache import UnsupportedError, reference_attention, take_pending
from .kernels import GpuKernels

NAME = "attn_opt"
HEAD_DIMS = (64, 128, 256)
_stateless = {}


def attn_opt_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0,
                  mask_function=causal_mask_function, attention_mask=None, local_size=None,
                  **kwargs):
    """transformers' mask interface: None (the kernels are causal, bottom-right aligned) or an
    UnsupportedError for anything else."""
    if mask_function is not causal_mask_function or local_size is not None:
        raise UnsupportedError("attn_opt: only the plain causal mask is supported (no sliding "
                               "window, packed sequences, bidirectional or custom mask functions)")
    if attention_mask is not None:
        if attention_mask.dim() != 2:
            raise UnsupportedError(f"attn_opt: a {attention_mask.dim()}-D attention mask is not "
                                   "supported (only a 2-D padding mask without padding)")
        if not bool(attention_mask.all()):
            raise UnsupportedError("attn_opt: padded batches are not supported yet (the kernels "
                                   "take per-sequence lengths, not masks); run unpadded "
                                   "sequences of one length per batch")
    return None


def _check(module, query, key, attention_mask, dropout, scaling, kwargs):
    b, hq, s, d = query.shape
    hkv = key.shape[1]
    if attention_mask is not None:
        raise UnsupportedError("attn_opt: an explicit attention mask reached the attention "
                               "function (a 4-D mask given by the caller); the kernels are causal "
                               "over per-sequence lengths only")
    if not getattr(module, "is_causal", True) or kwargs.get("is_causal") is False:
        raise UnsupportedError("attn_opt: non-causal attention is not supported")
    if dropout:
        raise UnsupportedError("attn_opt: attention dropout is not supported (inference only)")
    if torch.is_grad_enabled() and query.requires_grad:
        raise UnsupportedError("attn_opt: the kernels have no backward; run under "
                               "torch.inference_mode() or torch.no_grad()")
    if scaling is not None and abs(float(scaling) * d ** 0.5 - 1.0) > 1e-6:
        raise UnsupportedError(f"attn_opt: the kernels scale scores by head_dim ** -0.5, the "
                               f"model asks for {scaling}")
    for name in ("sliding_window", "softcap", "s_aux"):
        if kwargs.get(name) is not None:
            raise UnsupportedError(f"attn_opt: {name} is not supported")
    if hq % hkv:
        raise UnsupportedError(f"attn_opt: {hq} query heads on {hkv} KV heads")


def _check_kernels(query):
    d = query.shape[-1]
    if query.device.type != "cuda":
        raise UnsupportedError(f"attn_opt: the kernels run on CUDA tensors, got {query.device} "
                               "(QattnCache(..., backend='torch') is the CPU reference)")
    if query.dtype != torch.bfloat16:
        raise UnsupportedError(f"attn_opt: the kernels take bfloat16 queries, the model runs in "
                               f"{query.dtype}; load it with dtype=torch.bfloat16")
    if d not in HEAD_DIMS:
        raise UnsupportedError(f"attn_opt: head_dim {d} has no kernels (built: {HEAD_DIMS})")


def _attend_cache(layer, q):
    """q [B, S, Hq, D] after layer.update appended the S new rows to the pages."""
    s = q.shape[1]
    past = layer.length - s
    kernels = layer.backend == "kernels"
    if kernels:
        _check_kernels(q)
        out = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
    if s == 1:
        if kernels:
            return layer.kernels.decode(q, layer.keys, layer.values, layer.k_scale,
                                        layer.v_scale, layer.seq_lens, out, layer.block_table)
        k, v = layer.dequantized()
        return reference_attention(q, k, v, layer.seq_lens)
    if past == 0:
        (k, v), layer.new_rows = layer.new_rows, None
        if kernels:
            return layer.kernels.prefill(q, k, v, layer.seq_lens, out)
        return reference_attention(q, k.float(), v.float(), layer.seq_lens)
    if layer.fmt == "bf16":  # the prefix's pages gathered: a contiguous copy
        if kernels:
            k, v, _, _ = layer.gathered()
            return layer.kernels.prefill(q, k, v, layer.seq_lens, out)
        k, v = layer.dequantized()
        return reference_attention(q, k, v, layer.seq_lens)
    raise UnsupportedError(f"attn_opt: {s} query tokens after {past} cached ones in an "
                           f"{layer.fmt} cache (chunked prefill, assisted decoding) are not "
                           "supported yet; use a bf16 cache or one prompt per prefill")


def _attend_stateless(query, key, value):
    """Any other cache: the whole bf16 K/V of each sequence, copied to [B, L, Hkv, D]."""
    _check_kernels(query)
    b, hq, s, d = query.shape
    hkv = key.shape[1]
    k = key.transpose(1, 2).to(torch.bfloat16).contiguous()
    v = value.transpose(1, 2).to(torch.bfloat16).contiguous()
    q = query.transpose(1, 2).contiguous()
    kern = _stateless.get((hkv, d, query.device))
    if kern is None:  # contiguous (no page size)
        kern = _stateless[(hkv, d, query.device)] = GpuKernels(hkv, d, "bf16", query.device)
    lens = torch.full((b,), k.shape[1], dtype=torch.int32, device=query.device)
    out = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
    if s == 1:
        return kern.decode(q, k, v, None, None, lens, out)
    return kern.prefill(q, k, v, lens, out)


def attn_opt_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                       **kwargs):
    """transformers' attention interface (see the module docstring)."""
    hit = take_pending(key)  # first: a rejected call leaves no hand-off behind
    _check(module, query, key, attention_mask, dropout, scaling, kwargs)
    if hit is None:
        return _attend_stateless(query, key, value), None
    cache, layer = hit
    if query.device != layer.device:
        raise UnsupportedError(f"attn_opt: queries on {query.device}, cache on {layer.device}")
    q = query.transpose(1, 2).contiguous()
    if layer.backend != "kernels":
        q = q.float()
    return _attend_cache(layer, q).to(query.dtype), None
