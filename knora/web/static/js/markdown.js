// A small, safe Markdown renderer. All source text is HTML-escaped before any markup is produced, links are
// limited to safe schemes (safe-url.js), and citation placeholders (see citations.js) are swapped for markers at
// the end. The output has no style attributes (the UI's CSP refuses inline styles) and no image from another
// host (a remote image is shown as a link: loading it would tell that host what the answer says).
import { extractCitations, PH_OPEN, PH_CLOSE } from "./citations.js";
import { safeUrl, isExternal } from "./safe-url.js";

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

export { safeUrl };

const PH_RE = new RegExp(`${PH_OPEN}(\\d+)${PH_CLOSE}`, "g");

// Inline markup on one block of (unescaped) text.
export function renderInline(src, ctx = {}) {
  const slots = [];
  const keep = (html) => { slots.push(html); return `\uE002${slots.length - 1}\uE003`; };
  let s = src;
  // code spans first: their content is literal
  s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (m, ticks, code) => keep(`<code>${escapeHtml(restoreRaw(code.replace(/^ (.*) $/, "$1"), ctx))}</code>`));
  // links and images ([text](url "title")) before escaping, so the URL is checked raw
  s = s.replace(/(!?)\[([^\]\n]*)\]\(\s*<?([^\s)<>]+)>?(?:\s+"([^"]*)")?\s*\)/g, (m, bang, text, url, title) => {
    const safe = safeUrl(url);
    if (!safe) return keep(escapeHtml(text));
    const t = title ? ` title="${escapeHtml(title)}"` : "";
    const ext = isExternal(safe) ? ' target="_blank" rel="noopener noreferrer"' : "";
    if (bang && !ext) return keep(`<img src="${escapeHtml(safe)}" alt="${escapeHtml(text)}"${t} loading="lazy">`);
    const label = bang ? escapeHtml(text || safe) : renderInline(text, ctx);
    return keep(`<a href="${escapeHtml(safe)}"${t}${ext}${bang ? ' class="img-link"' : ""}>${label}</a>`);
  });
  s = s.replace(/<(https?:\/\/[^\s<>]+)>/g, (m, url) => keep(`<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${escapeHtml(url)}</a>`));
  s = s.replace(/(^|[\s(])(https?:\/\/[^\s<>()\uE000-\uE003]+[^\s<>().,;:!?'"\uE000-\uE003])/g, (m, pre, url) =>
    pre + keep(`<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${escapeHtml(url)}</a>`));
  s = escapeHtml(s);
  s = s.replace(/\\([\\`*_{}[\]()#+\-.!~|])/g, (m, c) => keep(c));
  s = s.replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "<strong>$2</strong>");
  s = s.replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>");
  s = s.replace(/(^|[^_\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![_\w])/g, "$1<em>$2</em>");
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
  s = s.replace(/ {2,}\n|\\\n/g, "<br>").replace(/\n/g, "<br>");
  s = s.replace(/\uE002(\d+)\uE003/g, (m, i) => slots[+i]);
  return s;
}

function restoreRaw(text, ctx) {
  // inside code, a citation placeholder shows the tag text the model wrote
  return text.replace(PH_RE, (m, i) => ctx.tags?.[+i]?.raw ?? "");
}

const FENCE_RE = /^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING_RE = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const HR_RE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const LIST_RE = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP_RE = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "", inCode = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === "\\" && s[i + 1] === "|") { cur += "|"; i++; continue; }
    if (ch === "`") inCode = !inCode;
    if (ch === "|" && !inCode) { cells.push(cur.trim()); cur = ""; continue; }
    cur += ch;
  }
  cells.push(cur.trim());
  return cells;
}

function renderBlocks(lines, ctx) {
  const out = [];
  let i = 0;
  const isBlank = (l) => /^\s*$/.test(l);
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) { i++; continue; }
    let m;
    if ((m = line.match(FENCE_RE))) {
      const fence = m[2], lang = m[3];
      const body = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) && lines[i].trim().replace(new RegExp(`^\\${fence[0]}+`), "").trim() === "")) body.push(lines[i++]);
      i++; // closing fence (or end of input while streaming)
      const cls = lang ? ` class="language-${escapeHtml(lang)}"` : "";
      out.push(`<pre><code${cls}>${escapeHtml(restoreRaw(body.join("\n"), ctx))}</code></pre>`);
      continue;
    }
    if ((m = line.match(HEADING_RE))) {
      const level = m[1].length;
      out.push(`<h${level}>${renderInline(m[2], ctx)}</h${level}>`);
      i++; continue;
    }
    if (HR_RE.test(line)) { out.push("<hr>"); i++; continue; }
    if (/^ {0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && !isBlank(lines[i]) && (/^ {0,3}>/.test(lines[i]) || body.length)) {
        if (!/^ {0,3}>/.test(lines[i]) && (LIST_RE.test(lines[i]) || HEADING_RE.test(lines[i]))) break;
        body.push(lines[i].replace(/^ {0,3}> ?/, ""));
        i++;
      }
      out.push(`<blockquote>${renderBlocks(body, ctx)}</blockquote>`);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP_RE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
      i += 2;
      const rows = [];
      while (i < lines.length && !isBlank(lines[i]) && lines[i].includes("|")) rows.push(splitRow(lines[i++]));
      const cell = (tag, text, j) => `<${tag}${aligns[j] ? ` class="align-${aligns[j]}"` : ""}>${renderInline(text ?? "", ctx)}</${tag}>`;
      out.push(`<div class="table-wrap"><table><thead><tr>${head.map((c, j) => cell("th", c, j)).join("")}</tr></thead><tbody>${
        rows.map((r) => `<tr>${head.map((_, j) => cell("td", r[j], j)).join("")}</tr>`).join("")}</tbody></table></div>`);
      continue;
    }
    if ((m = line.match(LIST_RE))) {
      const consumed = renderList(lines, i, ctx);
      out.push(consumed.html);
      i = consumed.next;
      continue;
    }
    const para = [];
    while (i < lines.length && !isBlank(lines[i]) && !FENCE_RE.test(lines[i]) && !HEADING_RE.test(lines[i]) &&
           !HR_RE.test(lines[i]) && !/^ {0,3}>/.test(lines[i]) && !(para.length && LIST_RE.test(lines[i]) && (!/^\s*\d/.test(lines[i]) || /^\s*1[.)]\s/.test(lines[i]))) &&
           !(lines[i].includes("|") && i + 1 < lines.length && TABLE_SEP_RE.test(lines[i + 1]) && lines[i + 1].includes("-"))) {
      para.push(lines[i++]);
    }
    if (!para.length) { para.push(lines[i++]); }
    out.push(`<p>${renderInline(para.join("\n"), ctx)}</p>`);
  }
  return out.join("");
}

