// Inline citation tags in answers: <kb doc="…" chunk_id="…" kb_id="…" /> and <web url="…" title="…" />.
// extractCitations() swaps each tag for a placeholder (\uE000n\uE001) the Markdown renderer carries through, and
// numbers the sources by first appearance (the same chunk or URL keeps its number).
import { t } from "./i18n.js";

const TAG_RE = /<(kb|web)(?=[\s/>])([^<>]*?)\/?>(?:\s*<\/\1>)?/gi;
const ATTR_RE = /([a-zA-Z_:][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
export const PH_OPEN = "\uE000";
export const PH_CLOSE = "\uE001";

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", "#39": "'", "#34": '"' };
export function unescapeEntities(s) {
  return s.replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, (m, e) => {
    const k = e.toLowerCase();
    if (k in ENTITIES) return ENTITIES[k];
    if (k.startsWith("#x")) return String.fromCodePoint(parseInt(k.slice(2), 16));
    if (k.startsWith("#")) return String.fromCodePoint(parseInt(k.slice(1), 10));
    return m;
  });
}

export function parseAttrs(text) {
  const attrs = {};
  for (const m of text.matchAll(ATTR_RE)) attrs[m[1].toLowerCase()] = unescapeEntities(m[2] ?? m[3] ?? "");
  return attrs;
}

// A cut-off tag at the very end of a streaming answer (e.g. `<kb doc="Ma`): hidden until it completes.
const PARTIAL_TAIL_RE = /<(?:k(?:b(?:\s[^<>]*)?)?|w(?:e(?:b(?:\s[^<>]*)?)?)?)?$/i;
export function stripPartialTag(text) {
  const m = text.match(PARTIAL_TAIL_RE);
  return m ? text.slice(0, m.index) : text;
}

export function citationKey(c) {
  return c.kind === "web" ? `web:${c.url}` : `kb:${c.chunk_id || c.doc}`;
}

// -> { text, tags, citations, order }: `tags` has every tag found (placeholder n = its index; malformed ones are
// marked invalid and render as nothing, fail closed), `citations` the valid ones, `order` one per distinct source.
export function extractCitations(text, { streaming = false } = {}) {
  const src = streaming ? stripPartialTag(text) : text;
  const tags = [];
  const citations = [];
  const numbers = new Map();
  const order = [];
  const out = src.replace(TAG_RE, (raw, tag, body) => {
    const a = parseAttrs(body);
    const kind = tag.toLowerCase();
    const c = kind === "web"
      ? { kind, url: a.url || "", title: a.title || a.url || "" }
      : { kind, chunk_id: a.chunk_id || "", kb_id: a.kb_id || "", doc: a.doc || "", page: a.page || "" };
    c.raw = raw;
    c.index = tags.length;
    tags.push(c);
    if (kind === "web" ? !c.url : !(c.chunk_id || c.doc)) { c.invalid = true; }
    else {
      const key = citationKey(c);
      if (!numbers.has(key)) { numbers.set(key, numbers.size + 1); order.push(c); }
      c.n = numbers.get(key);
      citations.push(c);
    }
    return `${PH_OPEN}${c.index}${PH_CLOSE}`;
  });
  return { text: out, tags, citations, order };
}

// Finds the SearchResult a citation points at, in a message's knowledge_references.
export function findReference(c, references) {
  if (!references) return null;
  if (c.kind === "web") {
    return references.find((r) => r.knowledge_source === c.url || r.metadata?.url === c.url || r.id === c.url) || null;
  }
  return references.find((r) => r.id === c.chunk_id) ||
    references.find((r) => (r.spans || []).some((s) => s.chunk_id === c.chunk_id)) ||
    references.find((r) => (r.sub_chunk_id || []).includes(c.chunk_id)) || null;
}

// In-app link to the cited document (its chunk list); "_" when the KB is unknown. With a chunk id the viewer
// scrolls to that chunk (its index, when known, says which page of the list to open first).
export function docLink(ref, chunkId = "", chunkIndex = null) {
  if (!ref || !ref.knowledge_id) return null;
  const base = `/kb/${encodeURIComponent(ref.knowledge_base_id || "_")}/doc/${encodeURIComponent(ref.knowledge_id)}`;
  if (!chunkId) return base;
  const q = new URLSearchParams({ chunk: chunkId });
  if (Number.isInteger(chunkIndex)) q.set("index", String(chunkIndex));
  return `${base}?${q}`;
}

// Where a chunk is in its document ("p. 12", "slide 3", "sheet Budget"), from the metadata the parser set.
export function chunkLocation(meta) {
  if (!meta || typeof meta.page !== "number") return "";
  const kind = meta.page_kind || "page";
  const end = typeof meta.page_end === "number" ? meta.page_end : null;
  if (kind === "page") return end ? t("chunk.pages", { a: meta.page, b: end }) : t("chunk.page", { n: meta.page });
  if (meta.page_label) return `${t("chunk.kind." + kind)} ${meta.page_label}`;
  return `${t("chunk.kind." + kind)} ${meta.page}${end ? "–" + end : ""}`;
}
