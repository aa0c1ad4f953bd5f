"""attn-opt's kernels in Hugging Face transformers (5.x), through its public attention-function
registration and a cache class of ours.

::

    import torch, qattn.hf
    from transformers import AutoModelForCausalLM

    qattn.hf.register()                    # AttentionInterface / AttentionMaskInterface "attn_opt"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16,
                                                 attn_implementation="attn_opt").cuda()
    out = qattn.hf.generate(model, input_ids, cache="int8", max_new_tokens=64)

or, on a model already loaded: ``qattn.hf.enable(model, cache="fp8")`` then
``qattn.hf.generate(model, input_ids)``, or ``qattn.hf.enable(model)`` and ``model.generate(input_ids,
past_key_values=qattn.hf.QattnCache(model.config, max_cache_len=N, cache="fp8"))``. The cache
is paged (vLLM's / FlashInfer's layout: pools of pages and a block table; ``page_size=``, default
64).

What runs where, and what raises ``UnsupportedError``: ``qattn.hf.attention`` and
``qattn.hf.cache``. Kernels come from ``$QATTN_HF_KERNELS`` (``python -m qattn.hf prebuild``), the
package's ahead-of-time set or attn-opt (``qattn.hf.kernels``); the paged decode kernels are
compiled per page size and block-table width, so ``prebuild`` takes the page size and the cache
sizes it must cover.
"""

from __future__ import annotations

from .attention import NAME, attn_opt_attention, attn_opt_mask
from .cache import QattnCache, UnsupportedError
from .kernels import DEFAULT_PAGE_SIZE, cache_format, prebuild

ATTN_IMPLEMENTATION = NAME


def register():
    """Registers ``attn_opt`` with transformers' attention and mask interfaces (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface
    AttentionInterface.register(NAME, attn_opt_attention)
    AttentionMaskInterface.register(NAME, attn_opt_mask)
    return NAME


def enable(model, cache=None):
    """Registers ``attn_opt`` and switches ``model`` (any architecture whose attention goes
    through transformers' AttentionInterface, e.g. LlamaForCausalLM) to it; ``cache`` ("int8",
    "fp8", "bf16") sets the format ``qattn.hf.generate`` uses for it by default. Returns the
    model."""
    register()
    if cache is not None:
        cache_format(cache)  # ValueError on an unknown name
        model.qattn_cache_format = cache
    model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        raise UnsupportedError(f"{type(model).__name__} cannot switch its attention "
                               "implementation (it does not use transformers' AttentionInterface)")
    return model


def generate(model, input_ids, *, cache=None, max_new_tokens=32, backend="auto",
             page_size=DEFAULT_PAGE_SIZE, **kwargs):
    """``model.generate`` with a fresh paged ``QattnCache`` (pages of ``page_size`` tokens)
    sized for the prompt plus ``max_new_tokens`` (the model is switched to attn_opt first).
    ``cache``: the format, else the one given to ``enable``, else "int8". Greedy unless kwargs
    say otherwise; returns what ``generate`` returns."""
    if model.config._attn_implementation != NAME:
        enable(model)
    if cache is None:
        cache = getattr(model, "qattn_cache_format", "int8")
    kwargs.setdefault("do_sample", False)
    past = QattnCache(model.config, max_cache_len=int(input_ids.shape[1]) + int(max_new_tokens),
                      cache=cache, backend=backend, page_size=page_size)
    return model.generate(input_ids, past_key_values=past, max_new_tokens=max_new_tokens,
                          **kwargs)


__all__ = ["ATTN_IMPLEMENTATION", "QattnCache", "UnsupportedError", "attn_opt_attention",
           "attn_opt_mask", "cache_format", "enable", "generate", "prebuild", "register"]
