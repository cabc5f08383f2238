// The state of one assistant answer, built by folding SSE frames (api §2.3) in order. Pure: no DOM.
// Replaying a stream from offset 0 into a fresh state (continue-stream) yields exactly the live state, so a resumed
// answer never shows anything twice.

export function newTurn(init = {}) {
  return {
    messageId: init.messageId || "", requestId: "", sessionId: init.sessionId || "",
    segments: [], // ordered: thinking | answer | tool | approval
    references: [], debug: { timings: [], extra: {} },
    status: "streaming", error: "", title: "", isFallback: false, modelId: "", durationMs: 0,
    frames: 0,
  };
}

function segmentBy(turn, kind, key, make) {
  let seg = turn.segments.find((s) => s.kind === kind && s.key === key);
  if (!seg) { seg = { kind, key, ...make() }; turn.segments.push(seg); }
  return seg;
}

function addTiming(turn, t) {
  if (!t || !t.stage) return;
  const existing = turn.debug.timings.find((x) => x.stage === t.stage);
  if (existing) Object.assign(existing, t); else turn.debug.timings.push({ ...t });
}

export function mergeDebug(turn, debug) {
  if (!debug || typeof debug !== "object") return;
  // Knora stores {timings: {stage: ms}, stages: [{stage, ms, kept…}]}; either may be a list or a map
  for (const timings of [debug.timings, debug.stages, debug.stage_timings]) {
    if (Array.isArray(timings)) timings.forEach((t) => addTiming(turn, t));
    else if (timings && typeof timings === "object") {
      for (const [stage, v] of Object.entries(timings)) addTiming(turn, v && typeof v === "object" ? { stage, ...v } : { stage, ms: v });
    }
  }
  if (debug.stage) addTiming(turn, debug);
  for (const [k, v] of Object.entries(debug)) {
    if (!["timings", "stages", "stage_timings", "stage", "ms"].includes(k)) turn.debug.extra[k] = v;
  }
}

// Applies one SSE payload; returns the turn (mutated) for convenience.
export function applyFrame(turn, f) {
  turn.frames++;
  const data = f.data || {};
  if (f.id && !turn.requestId) turn.requestId = f.id;
  switch (f.response_type) {
    case "agent_query":
      turn.messageId = f.assistant_message_id || data.assistant_message_id || turn.messageId;
      turn.sessionId = f.session_id || data.session_id || turn.sessionId;
      break;
    case "thinking": {
      const seg = segmentBy(turn, "thinking", data.event_id || "thinking", () => ({ content: "", done: false }));
      seg.content += f.content || "";
      if (f.done) { seg.done = true; seg.durationMs = data.duration_ms; }
      break;
    }
    case "answer": {
      const seg = segmentBy(turn, "answer", data.event_id || "answer", () => ({ content: "", done: false }));
      seg.content += f.content || "";
      if (data.is_fallback) { seg.isFallback = true; turn.isFallback = true; }
      if (f.done) { seg.done = true; seg.durationMs = data.duration_ms; }
      break;
    }
    case "tool_call": {
      const key = data.tool_call_id || `${data.tool_name}-${turn.segments.length}`;
      const seg = segmentBy(turn, "tool", key, () => ({ name: data.tool_name || "", args: {}, result: null }));
      seg.name = data.tool_name || seg.name;
      seg.args = data.arguments ?? seg.args;
      break;
    }
    case "tool_result":
    case "error": {
      if (f.response_type === "error" && (f.done || !data.tool_call_id && !data.tool_name)) {
        turn.status = "error";
        turn.error = f.content || data.error || "error";
        break;
      }
      const key = data.tool_call_id || [...turn.segments].reverse().find((s) => s.kind === "tool" && s.name === data.tool_name && !s.result)?.key || `${data.tool_name}-r${turn.segments.length}`;
      const seg = segmentBy(turn, "tool", key, () => ({ name: data.tool_name || "", args: {}, result: null }));
      const { tool_call_id, tool_name, success, error, duration_ms, output, ...rest } = data;
      seg.result = {
        success: f.response_type === "error" ? false : success !== false,
        output: output ?? f.content ?? "", error: error || (f.response_type === "error" ? f.content : ""),
        durationMs: duration_ms, data: rest,
      };
      break;
    }
    case "references": {
      const refs = f.knowledge_references || data.references;
      if (Array.isArray(refs)) turn.references = refs;
      break;
    }
    case "tool_approval_required": {
      const key = data.pending_id || `approval-${turn.segments.length}`;
      const seg = segmentBy(turn, "approval", key, () => ({ pendingId: data.pending_id, status: "pending" }));
      seg.toolName = data.tool_name || data.name || "";
      seg.args = data.arguments ?? data.args ?? {};
      seg.text = f.content || "";
      break;
    }
    case "tool_approval_resolved": {
      const seg = turn.segments.find((s) => s.kind === "approval" && s.pendingId === data.pending_id);
      if (seg) seg.status = data.approved === false || data.decision === "deny" || data.status === "denied" ? "denied" : "approved";
      break;
    }
    case "debug":
    case "stage_timing":
      mergeDebug(turn, data);
      break;
    case "complete":
      if (turn.status === "streaming") turn.status = "complete";
      turn.durationMs = data.total_duration_ms || turn.durationMs;
      if (data.debug) mergeDebug(turn, data.debug);
      break;
    case "stop":
      turn.status = "stopped";
      break;
    case "session_title":
      turn.title = f.content || data.title || "";
      break;
    default:
      break; // reflection, memory_recalled, mcp_oauth_* …: not shown
  }
  return turn;
}

