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


class SPMTokenizer:
    """SentencePiece-style tokenizer read from a GGUF file (``tokenizer.ggml.model = llama``), as
    llama.cpp's ``llm_tokenizer_spm`` runs it (Gemma's vocabulary):

    1. the text is split at every occurrence of a user-defined token (token type 4 — Gemma's runs of
       newlines, spaces and tabs, and a few HTML tags), longest tokens first, as llama.cpp's
       ``tokenizer_st_partition`` does with ``parse_special = false`` (control tokens such as
       ``<bos>`` in the text stay text);
    2. each remaining piece has its spaces replaced by U+2581 (no space prefix unless the GGUF's
       ``add_space_prefix`` asks for one), is split into UTF-8 characters, and the adjacent pair whose
       concatenation is a token of the highest score (ties: the leftmost) is merged until none is;
    3. a final symbol that is not a token is undone through the merges that formed it, and a single
       character that is not a token becomes its UTF-8 bytes' ``<0xXX>`` tokens.
    """

    USER_DEFINED = 4
    BYTE = 6

    def __init__(self, tokens: Sequence[str], scores: Sequence[float], types: Sequence[int],
                 bos_id: int = -1, eos_id: int = -1, add_space_prefix: bool = False):
        self.tokens = list(tokens)
        self.scores = [float(s) for s in scores]
        self.types = [int(t) for t in types]
        self.vocab = {}
        for i, t in enumerate(self.tokens):
            self.vocab.setdefault(t, i)
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.add_space_prefix = add_space_prefix
        self.user_defined = sorted((t for t, ty in zip(self.tokens, self.types)
                                    if ty == self.USER_DEFINED and t), key=len, reverse=True)
        self.byte_ids = {}
        for i, (t, ty) in enumerate(zip(self.tokens, self.types)):
            if ty == self.BYTE:
                self.byte_ids[int(t[3:5], 16)] = i
        if len(self.byte_ids) != 256:
            raise ValueError(f"SPM vocabulary has {len(self.byte_ids)} byte tokens, not 256")

    def _partition(self, text: str) -> list:
        """[str | int]: raw text pieces and user-defined token ids, in order."""
        frags: list = [text]
        for tok in self.user_defined:
            tid = self.vocab[tok]
            out: list = []
            for f in frags:
                if not isinstance(f, str) or tok not in f:
                    out.append(f)
                    continue
                parts = f.split(tok)
                for j, p in enumerate(parts):
                    if j:
                        out.append(tid)
                    if p:
                        out.append(p)
            frags = out
        return frags

    def _spm(self, text: str, out: List[int]) -> None:
        import heapq
        chars = list(text)
        n = len(chars)
        sym_text = chars[:]  # the text of each live symbol (its first character's slot)
        nxt = list(range(1, n)) + [-1]
        prv = list(range(-1, n - 1))
        heap: list = []
        rev: Dict[str, tuple] = {}

        def bigram(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            s = sym_text[left] + sym_text[right]
            tid = self.vocab.get(s)
            if tid is None:
                return
            heapq.heappush(heap, (-self.scores[tid], left, right, len(s)))
            rev[s] = (sym_text[left], sym_text[right])

        for i in range(1, n):
            bigram(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if not sym_text[left] or not sym_text[right] or \
                    len(sym_text[left]) + len(sym_text[right]) != size or nxt[left] != right:
                continue
            sym_text[left] += sym_text[right]
            sym_text[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            bigram(prv[left], left)
            bigram(left, nxt[left])

        def resegment(s: str) -> None:
            tid = self.vocab.get(s)
            if tid is not None:
                out.append(tid)
            elif s in rev:
                resegment(rev[s][0])
                resegment(rev[s][1])
            else:
                out.extend(self.byte_ids[b] for b in s.encode("utf-8"))

        i = 0 if n else -1
        while i >= 0:
            resegment(sym_text[i])
            i = nxt[i]

    def encode(self, text: str, bos: bool = True) -> List[int]:
        """Token ids of ``text``, with ``<bos>`` first (llama.cpp's add_special) unless bos=False."""
        ids: List[int] = [self.bos_id] if bos and self.bos_id >= 0 else []
        prev_special = True
        for f in self._partition(text):
            if isinstance(f, int):
                ids.append(f)
                prev_special = True
                continue
            if self.add_space_prefix and prev_special:
                f = " " + f
            self._spm(f.replace(" ", "\u2581"), ids)
            prev_special = False
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        data = bytearray()
        for i in ids:
            i = int(i)
            if self.types[i] == self.BYTE:
                data.append(int(self.tokens[i][3:5], 16))
            elif i in (self.bos_id, self.eos_id):
                continue
            else:
                data.extend(self.tokens[i].replace("\u2581", " ").encode("utf-8"))
        return data.decode("utf-8", errors="replace")
