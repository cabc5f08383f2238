// An incremental parser for text/event-stream bodies read with fetch() + a stream reader.
// WeKnora frames are `event:message\ndata:{json}\n\n`; spaces after the colon and CRLF line ends are tolerated.

export function createSSEParser(onFrame) {
  let buffer = "";
  let dataLines = [];
  let eventName = "";

  function dispatch() {
    if (dataLines.length) {
      const raw = dataLines.join("\n");
      let payload = null;
      try { payload = JSON.parse(raw); } catch { payload = null; }
      if (payload !== null) onFrame(payload, eventName || "message");
    }
    dataLines = [];
    eventName = "";
  }

  function line(l) {
    if (l === "") { dispatch(); return; }
    if (l.startsWith(":")) return; // comment / heartbeat
    const i = l.indexOf(":");
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? "" : l.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") dataLines.push(value);
    else if (field === "event") eventName = value;
  }

  return {
    push(text) {
      buffer += text;
      let idx;
      while ((idx = buffer.search(/\r\n|\n|\r/)) >= 0) {
        const l = buffer.slice(0, idx);
        const sepLen = buffer.startsWith("\r\n", idx) ? 2 : 1;
        // a lone "\r" at the very end may be the first half of "\r\n": wait for more input
        if (buffer[idx] === "\r" && sepLen === 1 && idx === buffer.length - 1) break;
        buffer = buffer.slice(idx + sepLen);
        line(l);
      }
    },
    end() {
      if (buffer) { line(buffer); buffer = ""; }
      dispatch();
    },
  };
}

// Reads a fetch Response body as SSE, calling onFrame(payload) per frame. Resolves when the body ends.
export async function readSSE(response, onFrame, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = createSSEParser(onFrame);
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", abort);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
  } finally {
    signal?.removeEventListener("abort", abort);
  }
}
