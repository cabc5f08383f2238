// What a citation popover shows of a cited passage: the cited chunk's own text (a merged passage's `spans` map
// its text back to each source chunk, in code points) with the sentence the marker follows highlighted.
const SENT_END = /(?<=[.!?;。！？；])\s+|(?<=[.!?;。！？；]["'”’»）)\]])\s*|(?<=[。！？；])|\n+/u;
const PIECE = /[^\s.!?;。！？；][^\n.!?;。！？；]*[.!?;。！？；]*/gu;
const HAN = /[\u3400-\u9fff\uf900-\ufaff]/u;
const NOISE = /[^\p{L}\p{N}]+/gu;
const MIN_ALIKE = 0.35;

// -> { text, chunkIndex }: the cited chunk's text inside the reference (the whole reference when unmerged).
export function chunkText(ref, chunkId) {
  const span = (ref?.spans || []).find((s) => s.chunk_id === chunkId);
  if (span) {
    return { text: Array.from(ref.content || "").slice(span.start, span.end).join(""), chunkIndex: span.chunk_index ?? null };
  }
  return { text: ref?.content || "", chunkIndex: ref?.chunk_index ?? null };
}

// The last sentence of the answer text before a marker (Markdown decoration removed).
export function lastSentence(before) {
  const parts = (before || "").split(SENT_END);
  for (let i = parts.length - 1; i >= 0; i--) {
    const s = (parts[i] || "").replace(/^\s*(?:[-*+>]|\d+[.)]|#+)\s+/u, "").replace(/[*_`]+/gu, "").trim();
    if (s.replace(NOISE, "").length > 1) return s;
  }
  return "";
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const tokenPattern = (tok) => (HAN.test(tok) ? Array.from(tok).map(escape).join("\\s*") : escape(tok));

function exact(text, sentence) {
  const tokens = sentence.split(/\s+/u).filter(Boolean).slice(0, 200);
  if (!tokens.length) return null;
  const m = new RegExp(tokens.map(tokenPattern).join("\\s*"), "u").exec(text);
  if (m) return [m.index, m.index + m[0].length];
  const trimmed = sentence.replace(/[.,;:!?。，；：！？\s]+$/u, "");
  return trimmed && trimmed !== sentence ? exact(text, trimmed) : null;
}

function bigrams(s) {
  const flat = Array.from(s.toLowerCase().replace(NOISE, ""));
  const out = new Map();
  for (let i = 0; i + 1 < flat.length; i++) { const k = flat[i] + flat[i + 1]; out.set(k, (out.get(k) || 0) + 1); }
  return out;
}

function similar(text, sentence) {
  const want = bigrams(sentence);
  const size = [...want.values()].reduce((a, b) => a + b, 0);
  if (!size) return null;
  let best = null;
  for (const m of text.matchAll(PIECE)) {
    const got = bigrams(m[0]);
    let common = 0, n = 0;
    for (const [k, v] of got) { n += v; common += Math.min(v, want.get(k) || 0); }
    if (!n) continue;
    const score = (2 * common) / (size + n);
    if (!best || score > best[0]) best = [score, m.index, m.index + m[0].length];
  }
  return best && best[0] >= MIN_ALIKE ? [best[1], best[2]] : null;
}

// [start, end) of the cited sentence in the chunk's text: exactly (white space tolerated), else the most alike
// sentence of the chunk; null when nothing is alike.
export function locateQuote(text, sentence) {
  if (!text || !sentence) return null;
  return exact(text, sentence) || similar(text, sentence);
}

// -> [before, quote, after] of at most `max` characters around the quote (ellipses where cut); no quote: the start.
export function quoteWindow(text, range, max = 800) {
  if (!range) return [text.length > max ? text.slice(0, max) + "…" : text, "", ""];
  let [a, b] = range;
  let start = 0, end = text.length;
  if (text.length > max) {
    start = Math.max(0, Math.min(a - Math.min(160, Math.floor(max / 4)), text.length - max));
    end = Math.min(text.length, Math.max(b, start + max));
  }
  return [(start > 0 ? "…" : "") + text.slice(start, a), text.slice(a, b), text.slice(b, end) + (end < text.length ? "…" : "")];
}
