"""What kind of answer a question asks for, and whether a sentence holds one (the extractive answerer).

``question_type`` reads the question word (English and Chinese): who → a person or organisation, when → a
time, how many / how much / 多少 / 几 → a number, where → a place, what is / 是什么 / 什么是 → a definition.
``type_bonus`` is a small score added to a sentence that holds the kind of thing asked for and that the
question does not already name (a number in the question is not an answer to it). Latin script is read with
patterns (capitalised names, years and month names, digits and number words, "in <Place>", "X is …"); Chinese
with jieba's part-of-speech tags (nr person, nt organisation, ns place, m numeral, t time) plus date patterns.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache

TYPE_BONUS = 0.1  # on top of the lexical score (coverage 0–1): decides between sentences that match alike


class QType(Enum):
    PERSON = "person"
    TIME = "time"
    NUMBER = "number"
    PLACE = "place"
    DEFINITION = "definition"


_EN_TYPES: tuple[tuple[QType, re.Pattern[str]], ...] = (
    (QType.TIME, re.compile(r"\bwhen\b|\b(?:what|which|in what|in which)\s+(?:year|years|decade|century|"
                            r"month|day|date|time|period|era)\b|\bhow long ago\b")),
    (QType.NUMBER, re.compile(r"\bhow\s+(?:many|much|long|old|far|big|large|tall|high|deep|wide|often|"
                              r"fast)\b|\bwhat\s+(?:percentage|percent|proportion|number|amount|fraction)\b")),
    (QType.PERSON, re.compile(r"\bwho\b|\bwhom\b|\bwhose\b|\b(?:what|which)\s+(?:person|people|company|"
                              r"organi[sz]ation|group|team|band|university|agency|king|president|author)\b")),
    (QType.PLACE, re.compile(r"\bwhere\b|\b(?:what|which|in what|in which)\s+(?:city|country|state|"
                             r"province|region|place|town|continent|location|area|island|river)\b")),
)
_ZH_TYPES: tuple[tuple[QType, re.Pattern[str]], ...] = (
    (QType.TIME, re.compile(r"何时|什么时候|哪一年|哪年|哪一天|哪天|什么时间|何年|几月|哪个月|哪个世纪|"
                            r"什么年代|哪个朝代|几点")),
    (QType.NUMBER, re.compile(r"多少|几(?!乎)|多长|多大|多久|多高|多远|多重|多深|多宽|百分之")),
    (QType.PERSON, re.compile(r"谁|哪位|什么人|哪个人|哪些人|哪家|哪个(?:公司|组织|机构|团队|球队|国家队|"
                              r"大学|部门)")),
    (QType.PLACE, re.compile(r"哪里|哪儿|在哪|何处|何地|什么地方|哪个(?:国家|城市|省|地区|地方)|哪座|哪国")),
)
_EN_DEFINITION = (
    re.compile(r"^\s*what\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?(?P<x>[^?]+?)\s*\??\s*$"),
    re.compile(r"^\s*what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<x>[^?]+?)\s+(?:mean|stand for)\s*\??\s*$"),
    re.compile(r"^\s*(?:define|definition of)\s+(?:an?\s+|the\s+)?(?P<x>[^?]+?)\s*\??\s*$"),
)
_ZH_DEFINITION = (
    re.compile(r"^(?:请问)?(?P<x>.+?)(?:是什么|是指什么|指什么|是何物|的定义是什么|的含义是什么)[？?。]?$"),
    re.compile(r"^(?:请问)?(?:什么是|何为|何谓)(?P<x>.+?)[？?。]?$"),
)
# A "what is" subject that is a relation, not a term: "what is the name of …", "what is used for …"
_NOT_A_TERM = re.compile(r"\b(?:of|that|which|who|in|for|on|at|by|to|did|does|do|used|called|named)\b")
# "X is a …", "X (…) is the …", "X, …, is one of …", "X refers to …": a definition names what X is.
_EN_COPULA = (r"\s*(?:\([^)]{0,80}\)\s*)?(?:,[^,]{0,80},\s*)?(?:(?:is|are|was|were)\s+(?:also\s+)?"
              r"(?:an?|the|one|any|some|usually|generally|typically|defined as|called|known as)\b|"
              r"refers? to\b|means\b|denotes\b|stands? for\b)")
_ZH_COPULA_RE = r"(?:[（(][^）)]{0,40}[）)])?(?:是|指|即|就是|是指|意为|意思是|为|，?是一)"

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b(?:january|february|march|april|may|june|july|august|"
                   r"september|october|november|december|monday|tuesday|wednesday|thursday|friday|"
                   r"saturday|sunday|century|centuries|decade|bc|bce|ad)\b|\b[0-9]{1,2}(?::[0-9]{2})?\s*"
                   r"(?:a\.m\.|p\.m\.|am\b|pm\b)|\b[0-9]{1,2}:[0-9]{2}\b|\b[0-9]{1,2}(?:st|nd|rd|th)\b")
_ZH_TIME = re.compile(r"[0-9０-９零〇一二三四五六七八九十百千]+\s*(?:年|月|日|号|世纪|年代)|公元|朝|时期|"
                      r"[0-9]{1,2}[:：][0-9]{2}")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                     r"twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|"
                     r"forty|fifty|sixty|seventy|eighty|ninety|hundred|hundreds|thousand|thousands|million|"
                     r"millions|billion|billions|dozen|dozens|half|twice|double|triple|single)\b")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
_PLACE = re.compile(r"\b(?:in|at|near|from|to|into|across|throughout|outside|inside|of|between|on)\s+"
                    r"(?:the\s+)?(?P<p>[A-Z][a-z]+)|\b(?:city|country|state|province|river|mountain|island|region|"
                    r"county|capital|continent|located|situated|headquartered|border|coast|north|south|east|"
                    r"west|northern|southern|eastern|western)\b")
_ZH_PLACE = re.compile(r"位于|坐落|地处|[省市县州区镇村国岛洲河山湖]")
_LATIN_WORD = re.compile(r"[a-z0-9]+")


def question_type(query: str) -> QType | None:
    q = query.strip().lower()
    for qtype, pattern in (*_EN_TYPES, *_ZH_TYPES):
        if pattern.search(q):
            return qtype
    if definition_subject(query) is not None:
        return QType.DEFINITION
    return None


def definition_subject(query: str) -> str | None:
    """The term a "what is X?" / "X是什么？" question asks to define, or None."""
    q = query.strip()
    for pattern in _ZH_DEFINITION:
        m = pattern.match(q)
        if m and 0 < len(m.group("x").strip()) <= 20:
            return m.group("x").strip()
    low = q.lower()
    for pattern in _EN_DEFINITION:
        m = pattern.match(low)
        if m:
            x = m.group("x").strip()
            if 0 < len(x.split()) <= 4 and not _NOT_A_TERM.search(x):
                return x
    return None


@lru_cache(maxsize=4096)
def _zh_tags(text: str) -> tuple[tuple[str, str], ...]:
    import jieba.posseg

    return tuple((p.word, p.flag) for p in jieba.posseg.cut(text))


def _zh_has(query: str, sentence: str, flags: tuple[str, ...]) -> bool:
    """A word tagged with one of ``flags`` that the question does not contain (names of one character are
    mostly mis-tags; numerals of one character are numerals)."""
    return any(flag.startswith(flags) and (len(word) > 1 or flag == "m") and word not in query
               for word, flag in _zh_tags(sentence))


def _new_number(query: str, sentence: str) -> bool:
    asked = set(_NUMBER.findall(query.lower()))
    return any(n not in asked for n in _NUMBER.findall(sentence.lower()))


def _defines(subject: str, sentence: str) -> bool:
    if re.search(r"[\u3400-\u9fff]", subject):
        return re.search(re.escape(subject) + _ZH_COPULA_RE, sentence) is not None
    low = sentence.lower()
    return re.search(r"\b" + re.escape(subject) + r"s?\b" + _EN_COPULA, low) is not None


def holds_answer(qtype: QType, query: str, sentence: str) -> bool:
    """Does ``sentence`` hold something of the kind ``qtype`` asks for (and the question does not name)?"""
    zh = bool(re.search(r"[\u3400-\u9fff]", sentence))
    q_low = query.lower()
    if qtype is QType.TIME:
        return bool(_YEAR.search(sentence.lower()) or (zh and (_ZH_TIME.search(sentence)
                                                                or _zh_has(query, sentence, ("t",)))))
    if qtype is QType.NUMBER:
        return _new_number(query, sentence) or (zh and _zh_has(query, sentence, ("m",)))
    if qtype is QType.PERSON:
        q_words = set(_LATIN_WORD.findall(q_low))
        if any(m.group(0).lower() not in q_words for m in _NAME.finditer(sentence)):
            return True
        return zh and _zh_has(query, sentence, ("nr", "nt"))
    if qtype is QType.PLACE:
        q_words = set(_LATIN_WORD.findall(q_low))
        for m in _PLACE.finditer(sentence):
            if m.group("p") is None or m.group("p").lower() not in q_words:
                return True
        return zh and (_zh_has(query, sentence, ("ns",)) or bool(_ZH_PLACE.search(sentence)))
    subject = definition_subject(query)
    return subject is not None and _defines(subject, sentence)


def type_bonus(query: str, sentence: str, qtype: QType | None = None) -> float:
    """``TYPE_BONUS`` when the sentence holds the kind of answer the question asks for, else 0."""
    kind = qtype if qtype is not None else question_type(query)
    return TYPE_BONUS if kind is not None and holds_answer(kind, query, sentence) else 0.0
