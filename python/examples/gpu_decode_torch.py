"""int8 KV-cache decode on an H100 from torch: compile a spec, quantize a cache, launch.

Run on a machine with attn-opt and a Hopper GPU (or load PTX built elsewhere with
qattn.GpuDecodeKernel.from_files):  ATTN_OPT=build/bin/attn-opt python python/examples/gpu_decode_torch.py
"""
import math

import torch

import qattn

B, SQ, HQ, HKV, D, S = 8, 3, 16, 1, 128, 4096
spec = qattn.attention("decode", batch=None, q_len=SQ, kv_len=None, q_heads=HQ, kv_heads=HKV,
                       head_dim=D, kv_dtype="i8", granularity="per_token_head", seq_lens=True)
kernel = qattn.build(spec)  # PTX + launch metadata, cached in ~/.cache/qattn
print(kernel)

q = torch.randn(B, SQ, HQ, D, device="cuda").to(torch.bfloat16)
k, v = (torch.randn(B, S, HKV, D, device="cuda") for _ in range(2))
k_scale = k.abs().amax(-1) / 127  # per_token_head: [B, S, HKV]
v_scale = v.abs().amax(-1) / 127
k8 = torch.round(k / k_scale[..., None]).to(torch.int8)
v8 = torch.round(v / v_scale[..., None]).to(torch.int8)
lens = torch.full((B,), S, dtype=torch.int32, device="cuda")

out = kernel(q, k8, v8, k_scale, v_scale, seq_lens=lens)  # current stream

ref = torch.softmax(torch.einsum("bqhd,bskd->bhqs", q.float(), k8.float() * k_scale[..., None])
                    / math.sqrt(D), dim=-1)
ref = torch.einsum("bhqs,bskd->bqhd", ref, v8.float() * v_scale[..., None])
print("relative error vs the fp32 reference:", float((out.float() - ref).norm() / ref.norm()))
