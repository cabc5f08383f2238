"""The agent's own prompt texts (written for Knora; the shape follows spec §6.8, the words are ours)."""

from __future__ import annotations

from datetime import UTC, datetime

RAG_SYSTEM = """You are a research assistant that answers questions from the user's knowledge bases.
Work in rounds: decide what you still need, call a tool to get it, read the result, and repeat until you can
answer. Search before you answer: never answer questions about the knowledge bases from memory. Prefer a few
focused searches over one vague search; read whole documents when a hit looks relevant but incomplete.
Knowledge bases: {knowledge_bases}
Web search: {web_search_status}. Current time: {current_time}.
When you have enough evidence, write the complete answer as plain text without calling any tool, \
in {language}.
If the knowledge bases do not contain the answer, say so plainly instead of guessing."""

PURE_SYSTEM = """You are a helpful assistant. Use the available tools when they help; otherwise answer \
directly.
Web search: {web_search_status}. Current time: {current_time}.
When you are done, write the complete answer as plain text without calling any tool, in {language}."""

USER_TURN_NOTE = ("<answer_instruction>Write the complete answer once you have enough evidence and stop "
                  "calling tools; do not give partial answers mid-investigation. Never mention internal tool "
                  "names or ids to the user: say \"keyword search\", \"semantic search\" or \"reading the "
                  "document\".</answer_instruction>")

EMPTY_ANSWER_NUDGE = "Please provide your complete answer now as plain text."
EMPTY_ANSWER_FALLBACK = "I'm sorry, I was unable to generate a response. Please try again."
MAX_ITERATIONS_FALLBACK = "Sorry, I was unable to generate a complete answer."
CONTENT_FILTER_ANSWER = ("Sorry, this request was blocked by the content safety policy. "
                         "Please try rephrasing your question.")
DUPLICATE_CALL = ("Duplicate tool call: {name} was already called with exactly these arguments earlier in "
                  "this run and its result is above. Do not repeat it; change the arguments or write the "
                  "answer.")
SYNTHESIS = ("Based on the above tool call results, generate a complete answer for the user's question.\n"
             "User question: {query}\nRequirements:\n1. Answer based on the actually retrieved content\n"
             "2. Organize the answer in a structured format\n"
             "3. If information is insufficient, honestly state so\n"
             "4. IMPORTANT: Respond in the same language as the user's question\n"
             "Now generate the final answer:")

LANGUAGES = {"zh": "Chinese (Simplified)", "zh-cn": "Chinese (Simplified)", "zh-tw": "Chinese (Traditional)",
             "en": "English", "en-us": "English", "ja": "Japanese", "ko": "Korean", "ru": "Russian"}


def language_name(code: str) -> str:
    return LANGUAGES.get(code.strip().lower(), code) if code else "the same language as the user's question"


def system_prompt(*, custom: str, has_knowledge: bool, kb_names: list[str], web_enabled: bool, language: str,
                  protocol: str, extra: str = "") -> str:
    values = {"knowledge_bases": ", ".join(kb_names) if kb_names else "(see the tools' scope)",
              "web_search_status": "Enabled" if web_enabled else "Disabled",
              "current_time": datetime.now(UTC).isoformat(timespec="seconds"),
              "language": language_name(language)}
    template = custom or (RAG_SYSTEM if has_knowledge else PURE_SYSTEM)
    text = template
    for key, value in values.items():
        text = text.replace("{" + key + "}", value).replace("{{" + key + "}}", value)
    parts = [text.rstrip()]
    if extra:
        parts.append(extra)
    if protocol:
        parts.append(protocol)
    return "\n\n".join(parts)


def user_turn(query: str, *, must_use: list[str]) -> str:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    parts = [(f'<runtime_context scope="this_turn">\n<current_time>{now}</current_time>\n{USER_TURN_NOTE}\n'
             "</runtime_context>")]
    parts.extend(must_use)
    parts.append(query)
    return "\n\n".join(parts)