function renderList(lines, start, ctx) {
  const first = lines[start].match(LIST_RE);
  const indent = first[1].replace(/\t/g, "    ").length;
  const ordered = /\d/.test(first[2]);
  const startNum = ordered ? parseInt(first[2], 10) : 1;
  const items = [];
  let i = start;
  while (i < lines.length) {
    const m = lines[i].match(LIST_RE);
    if (m && m[1].replace(/\t/g, "    ").length === indent && /\d/.test(m[2]) === ordered) {
      items.push([m[3]]);
      i++;
      continue;
    }
    if (/^\s*$/.test(lines[i])) {
      // a blank line continues the list only if the next line is indented or another item
      const nx = lines[i + 1];
      if (nx !== undefined && (nx.match(LIST_RE)?.[1].length === indent || /^\s+\S/.test(nx) && leading(nx) > indent)) {
        items[items.length - 1].push("");
        i++;
        continue;
      }
      break;
    }
    if (leading(lines[i]) > indent) { items[items.length - 1].push(lines[i].slice(Math.min(leading(lines[i]), indent + 4))); i++; continue; }
    if (m) break; // an item at a different indent/kind ends this list
    items[items.length - 1].push(lines[i].trim()); // lazy continuation
    i++;
  }
  const tag = ordered ? "ol" : "ul";
  const startAttr = ordered && startNum !== 1 ? ` start="${startNum}"` : "";
  const html = items.map((body) => {
    const [head, ...rest] = body;
    const task = head.match(/^\[([ xX])\]\s+(.*)$/);
    const headHtml = task ? `<input type="checkbox" disabled${task[1] !== " " ? " checked" : ""}> ${renderInline(task[2], ctx)}` : renderInline(head, ctx);
    const restHtml = rest.some((l) => l.trim()) ? renderBlocks(rest, ctx) : "";
    return `<li>${headHtml}${restHtml}</li>`;
  }).join("");
  return { html: `<${tag}${startAttr}>${html}</${tag}>`, next: i };
}

function leading(line) { return line.match(/^\s*/)[0].replace(/\t/g, "    ").length; }

// renderMarkdown(text, {streaming, marker(citation, tagIndex) -> html}) -> {html, tags, citations, order}
export function renderMarkdown(text, { streaming = false, marker } = {}) {
  const { text: withPh, tags, citations, order } = extractCitations(String(text ?? ""), { streaming });
  const ctx = { tags };
  const lines = withPh.replace(/\r\n?/g, "\n").split("\n");
  let html = renderBlocks(lines, ctx);
  const mk = marker || ((c) => `<sup class="cite-n">[${c.n}]</sup>`);
  html = html.replace(PH_RE, (m, i) => (tags[+i] && !tags[+i].invalid ? mk(tags[+i], +i) : ""));
  return { html, tags, citations, order };
}
