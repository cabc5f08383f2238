"""Schema-driven HTTP fuzzing over the app's own ``/openapi.json`` (issue 20, item 3).

Used by ``tests/api/test_fuzz.py`` (a bounded run in the suite) and ``benchmarks/fuzz.py`` (a larger run that
prints counts). Every operation of the OpenAPI document is a target; a case is the operation, its path and
query parameters (ids that exist, random UUIDs, junk) and a body that is either valid-ish (generated from the
operation's request schema by ``from_schema``) or hostile: nested 65 to 100,000 levels deep, a list
or scalar where an object belongs, wrong types or huge strings in the schema's fields, ``NaN``, bytes that
are not UTF-8, truncated JSON. Bodies go to every POST/PUT/PATCH/DELETE, documented or not: a hostile body
is hostile to a route that ignores bodies too.

The oracle (``verdict``): no 5xx, and every 4xx is the envelope (``success: false`` and an ``error`` object
with an integer ``code`` and a ``message``); under ``/v1``, OpenAI's error shape instead.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

_METHODS_WITH_BODY = ("post", "put", "patch", "delete")
# Turn-starting routes get only ids that name nothing: their body checks run first, and a real turn would
# call a model.
_NO_REAL_IDS = ("/knowledge-chat/", "/agent-chat/")


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    body_schema: dict[str, Any] | None

    @property
    def route(self) -> str:
        return f"{self.method.upper()} {self.path}"


@dataclass
class Case:
    op: Operation
    url: str
    params: dict[str, str]
    content: bytes | None
    content_type: str | None

    def __repr__(self) -> str:  # hypothesis prints failing cases; a 100,000-deep body stays short
        return self.describe()

    def describe(self) -> str:
        body = (self.content or b"")[:120]
        return f"{self.op.route} url={self.url} params={self.params} body={body!r}..."


@dataclass
class Tally:
    """Counts of a fuzz run: cases, 5xx, non-envelope errors, by route."""

    cases: int = 0
    server_errors: int = 0
    non_envelope: int = 0
    by_route: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, case: Case, problem: str | None, status: int) -> None:
        self.cases += 1
        row = self.by_route.setdefault(case.op.route, {"cases": 0, "5xx": 0, "non_envelope": 0})
        row["cases"] += 1
        if problem is None:
            return
        if status >= 500:
            self.server_errors += 1
            row["5xx"] += 1
        else:
            self.non_envelope += 1
            row["non_envelope"] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{problem}: {case.describe()}")


def _resolve(node: Any, components: dict[str, Any], depth: int = 0) -> Any:
    """The schema with local ``$ref``s inlined (recursion cut at a few levels: deep bodies come from the
    hostile strategies)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            if depth > 4:
                return {}
            return _resolve(components.get(ref.rsplit("/", 1)[1], {}), components, depth + 1)
        return {k: _resolve(v, components, depth) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, components, depth) for v in node]
    return node


def operations(openapi: dict[str, Any]) -> list[Operation]:
    """Every operation of the OpenAPI document, with its JSON request schema (refs inlined) if it has one."""
    components = openapi.get("components", {}).get("schemas", {})
    ops: list[Operation] = []
    for path, methods in sorted(openapi["paths"].items()):
        for method, spec in methods.items():
            params = spec.get("parameters", [])
            content = spec.get("requestBody", {}).get("content", {}).get("application/json", {})
            schema = _resolve(content["schema"], components) if "schema" in content else None
            ops.append(Operation(method, path, tuple(p["name"] for p in params if p["in"] == "path"),
                                 tuple(p["name"] for p in params if p["in"] == "query"), schema))
    return ops


def _nested(depth: int, opener: str) -> bytes:
    if opener == "[":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


_WRONG: st.SearchStrategy[Any] = st.one_of(
    st.just([]), st.just(["x", 1]), st.just({}), st.just({"x": [1]}), st.integers(), st.booleans(), st.none(),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20), st.just("x" * 200_000),
    st.just([[[[[[[["deep"]]]]]]]]), st.just(-1), st.just(2**70),
    st.just("\ud800 lone surrogate"))

_HOSTILE_RAW: st.SearchStrategy[bytes] = st.one_of(
    st.builds(_nested, st.sampled_from([65, 1_000, 100_000]), st.sampled_from(["[", "{"])),
    st.sampled_from([b"[]", b"[1,2]", b'"text"', b"42", b"null", b"true", b'{"a":NaN}', b"NaN",
                     b'{"a":Infinity}', b"\xff\xfe\x00{", b'{"a":', b"{oops", b"\xef\xbb\xbf{}",
                     b'{"a":"\\ud800"}', b'{"a":1,"a":[2]}', b" ", b"{}" * 1000]),
    st.binary(max_size=64),
)