export function isTerminal(turn) { return turn.status !== "streaming"; }

// Splits the segments into the step tree and the final answer: an answer segment followed by a tool call (or an
// approval) is a preamble and belongs to the steps; the answer is what comes after the last tool step.
export function layout(turn) {
  let lastTool = -1;
  turn.segments.forEach((s, i) => { if (s.kind === "tool" || s.kind === "approval") lastTool = i; });
  const steps = [];
  const answer = [];
  turn.segments.forEach((s, i) => {
    if (s.kind === "answer" && i > lastTool) answer.push(s);
    else steps.push(s.kind === "answer" ? { ...s, kind: "preamble" } : s);
  });
  return { steps, answer: answer.map((s) => s.content).join(""), answerSegments: answer };
}

// Builds a turn from a stored Message (history): content, knowledge_references, agent_steps, debug.
export function fromMessage(msg) {
  const turn = newTurn({ messageId: msg.id, sessionId: msg.session_id });
  turn.requestId = msg.request_id || "";
  turn.references = msg.knowledge_references || [];
  turn.isFallback = !!msg.is_fallback;
  turn.modelId = msg.model_id || "";
  turn.durationMs = msg.agent_duration_ms || 0;
  for (const [i, step] of (msg.agent_steps || []).entries()) {
    const thought = step.thought || step.reasoning_content;
    if (thought) turn.segments.push({ kind: "thinking", key: `t${i}`, content: thought, done: true });
    for (const [j, tc] of (step.tool_calls || []).entries()) {
      const r = tc.result || {};
      turn.segments.push({
        kind: "tool", key: tc.id || `tc${i}-${j}`, name: tc.name || tc.tool_name || "",
        args: tc.args ?? tc.arguments ?? {},
        result: tc.result == null ? null : { success: r.success !== false, output: r.output ?? "", error: r.error || "", durationMs: tc.duration ?? r.duration_ms, data: r.data || {} },
      });
    }
    if (step.type === "tool_call" || step.tool_name) {
      turn.segments.push({ kind: "tool", key: step.tool_call_id || `s${i}`, name: step.tool_name || step.name || "", args: step.arguments ?? step.args ?? {},
        result: step.output !== undefined || step.success !== undefined ? { success: step.success !== false, output: step.output ?? "", error: step.error || "", durationMs: step.duration_ms, data: {} } : null });
    }
  }
  if (msg.content) turn.segments.push({ kind: "answer", key: "answer", content: msg.content, done: true, isFallback: !!msg.is_fallback });
  mergeDebug(turn, msg.debug);
  turn.status = msg.is_completed === false ? "streaming" : "complete";
  return turn;
}
