"""Unit tests of the UI's pure modules (Markdown renderer, citation parser, SSE parser, turn reducer, i18n),
run inside real Chromium via page.evaluate on ES modules served by knora.web.mount."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def js(static_server: str, new_page: Callable[..., Any]) -> Callable[..., Any]:
    page = new_page()
    page.goto(f"{static_server}/js/markdown.js")  # any same-origin document: modules are imported below

    def run(body: str, arg: Any = None) -> Any:
        return page.evaluate(f"""async (arg) => {{
            const md = await import('/js/markdown.js');
            const cit = await import('/js/citations.js');
            const sse = await import('/js/sse.js');
            const turn = await import('/js/turn.js');
            const i18n = await import('/js/i18n.js');
            {body}
        }}""", arg)

    return run


class TestMarkdown:
    def test_escapes_html_before_markup(self, js: Callable[[str], Any]) -> None:
        html = js("return md.renderMarkdown("
                  "'<script>alert(1)</script> **b** <img src=x onerror=alert(1)>').html")
        assert "<script>" not in html
        assert "<img" not in html
        assert "&lt;script&gt;" in html
        assert "<strong>b</strong>" in html

    def test_blocks(self, js: Callable[[str], Any]) -> None:
        src = ("# Title\n\nSome *it* and `a<b`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n"
               "| a | b |\n|---|--:|\n| 1 | 2 |\n\n```py\nx = '<kb/>' < 2\n```\n\n> quote")
        html = js("return md.renderMarkdown(arg).html", src)
        assert "<h1>Title</h1>" in html
        assert "<em>it</em>" in html
        assert "<code>a&lt;b</code>" in html
        assert "<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>" in html
        assert "<ol><li>first</li><li>second</li></ol>" in html
        assert "<table>" in html
        assert '<td class="align-right">2</td>' in html
        assert '<pre><code class="language-py">x = &#39;&lt;kb/&gt;&#39; &lt; 2</code></pre>' in html
        assert "<blockquote><p>quote</p></blockquote>" in html

    def test_links_only_safe_schemes(self, js: Callable[[str], Any]) -> None:
        html = js("return md.renderMarkdown("
                  "'[ok](https://e.com/a) [bad](javascript:alert(1)) [rel](/kb/1)').html")
        assert '<a href="https://e.com/a" target="_blank" rel="noopener noreferrer">ok</a>' in html
        assert "javascript:" not in html
        assert ">bad<" not in html.replace("bad</a>", "")
        assert '<a href="/kb/1">rel</a>' in html

    # Each must stay plain text: a browser reads all of these as javascript:/vbscript:/data: URLs.
    HOSTILE = ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "\u0001javascript:alert(1)",
               "\u0000 javascript:alert(1)", "java\tscript:alert(1)", "java\nscript:alert(1)",
               "\u200bjavascript:alert(1)", "&#106;avascript:alert(1)", "javascript&#58;alert(1)",
               "&#x6A;avascript&colon;alert(1)", "javascript&amp;#58;alert(1)", "  javascript:alert(1)",
               "vbscript:msgbox(1)", "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
               "//evil.example/x", "\\\\evil.example/x", "/\\evil.example/x"]

    def test_safe_url_refuses_obfuscated_schemes(self, js: Callable[..., Any]) -> None:
        out = js("return arg.map(u => md.safeUrl(u))", self.HOSTILE)
        assert out == [None] * len(self.HOSTILE)
        ok = js("return arg.map(u => md.safeUrl(u))",
                ["https://e.com/a?b=1&c=2", "HTTP://e.com", "mailto:a@e.com", "/kb/1", "#top", "doc.md",
                 "\u0001https://e.com"])
        assert ok == ["https://e.com/a?b=1&c=2", "HTTP://e.com", "mailto:a@e.com", "/kb/1", "#top", "doc.md",
                      "https://e.com"]

    def test_hostile_links_and_images_render_as_text(self, js: Callable[..., Any]) -> None:
        src = "\n".join(f"[x{i}]({u}) ![y{i}]({u})" for i, u in enumerate(self.HOSTILE))
        out = js("""const box = document.createElement('div');
                    box.innerHTML = md.renderMarkdown(arg).html;
                    return {links: [...box.querySelectorAll('a[href], img[src]')].length,
                            text: box.textContent};""", src)
        assert out["links"] == 0
        assert "x0" in out["text"]
        assert "x2" in out["text"]

    def test_remote_image_is_a_link_not_a_fetch(self, js: Callable[..., Any]) -> None:
        html = js("return md.renderMarkdown('![logo](https://e.com/l.png) ![local](/files/a.png)').html")
        assert ('<a href="https://e.com/l.png" target="_blank" rel="noopener noreferrer" class="img-link">'
                'logo</a>') in html
        assert '<img src="/files/a.png" alt="local" loading="lazy">' in html

    def test_dom_helper_drops_unsafe_href(self, js: Callable[..., Any]) -> None:
        out = js("""const dom = await import('/js/dom.js');
                    return arg.map(u => dom.h('a', {href: u}, 'x').getAttribute('href'));""",
                 ["\u0001javascript:alert(1)", "https://e.com", "/kb/1"])
        assert out == [None, "https://e.com", "/kb/1"]

    def test_unterminated_fence_while_streaming(self, js: Callable[[str], Any]) -> None:
        html = js("return md.renderMarkdown('text\\n```\\ncode **not bold**', {streaming: true}).html")
        assert "<pre><code>code **not bold**</code></pre>" in html


class TestCitations:
    def test_numbered_by_first_appearance_and_deduplicated(self, js: Callable[[str], Any]) -> None:
        out = js("""const r = md.renderMarkdown('A <kb doc="Doc &amp; Co" chunk_id="c-1" kb_id="k1" /> ' +
                      'B <web url="https://x.org" title="X" /> C <kb doc="Doc" chunk_id="c-1" kb_id="k1"/>.');
                    return {html: r.html, order: r.order.map(c => [c.n, c.kind, c.doc || c.url]),
                            n: r.citations.map(c => c.n)};""")
        assert out["n"] == [1, 2, 1]
        assert out["order"] == [[1, "kb", "Doc & Co"], [2, "web", "https://x.org"]]
        assert out["html"].count('class="cite-n"') == 3
        assert "&lt;kb" not in out["html"]

    def test_partial_tag_hidden_while_streaming(self, js: Callable[[str], Any]) -> None:
        out = js("""return [md.renderMarkdown('Paris is big <kb doc="Fr', {streaming: true}).html,
                            md.renderMarkdown('Paris <w', {streaming: true}).html,
                            md.renderMarkdown('a < b', {streaming: true}).html];""")
        assert out[0] == "<p>Paris is big </p>"
        assert out[1] == "<p>Paris </p>"
        assert out[2] == "<p>a &lt; b</p>"

    def test_malformed_tags_dropped(self, js: Callable[[str], Any]) -> None:
        html = js("return md.renderMarkdown('x <kb foo=\"1\"/> y').html")
        assert html == "<p>x  y</p>"

    def test_page_attribute_and_chunk_location(self, js: Callable[[str], Any]) -> None:
        out = js("""const r = md.renderMarkdown('A <kb doc="Contract" chunk_id="c-1" page="p. 12" />.');
                    return [r.order[0].page,
                            cit.chunkLocation({page: 3, page_kind: 'page'}),
                            cit.chunkLocation({page: 3, page_end: 4, page_kind: 'page'}),
                            cit.chunkLocation({page: 2, page_kind: 'slide'}),
                            cit.chunkLocation({page: 1, page_kind: 'sheet', page_label: 'Budget'}),
                            cit.chunkLocation({}), cit.chunkLocation(null)];""")
        assert out == ["p. 12", "p. 3", "pp. 3–4", "slide 2", "sheet Budget", "", ""]

    def test_find_reference(self, js: Callable[[str], Any]) -> None:
        out = js("""const refs = [{id: 'a'}, {id: 'b', sub_chunk_id: ['s1']}];
                    return [cit.findReference({kind:'kb', chunk_id:'a'}, refs)?.id,
                            cit.findReference({kind:'kb', chunk_id:'s1'}, refs)?.id,
                            cit.findReference({kind:'kb', chunk_id:'zz'}, refs)];""")
        assert out == ["a", "b", None]


class TestSSE:
    def test_frames_split_anywhere(self, js: Callable[[str], Any]) -> None:
        out = js("""const got = [];
            const p = sse.createSSEParser((f) => got.push(f));
            const wire = 'event:message\\ndata:{"response_type":"answer","content":"He"}\\n\\n' +
                         'event: message\\r\\ndata: {"response_type":"answer","content":"llo"}\\r\\n\\r\\n' +
                         ': ping\\n\\n' +
                         'event:message\\ndata:{"response_type":"complete"}\\n\\n';
            for (let i = 0; i < wire.length; i += 3) p.push(wire.slice(i, i + 3));
            p.end();
            return got.map(f => f.response_type + ':' + (f.content || ''));""")
        assert out == ["answer:He", "answer:llo", "complete:"]


class TestTurnReducer:
    FRAMES = """[
      {id:'r', response_type:'agent_query', content:'', done:true, session_id:'s', assistant_message_id:'m1'},
      {id:'r', response_type:'thinking', content:'plan ', data:{event_id:'t1'}},
      {id:'r', response_type:'thinking', content:'it', done:true, data:{event_id:'t1', duration_ms:5}},
      {id:'r', response_type:'answer', content:'Let me search.', data:{event_id:'a1'}},
      {id:'r', response_type:'tool_call', content:'Calling tool: knowledge_search',
       data:{tool_call_id:'tc1', tool_name:'knowledge_search', arguments:{query:'q'}}},
      {id:'r', response_type:'tool_result', content:'',
       data:{tool_call_id:'tc1', tool_name:'knowledge_search', success:true, output:'3 hits',
             duration_ms:12}},
      {id:'r', response_type:'references', content:'', knowledge_references:[{id:'c1', content:'x'}],
       data:{references:[{id:'c1'}]}},
      {id:'r', response_type:'debug', content:'', data:{stage:'retrieval', ms:7.5, kept:3}},
      {id:'r', response_type:'answer', content:'Final <kb doc="D" chunk_id="c1"/>', data:{event_id:'a2'}},
      {id:'r', response_type:'answer', content:'', done:true, data:{event_id:'a2'}},
      {id:'r', response_type:'complete', content:'', done:true, data:{total_duration_ms:40}},
      {id:'r', response_type:'session_title', content:'A title', done:true, data:{title:'A title'}}
    ]"""

    def test_live_and_replay_are_identical(self, js: Callable[[str], Any]) -> None:
        out = js(f"""const frames = {self.FRAMES};
            const a = turn.newTurn(); frames.forEach(f => turn.applyFrame(a, f));
            // a resumed stream replays from offset 0 into a fresh turn: same result, nothing twice
            const b = turn.newTurn({{messageId: 'm1'}}); frames.forEach(f => turn.applyFrame(b, f));
            const la = turn.layout(a), lb = turn.layout(b);
            return {{answer: la.answer, same: JSON.stringify(la) === JSON.stringify(lb),
                     steps: la.steps.map(s => s.kind), tool: la.steps.find(s => s.kind === 'tool'),
                     status: a.status, id: a.messageId, refs: a.references.length,
                     timings: a.debug.timings, title: a.title}};""")
        assert out["answer"] == 'Final <kb doc="D" chunk_id="c1"/>'
        assert out["same"] is True
        assert out["steps"] == ["thinking", "preamble", "tool"]
        assert out["tool"]["args"] == {"query": "q"}
        assert out["tool"]["result"]["output"] == "3 hits"
        assert out["status"] == "complete"
        assert out["id"] == "m1"
        assert out["refs"] == 1
        assert out["timings"] == [{"stage": "retrieval", "ms": 7.5, "kept": 3}]
        assert out["title"] == "A title"

    def test_stop_and_errors(self, js: Callable[[str], Any]) -> None:
        out = js("""const a = turn.newTurn();
            turn.applyFrame(a, {response_type:'answer', content:'par', data:{event_id:'x'}});
            turn.applyFrame(a, {response_type:'error', content:'tool broke', done:false,
                                data:{tool_call_id:'t', tool_name:'web_fetch'}});
            const toolFailed = a.segments.find(s => s.kind === 'tool').result.success === false &&
                               a.status === 'streaming';
            turn.applyFrame(a, {response_type:'stop', content:'Generation stopped by user', done:true});
            const b = turn.newTurn();
            turn.applyFrame(b, {response_type:'error', content:'model down', done:true,
                                data:{stage:'chat_completion_stream'}});
            return [toolFailed, a.status, b.status, b.error];""")
        assert out == [True, "stopped", "error", "model down"]

    def test_from_message_history(self, js: Callable[[str], Any]) -> None:
        out = js("""const t = turn.fromMessage({id:'m', role:'assistant', content:'Hi', is_completed:true,
              knowledge_references:[{id:'c'}],
              agent_steps:[{iteration:0, thought:'hmm',
                            tool_calls:[{id:'t1', name:'grep_chunks', args:{pattern:'x'},
                                         result:{success:true, output:'ok'}}]}],
              debug:{timings:{retrieval:{ms:3}, rerank:2}}});
            const l = turn.layout(t);
            return [l.answer, l.steps.map(s => s.kind + ':' + (s.name || '')),
                    t.debug.timings.map(x => x.stage + '=' + x.ms)];""")
        assert out == ["Hi", ["thinking:", "tool:grep_chunks"], ["retrieval=3", "rerank=2"]]


def test_every_string_is_translated(js: Callable[[str], Any]) -> None:
    assert js("return i18n.missingKeys()") == {"zh": [], "en": []}


class TestShortDate:
    def test_today_week_and_older(self, js: Callable[..., Any]) -> None:
        got = js("""const dom = await import('/js/dom.js');
            const now = new Date(2026, 11, 7, 15, 0);
            return [dom.formatShortDate(new Date(2026, 11, 7, 9, 5).toISOString(), now),
                    dom.formatShortDate(new Date(2026, 11, 4, 9, 5).toISOString(), now),
                    dom.formatShortDate(new Date(2026, 10, 2, 9, 5).toISOString(), now),
                    dom.formatShortDate(new Date(2025, 10, 2, 9, 5).toISOString(), now),
                    dom.formatShortDate('', now), dom.formatShortDate('not a date', now)];""")
        today, this_week, this_year, last_year, empty, bad = got
        assert "09" in today  # a time of day
        assert "05" in today
        assert "05" in this_week  # a weekday with the time
        assert today != this_week
        assert "2026" not in this_year
        assert "2" in this_year
        assert "2025" in last_year
        assert (empty, bad) == ("", "")


class TestFormatDuration:
    def test_time_left_as_a_person_says_it(self, js: Callable[..., Any]) -> None:
        got = js("""const dom = await import('/js/dom.js');
            return [0.2, 44.6, 90, 719, 3600, 7800, null, -1, Infinity].map((s) => dom.formatDuration(s));""")
        assert got == ["1 s", "45 s", "2 min", "12 min", "1 h", "2 h 10 min", "", "", ""]


class TestCitedQuote:
    """js/cited.js: the cited chunk's text inside a merged reference, and the quote located in it."""

    def test_chunk_text_from_spans_in_code_points(self, js: Callable[..., Any]) -> None:
        ref = {"id": "a", "content": "😀 one.\n\nTwo 𝄞 here.", "chunk_index": 0,
               "spans": [{"chunk_id": "a", "start": 0, "end": 6, "chunk_index": 0},
                         {"chunk_id": "b", "start": 8, "end": 19, "chunk_index": 1}]}
        got = js("const c = await import('/js/cited.js');"
                 " return [c.chunkText(arg, 'b'), c.chunkText(arg, 'a'),"
                 " c.chunkText({content: 'solo', chunk_index: 4}, 'x')]", ref)
        assert got == [{"text": "Two 𝄞 here.", "chunkIndex": 1}, {"text": "😀 one.", "chunkIndex": 0},
                       {"text": "solo", "chunkIndex": 4}]

    def test_last_sentence_and_its_place_exact_chinese_and_paraphrased(self, js: Callable[..., Any]) -> None:
        got = js("""const c = await import('/js/cited.js');
            const text = 'Alpha one. The pump weighs 41 kg when\\nempty. Service is due yearly.';
            return [c.lastSentence('First. **Second** claim here '), c.lastSentence('第一句。第二句'),
                    c.locateQuote(text, c.lastSentence('So. The pump weighs 41 kg when empty. ')),
                    c.locateQuote('水泵重四十一\\n公斤。保养每年一次。', '水泵重四十一公斤。'),
                    c.locateQuote(text, 'servicing is due every year'),
                    c.locateQuote(text, 'nothing alike at all zzz'),
                    c.quoteWindow('x'.repeat(50) + 'QUOTE' + 'y'.repeat(50), [50, 55], 20)]""")
        assert got[0] == "Second claim here"
        assert got[1] == "第二句"
        assert got[2] == [11, 44]
        assert got[3] == [0, 10]
        assert got[4] == [45, 67]  # "Service is due yearly."
        assert got[5] is None
        assert got[6] == ["…xxxxx", "QUOTE", "y" * 10 + "…"]


