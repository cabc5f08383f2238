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

NEEDS_CHAT_MODEL_EN = (
    "Smart reasoning needs a chat model, and none is configured: the agent plans its searches and writes its "
    "answer with the model, so it cannot run without one.\n\n"
    "- Switch the mode to **Quick answer** to get the most relevant sentences quoted from your documents, "
    "with citations, without a model.\n"
    "- Or configure a chat model (`KNORA_CHAT_MODEL`, or a KnowledgeQA model under Settings → Models) to use "
    "smart reasoning.")
NEEDS_CHAT_MODEL_ZH = (
    "智能推理需要对话模型，但当前没有配置：智能体依靠模型规划检索并撰写回答，没有模型无法运行。\n\n"
    "- 切换到**快速回答**模式，无需模型即可引用文档中最相关的原文句子（带引用）。\n"
    "- 或配置对话模型（`KNORA_CHAT_MODEL`，或在 设置 → 模型 中添加 KnowledgeQA 模型）后使用智能推理。")


def needs_chat_model(language: str, query: str) -> str:
    """What a smart-reasoning turn answers when the chat model is not generative (the extractive answerer)."""
    lang = language.strip().lower()
    zh = lang.startswith("zh") if lang else any("\u3400" <= ch <= "\u9fff" for ch in query)
    return NEEDS_CHAT_MODEL_ZH if zh else NEEDS_CHAT_MODEL_EN


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
