"""Byte-level BPE tokenizer read from a GGUF file (``tokenizer.ggml.model = gpt2``).

GGUF stores the vocabulary (``tokenizer.ggml.tokens``, strings in GPT-2's byte-to-unicode alphabet)
and the merge list (``tokenizer.ggml.merges``, "a b" in priority order). Encoding is: split the text
with the pre-tokenizer regex of ``tokenizer.ggml.pre``, map each piece's UTF-8 bytes to the
byte-level alphabet, then repeatedly merge the adjacent pair with the lowest merge rank — exactly
llama.cpp's ``llm_tokenizer_bpe``. Only the pre-tokenizers whose regex is written down here are
accepted; any other raises ``ValueError`` instead of tokenizing differently from the model.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Sequence

import regex

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), applied in sequence: each regex splits the
# pieces the previous one produced. "smollm" = starcoder's: single digits, then GPT-2's pattern.
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
PRE_TOKENIZERS: Dict[str, Sequence[str]] = {
    "smollm": (r"\p{N}", _GPT2),
    "starcoder": (r"\p{N}", _GPT2),
    "gpt2": (_GPT2,),
}


def _bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's reversible map of the 256 byte values to printable unicode characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


_BYTE_TO_UNICODE = _bytes_to_unicode()
_UNICODE_TO_BYTE = {c: b for b, c in _BYTE_TO_UNICODE.items()}


def _split(text: str, patterns: Sequence[str]) -> List[str]:
    """Split like llama.cpp's unicode_regex_split: matches and the gaps between them are pieces."""
    pieces = [text]
    for pat in patterns:
        compiled = regex.compile(pat)
        out: List[str] = []
        for piece in pieces:
            pos = 0
            for m in compiled.finditer(piece):
                if m.start() > pos:
                    out.append(piece[pos:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                pos = m.end()
            if pos < len(piece):
                out.append(piece[pos:])
        pieces = out
    return pieces


class BPETokenizer:
    """Encode/decode with a GGUF byte-level BPE vocabulary."""

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], pre: str,
                 bos_id: int = -1, eos_id: int = -1):
        if pre not in PRE_TOKENIZERS:
            raise ValueError(f"pre-tokenizer {pre!r} is not implemented (known: "
                             f"{', '.join(sorted(PRE_TOKENIZERS))})")
        self.tokens = list(tokens)
        self.vocab = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {}
        for i, m in enumerate(merges):
            a, b = m.split(" ", 1)
            self.ranks[(a, b)] = i
        self.patterns = PRE_TOKENIZERS[pre]
        self.bos_id = bos_id
        self.eos_id = eos_id
        self._bpe = lru_cache(maxsize=1 << 16)(self._bpe_uncached)

    def _bpe_uncached(self, word: str) -> tuple:
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = -1, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best < 0:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        ids = []
        for p in parts:
            if p in self.vocab:
                ids.append(self.vocab[p])
            else:  # not reachable with a consistent vocabulary: fall back to single bytes
                ids.extend(self.vocab[c] for c in p)
        return tuple(ids)

    def encode(self, text: str) -> List[int]:
        ids: List[int] = []
        for piece in _split(text, self.patterns):
            word = "".join(_BYTE_TO_UNICODE[b] for b in piece.encode("utf-8"))
            ids.extend(self._bpe(word))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        data = bytearray()
        for i in ids:
            tok = self.tokens[int(i)]
            if all(c in _UNICODE_TO_BYTE for c in tok):
                data.extend(_UNICODE_TO_BYTE[c] for c in tok)
            else:  # special tokens such as <|im_start|> are stored verbatim
                data.extend(tok.encode("utf-8"))
        return data.decode("utf-8", errors="replace")