API_CLIENT = """
const api = await import('/js/api.js');
const seen = [];
let refreshes = 0, unauthorized = 0, live = 'rt-old';  // the server's one live refresh token (rotated)
const real = window.fetch;
window.fetch = async (url, init = {}) => {
  const hs = init.headers || {};
  seen.push({ url: String(url), auth: hs.Authorization || null, key: hs['X-API-Key'] || null,
              tenant: hs['X-Tenant-ID'] || null });
  const json = (status, body) => new Response(JSON.stringify(body), { status,
    headers: { 'Content-Type': 'application/json' } });
  if (String(url).endsWith('/auth/refresh')) {
    refreshes++;
    if (JSON.parse(init.body).refresh_token !== live) {
      return json(401, { success: false, error: { message: 'invalid or expired token' } });
    }
    live = 'rt-new';
    return json(200, { success: true, access_token: 'eyJnew.a.b', refresh_token: 'rt-new' });
  }
  return hs.Authorization === 'Bearer eyJnew.a.b' || hs['X-API-Key'] === 'sk-good'
    ? json(200, { success: true, data: { ok: String(url) } })
    : json(401, { success: false, error: { message: 'Unauthorized' } });
};
api.setUnauthorizedHandler(() => { unauthorized++; });
try {
  localStorage.clear();
  BODY
} finally { window.fetch = real; localStorage.clear(); }
"""