_JUNK_IDS = ("x", "0", "-1", "../../etc/passwd", "%00", "a" * 300, "00000000-0000-0000-0000-000000000000",
             "1e9999", "😀", " ")


def _dump(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def _field_mutations(schema: dict[str, Any] | None) -> st.SearchStrategy[bytes]:
    """An object whose schema fields (or config-ish keys) hold wrong types, huge strings or deep nesting."""
    props = sorted((schema or {}).get("properties", {})) or ["name", "query", "message_id", "config"]
    keys = st.sampled_from([*props, "system_prompt", "model_id", "knowledge_bases", "refreshToken",
                            "password"])
    config = st.builds(lambda d: {"system_prompt": d, "model_id": d, "temperature": d}, _WRONG)
    wrong = st.one_of(_WRONG, config)
    return st.dictionaries(keys, wrong, min_size=1, max_size=4).map(_dump)


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of a JSON schema, for the subset pydantic emits (type, anyOf, enum, properties, items).

    ``hypothesis-jsonschema`` would do this, but its latest release (0.23.1) fails with the current
    hypothesis (``'many' object has no attribute 'more'``)."""
    if depth > 5:
        return st.none()
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return st.one_of([from_schema(s, depth + 1) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, depth + 1) for k in kind])
    if kind == "string":
        return st.text(max_size=40)
    if kind == "integer":
        return st.integers(-(2**40), 2**40)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), depth + 1), max_size=4)
    props = schema.get("properties")
    if kind == "object" or props:
        fixed = {k: from_schema(v, depth + 1) for k, v in (props or {}).items()}
        if fixed:
            return st.fixed_dictionaries({}, optional=fixed)
        values = st.one_of(st.none(), st.text(max_size=10), st.integers())
        return st.dictionaries(st.text(max_size=10), values, max_size=3)
    return st.one_of(st.none(), st.text(max_size=10), st.integers(), st.booleans())


def _valid_ish(schema: dict[str, Any] | None) -> st.SearchStrategy[bytes]:
    return from_schema(schema).map(_dump) if schema else st.just(b"{}")


def _body(op: Operation) -> st.SearchStrategy[bytes | None]:
    if op.method not in _METHODS_WITH_BODY:
        return st.one_of(st.none(), _HOSTILE_RAW)  # GET with a body: hybrid-search reads one
    return st.one_of(_valid_ish(op.body_schema), _field_mutations(op.body_schema), _HOSTILE_RAW, st.none())


def case_strategy(ops: list[Operation], ids: dict[str, list[str]]) -> st.SearchStrategy[Case]:
    """Cases over ``ops``; ``ids`` maps a path parameter name to ids that exist (a created knowledge base,
    session…), mixed with random UUIDs and junk."""

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        op = draw(st.sampled_from(ops))
        url = op.path
        for name in op.path_params:
            real = [] if any(p in op.path for p in _NO_REAL_IDS) else ids.get(name, [])
            choices = [*real, str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1)))), *_JUNK_IDS]
            value = draw(st.sampled_from(choices))
            url = url.replace("{" + name + "}", quote(value, safe="") or "x")
        params: dict[str, str] = {}
        for name in op.query_params:
            if draw(st.booleans()):
                params[name] = draw(st.one_of(st.sampled_from(["-1", "0", "1", "99999999999999999999", "%",
                                                               "_", "x" * 5000, "NaN", ""]),
                                              st.text(max_size=30)))
        content = draw(_body(op))
        ctype = None
        if content is not None:
            ctype = draw(st.sampled_from(["application/json", "application/json", "text/plain",
                                          "multipart/form-data; boundary=zz", None]))
        return Case(op, url, params, content, ctype)

    return build()


# One of each wrong kind for the sweep: a list, an object, numbers, a bool, null, a huge and a broken string,
# deep nesting.
_WRONG_KINDS: tuple[Any, ...] = (["x"], {"x": 1}, 7, -1, 2**70, 1.5, True, None, "x" * 200_000,
                                 "\ud800 lone surrogate", [[[[[[[["deep"]]]]]]]])
_RAW_KINDS: tuple[bytes, ...] = (_nested(100_000, "["), _nested(100_000, "{"), b"[]", b'"x"', b"null",
                                 b'{"a":NaN}', b"\xff{}", b"{oops")


def sweep(ops: list[Operation], ids: dict[str, list[str]]) -> list[Case]:
    """Every operation with every hostile raw body, and every field of its request schema with every wrong
    kind of value (the other string fields set to "x", so that "name is required" checks pass): a fixed,
    exhaustive complement to the random cases, which spread thin over ~90 routes."""
    cases: list[Case] = []
    for op in ops:
        url = op.path
        for name in op.path_params:
            real = [] if any(p in op.path for p in _NO_REAL_IDS) else ids.get(name, [])
            url = url.replace("{" + name + "}", real[0] if real else str(uuid.UUID(int=1)))
        if op.method not in _METHODS_WITH_BODY:
            continue
        for raw in _RAW_KINDS:
            cases.append(Case(op, url, {}, raw, "application/json"))
        props: dict[str, Any] = (op.body_schema or {}).get("properties", {})
        base = {k: "x" for k, v in props.items() if v.get("type") == "string"}
        for key in props:
            for wrong in _WRONG_KINDS:
                cases.append(Case(op, url, {}, _dump({**base, key: wrong}), "application/json"))
    return cases


def verdict(response: httpx.Response) -> str | None:
    """None if the answer is acceptable; else what is wrong with it."""
    if response.status_code >= 500:
        return f"{response.status_code}"
    if response.status_code < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} non-JSON error body"
    if not isinstance(body, dict):
        return f"{response.status_code} not the envelope: {str(body)[:200]}"
    err = body.get("error")
    if response.request.url.path.startswith("/v1/"):  # the OpenAI-compatible API answers in OpenAI's shape
        if not isinstance(err, dict) or set(err) != {"message", "type", "param", "code"}:
            return f"{response.status_code} not OpenAI's error shape: {str(body)[:200]}"
        return None
    if body.get("success") is not False or not isinstance(err, dict) or not isinstance(err.get("code"), int) \
            or not isinstance(err.get("message"), str):
        return f"{response.status_code} not the envelope: {str(body)[:200]}"
    return None


async def send(http: httpx.AsyncClient, case: Case) -> httpx.Response:
    headers = {"Content-Type": case.content_type} if case.content_type else {}
    return await http.request(case.op.method.upper(), case.url, params=case.params, content=case.content,
                              headers=headers)


async def seed_ids(http: httpx.AsyncClient) -> dict[str, list[str]]:
    """Creates a knowledge base, a document, a tag, a session and an FAQ entry so that cases reach past the
    "not found" checks; returns the ids by path parameter name."""
    async def made(method: str, url: str, body: dict[str, Any]) -> str | None:
        r = await http.request(method, url, json=body)
        data = r.json().get("data") if r.status_code < 300 else None
        return str(data["id"]) if isinstance(data, dict) and "id" in data else None

    ids: dict[str, list[str]] = {}
    kb = await made("POST", "/api/v1/knowledge-bases", {"name": "fuzz"})
    if kb:
        ids["kb_id"] = [kb]
        for name, url, body in (
                ("knowledge_id", f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
                 {"title": "fuzz", "content": "fuzzing text"}),
                ("tag_id", f"/api/v1/knowledge-bases/{kb}/tags", {"name": "fuzz"}),
                ("entry_id", f"/api/v1/knowledge-bases/{kb}/faq/entry",
                 {"standard_question": "q?", "answers": ["a"]})):
            made_id = await made("POST", url, body)
            if made_id:
                ids[name] = [made_id]
    session = await made("POST", "/api/v1/sessions", {"title": "fuzz"})
    if session:
        ids["session_id"] = [session]
    return ids


def run_sweep(loop: asyncio.AbstractEventLoop, http: httpx.AsyncClient, cases: list[Case],
              tally: Tally) -> None:
    """Sends the fixed ``cases`` (from a worker thread, like ``run``)."""
    for case in cases:
        response = asyncio.run_coroutine_threadsafe(send(http, case), loop).result(timeout=120)
        tally.add(case, verdict(response), response.status_code)


def run(loop: asyncio.AbstractEventLoop, http: httpx.AsyncClient, strategy: st.SearchStrategy[Case],
        max_examples: int, tally: Tally, *, seed_value: int | None = None) -> None:
    """Draws ``max_examples`` cases with hypothesis and sends each through ``http`` on ``loop`` (call it from
    a worker thread: the app and its services live on ``loop``). Generation only, no shrinking: the tally
    records every failure and keeps examples. ``seed_value`` None: the same cases on every run."""

    @settings(max_examples=max_examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=seed_value is None)
    @given(strategy)
    def one(case: Case) -> None:
        response = asyncio.run_coroutine_threadsafe(send(http, case), loop).result(timeout=120)
        tally.add(case, verdict(response), response.status_code)

    if seed_value is not None:
        one = seed(seed_value)(one)
    one()
