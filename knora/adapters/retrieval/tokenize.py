"""One tokeniser for both sides of keyword search, shared by every engine.

Engines index *pre-tokenised* text (tokens joined by single spaces) and tokenise queries with the same
function, so FTS5 (``ascii`` tokenizer) and PostgreSQL (``'simple'`` lexemes) never apply their own,
language-blind rules: Han/kana runs are cut by jieba in search mode (overlapping sub-words improve recall),
letter/digit runs are lower-cased and Snowball-stemmed, each emoji or pictograph is a token of its own, and
everything else (whitespace, punctuation, other symbols) is a separator and never a token — which is why a
query with a space cannot match every row. Text is NFKC-normalised first, so a decomposed ``Ü`` matches a
composed one and a PDF's ``ﬁ`` ligature or full-width ``ＡＰＩ`` matches what a user types (documents indexed
before this rule keep their old tokens for such characters until re-parsed).
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import snowballstemmer

# Han (incl. ext. A and compatibility ideographs), Hiragana, Katakana: handed to jieba.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Emoji and pictographs (incl. regional indicators, skin tones) and the dingbat/misc-symbol blocks: one token
# per code point, so a document with 😀 is found by 😀. Joiners and variation selectors stay separators.
_PICTO = "\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
_RUN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)|([{_PICTO}])")

ENGLISH_STOPWORDS = frozenset(
    ["a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does",
     "did", "will", "would", "could", "should", "may", "might", "must", "can", "to", "of", "in", "for", "on",
     "with", "at", "by", "from", "as", "into", "through", "about", "what", "how", "why", "when", "where",
     "which", "who", "whom", "whose", "and", "or", "not", "it", "its", "this", "that", "these", "those"]
)
CHINESE_STOPWORDS = frozenset(["的", "是", "在", "了", "和", "与", "或"])

_jieba_lock = threading.Lock()
_jieba_ready = False
_jieba_cache_dir: Path | None = None
_stem_local = threading.local()


def configure(cache_dir: Path | None) -> None:
    """Where jieba keeps its dictionary cache (the data dir); call before the first tokenisation."""
    global _jieba_cache_dir
    _jieba_cache_dir = cache_dir


def _jieba() -> ModuleType:
    """Initialise jieba once, quietly (it logs to stderr and writes a cache file into the temp dir by
    default)."""
    global _jieba_ready
    import jieba

    module: ModuleType = jieba
    if _jieba_ready:
        return module
    with _jieba_lock:
        if not _jieba_ready:
            jieba.setLogLevel(logging.WARNING)
            logging.getLogger("jieba").setLevel(logging.WARNING)
            cache_dir = _jieba_cache_dir or Path(tempfile.gettempdir())
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                jieba.dt.tmp_dir = str(cache_dir)
            except OSError:
                jieba.dt.tmp_dir = tempfile.gettempdir()
            jieba.dt.initialize()
            _jieba_ready = True
    return module


def _stemmer() -> snowballstemmer.stemmer:
    # Snowball stemmers keep state between calls; one per thread is safe. snowballstemmer hands out
    # PyStemmer's C implementation when it is installed (a dependency): the pure-Python one is ~50x slower at
    # indexing time.
    st = getattr(_stem_local, "stemmer", None)
    if st is None:
        st = snowballstemmer.stemmer("english")
        _stem_local.stemmer = st
    return st


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not word.isascii() or word.isdigit() or len(word) < 3:
        return word
    return str(_stemmer().stemWord(word))


def _is_token(tok: str) -> bool:
    return any(ch.isalnum() for ch in tok)


def tokenize(text: str, *, drop_stopwords: bool = False, stem: bool = True) -> list[str]:
    """Tokens of ``text`` in order (duplicates kept, so term frequency survives into the index)."""
    out: list[str] = []
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    for m in _RUN.finditer(text):
        cjk, word, picto = m.group(1), m.group(2), m.group(3)
        if picto:
            out.append(picto)
        elif cjk:
            for tok in _jieba().cut_for_search(cjk, HMM=True):
                tok = tok.strip()
                if tok and _is_token(tok) and not (drop_stopwords and tok in CHINESE_STOPWORDS):
                    out.append(tok)
        else:
            low = word.lower()
            if drop_stopwords and low in ENGLISH_STOPWORDS:
                continue
            out.append(_stem(low) if stem else low)
    return out


def index_text(text: str) -> str:
    """The text an engine stores for keyword search: tokens joined by single spaces."""
    return " ".join(tokenize(text))


def query_terms(text: str, *, limit: int = 64) -> list[str]:
    """Distinct query tokens (first-seen order), stopwords dropped unless that would leave nothing.

    Capped at ``limit`` terms: a 100 kB query must not turn into a 20 000-clause MATCH expression.
    """
    terms = tokenize(text, drop_stopwords=True) or tokenize(text)
    seen: dict[str, None] = {}
    for t in terms:
        seen.setdefault(t, None)
        if len(seen) >= limit:
            break
    return list(seen)


def fts5_match(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression with every term quoted (so no term is read as an operator), OR-ed for recall.

    Returns "" when there are no terms; callers must then return no hits instead of running MATCH.
    """
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t]
    return " OR ".join(quoted)


def tsquery(terms: Iterable[str]) -> str:
    """A PostgreSQL tsquery literal: quoted lexemes OR-ed; "" when there are none."""
    parts = []
    for t in terms:
        if t:
            parts.append("'" + t.replace("\\", "\\\\").replace("'", "''") + "'")
    return " | ".join(parts)


def tsvector_literal(text: str) -> str:
    """A tsvector literal with positions, so ``ts_rank`` sees term frequency and PostgreSQL never re-parses
    tokens.

    Positions are 1-based and capped at 16383 (PostgreSQL's limit); lexemes longer than 2 kB are dropped.
    """
    return tsvector_from_tokens(tokenize(text))


def tsvector_from_tokens(tokens: Iterable[str]) -> str:
    """``tsvector_literal`` of text already tokenised (``tokenize``)."""
    positions: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens, start=1):
        if len(tok.encode()) >= 2046:
            continue
        lst = positions.setdefault(tok, [])
        if len(lst) < 256:  # PostgreSQL keeps at most 256 positions per lexeme
            lst.append(min(i, 16383))
    parts = []
    for tok, pos in positions.items():
        lex = "'" + tok.replace("\\", "\\\\").replace("'", "''") + "'"
        parts.append(lex + ":" + ",".join(str(p) for p in sorted(set(pos))))
    return " ".join(parts)