class TestApiClient:
    def test_a_401_refreshes_once_for_concurrent_requests(self, js: Callable[..., Any]) -> None:
        got = js(API_CLIENT.replace("BODY", """
          api.setSession({ access: 'eyJold.a.b', refresh: 'rt-old' });
          api.setTenant(7);
          const results = await Promise.all(['/a', '/b', '/c'].map((p) => api.api('GET', p)));
          return { results, refreshes, unauthorized, session: api.getSession(), seen };"""))
        assert got["refreshes"] == 1  # refresh tokens rotate: a second refresh with rt-old would fail
        assert got["results"] == [{"ok": "/api/v1/a"}, {"ok": "/api/v1/b"}, {"ok": "/api/v1/c"}]
        assert got["unauthorized"] == 0
        assert got["session"] == {"access": "eyJnew.a.b", "refresh": "rt-new"}
        calls = [c for c in got["seen"] if not c["url"].endswith("/auth/refresh")]
        assert {c["tenant"] for c in calls} == {"7"}  # the chosen tenant, with a user's token
        assert {c["key"] for c in calls} == {None}

    def test_a_key_is_never_refreshed_and_names_no_tenant(self, js: Callable[..., Any]) -> None:
        got = js(API_CLIENT.replace("BODY", """
          api.setKey('sk-good');
          api.setTenant(7);  // left over: a key names its own tenant
          const ok = await api.api('GET', '/a');
          api.setKey('sk-bad');
          let status = null;
          try { await api.api('GET', '/b'); } catch (e) { status = e.status; }
          return { ok, status, refreshes, unauthorized, seen };"""))
        assert got["ok"] == {"ok": "/api/v1/a"}
        assert (got["status"], got["refreshes"], got["unauthorized"]) == (401, 0, 1)
        assert [(c["key"], c["tenant"], c["auth"]) for c in got["seen"]] == [("sk-good", None, None),
                                                                            ("sk-bad", None, None)]

    def test_a_failed_refresh_signs_out(self, js: Callable[..., Any]) -> None:
        got = js(API_CLIENT.replace("BODY", """
          api.setSession({ access: 'eyJold.a.b', refresh: 'rt-stolen' });
          let status = null;
          try { await api.api('GET', '/a'); } catch (e) { status = e.status; }
          return { status, refreshes, unauthorized };"""))
        assert got == {"status": 401, "refreshes": 1, "unauthorized": 1}
