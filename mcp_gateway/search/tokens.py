"""The one tokenizer of tool documents and queries, and the one home of its weights.

tantivy's own analyzers know neither camelCase nor snake_case names, CJK text nor German
compounds, so the words are made here and tantivy only splits them on whitespace. What
is done, each measured on MetaTool and Gorilla APIBench (bench/search_quality.py): NFKC;
runs of letters and digits, split at camelCase and letter/digit boundaries, the joined name
kept too (`getCurrentTime` -> getcurrenttime, get, current, time; a dotted or slashed API
name such as `torch.hub.load` is runs of its own); lowercase; Snowball's English stopword
list and a small German one; Snowball English stemming; CJK runs as single characters
plus character bigrams (no dictionary needed); in a field of their own with a low boost,
5-character grams of long words, so that `Wetter` finds `wettervorhersage`; and, in a third
field, each pair of neighbouring words of a text (stopwords left out, so "objects in
images" pairs `object` with `imag`), a phrase's evidence that single words do not carry.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import Stemmer

# A document repeats each part's words this many times (one weighted field: tantivy's BM25
# over it ranks better than per-field boosts, search-spike's measurements).
NAME_WEIGHT = 3
TITLE_WEIGHT = 2
TEXT_WEIGHT = 1  # description, parameters, the server's and toolbox's names and descriptions
# The grams' field's boost against the words' (0.05-0.2 measured alike; 0.3 hurt MetaTool).
GRAMS_BOOST = 0.1
GRAM_SIZE = 5
# A document's word gets grams from this length (compounds); a query's from GRAM_SIZE on.
GRAM_MIN_WORD = 8
# The pairs' field's boost: Gorilla recall@5 40.2 -> 41.7 with it (0.2: 41.3, 1.0: 41.7 with
# MetaTool's MRR down; pairs two words apart or in either order measured alike), MetaTool
# unchanged (its descriptions are a sentence or two).
PAIRS_BOOST = 0.5

# Words too common in requests to a tool to tell tools apart: Snowball's English list (its
# words without an apostrophe: the tokenizer splits there), words of asking for a tool, then
# German. Snowball's full list against the short one before it: Gorilla recall@5 39.0 -> 40.2,
# MetaTool alike (bench/results/issue33.md).
_STOPWORDS_TEXT = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing would should
could ought cannot a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off
over under again further then once here there when where why how all any both each few more
most other some such no nor not only own same so than too very
can will want need please use using get find like
der die das und oder ein eine einen ist sind mit für von zu im den dem des wie ich mir mein bitte
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_RUN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
_BOUNDARY = re.compile(
    r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])"
)
_RUNS_CACHED = 200_000  # distinct runs (words and names) remembered; a vocabulary's size


@dataclass(frozen=True)
class Tokens:
    """A text's words (for the weighted field), grams (for the low-boost one) and pairs of
    neighbouring words (`current_time`; a name's joined form and CJK text make none)."""

    words: tuple[str, ...]
    grams: tuple[str, ...]
    pairs: tuple[str, ...] = ()


def tokens(text: str, *, query: bool = False) -> Tokens:
    """A document part's tokens, or a query's (no joined names, grams of shorter words)."""
    words: list[str] = []
    grams: list[str] = []
    pairs: list[str] = []
    last = ""  # the previous word of the text, for a pair; a CJK run breaks the chain
    for run in _RUN.findall(unicodedata.normalize("NFKC", text)):
        run_words, run_grams, chain, run_pairs = _run_tokens(run, query)
        words.extend(run_words)
        grams.extend(run_grams)
        if chain:
            if last and last != chain[0]:
                pairs.append(f"{last}_{chain[0]}")
            pairs.extend(run_pairs)
            last = chain[-1]
        elif run_words:
            last = ""
    return Tokens(tuple(words), tuple(grams), tuple(pairs))


@lru_cache(maxsize=_RUNS_CACHED)
def _run_tokens(
    run: str, query: bool
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A run's words, grams, its words in order for the pairs (no joined name), and the
    pairs within it (`getCurrentTime`: current_time)."""
    if _IS_CJK.match(run):
        bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
        return (*run, *bigrams), (), (), ()
    words: list[str] = []
    grams: list[str] = []
    chain: list[str] = []
    parts = _BOUNDARY.sub(" ", run).split()
    if len(parts) > 1 and not query:
        words.append(_stem(run.lower()))  # the joined name: a query may spell it as one
    shortest = GRAM_SIZE if query else GRAM_MIN_WORD
    for part in parts:
        word = part.lower()
        if word in STOPWORDS:
            continue
        stem = _stem(word)
        words.append(stem)
        chain.append(stem)
        if len(word) >= shortest:
            grams.extend(word[i : i + GRAM_SIZE] for i in range(len(word) - GRAM_SIZE + 1))
    inner = tuple(f"{a}_{b}" for a, b in pairwise(chain) if a != b)
    return tuple(words), tuple(grams), tuple(chain), inner


_STEMMER = Stemmer.Stemmer("english")


def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))
