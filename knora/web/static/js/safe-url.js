// Which URLs may become a live link or image: http(s), mailto, and same-site paths/anchors, judged the way a
// browser will read them. A browser drops C0 controls and spaces around a URL and tabs/newlines inside it
// ("\x01java\tscript:" is javascript:), schemes are case-insensitive, and text from documents may carry HTML
// entities ("javascript&#58;"), so the check runs on the URL after all of that, and the link gets exactly the
// URL that was checked. Anything else stays plain text.

const SAFE_SCHEMES = new Set(["http", "https", "mailto"]);
const NAMED = { colon: ":", tab: "\t", newline: "\n", sol: "/", bsol: "\\", amp: "&", lpar: "(", rpar: ")", period: ".", quot: '"', apos: "'", num: "#", quest: "?" };
// C0 controls, space, DEL, C1 controls, and invisible format characters (soft hyphen, zero-width, bidi marks).
const INVISIBLE = /[\u0000-\u0020\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/g;

function decodeEntities(s) {
  // repeated, so "&amp;#58;" (an entity escaped once more) is read the same as ":"
  for (let i = 0; i < 3; i++) {
    const next = s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);?/gi, (m, e) => {
      if (e[0] === "#") {
        const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "";
      }
      return NAMED[e.toLowerCase()] ?? m;
    });
    if (next === s) break;
    s = next;
  }
  return s;
}

// The normalised URL when it is safe to link to, else null.
export function safeUrl(url) {
  if (url === undefined || url === null) return null;
  const u = decodeEntities(String(url)).replace(INVISIBLE, "").replace(/\\/g, "/");
  if (!u) return null;
  const scheme = u.match(/^([a-z][a-z0-9+.-]*):/i);
  if (scheme) return SAFE_SCHEMES.has(scheme[1].toLowerCase()) ? u : null;
  if (u.startsWith("//")) return null; // another host without a scheme: not a same-site link
  if (/^[^/?#]*:/.test(u)) return null; // a colon before any path: something a browser may read as a scheme
  return u;
}

// True for a URL on another host (http(s) with a host, as safeUrl returns it).
export function isExternal(url) { return /^https?:/i.test(url); }
