// UI strings in English and Chinese. t(key, vars) falls back to English, then to the key itself.

const STRINGS = {
  en: {
    "app.name": "Knora", "nav.chat": "Chat", "nav.knowledge": "Knowledge", "nav.settings": "Settings",
    "login.title": "Sign in to Knora", "login.hint": "Paste the tenant's API key (printed by `knora serve`).",
    "login.key": "API key", "login.submit": "Sign in", "login.bad": "That key was not accepted.",
    "logout": "Sign out", "cancel": "Cancel", "save": "Save", "delete": "Delete", "create": "Create",
    "edit": "Edit", "close": "Close", "loading": "Loading…", "retry": "Retry", "ok": "OK",
    "confirm.delete": "Delete “{name}”? This cannot be undone.",
    "sessions.new": "New chat", "sessions.untitled": "New conversation", "sessions.rename": "Rename",
    "sessions.pin": "Pin", "sessions.unpin": "Unpin", "sessions.more": "Load more", "sessions.title": "Title",
    "sessions.menu": "Conversation actions", "sessions.empty": "No conversations yet.",
    "chat.placeholder": "Ask a question… (Enter to send, Shift+Enter for a new line, @ to scope)",
    "chat.send": "Send", "chat.stop": "Stop", "chat.mode": "Mode", "chat.mode.quick": "Quick answer",
    "chat.mode.smart": "Smart reasoning", "chat.websearch": "Web search", "chat.earlier": "Load earlier messages",
    "chat.empty": "Ask anything about your knowledge bases.", "chat.scope": "Scope", "chat.scope.all": "All knowledge bases",
    "chat.removeScope": "Remove {name} from the scope", "chat.stopped": "Stopped by user.",
    "chat.resuming": "Resuming the answer…", "chat.noKb": "No knowledge base yet — add one under Knowledge.",
    "chat.mention.kb": "Knowledge base", "chat.mention.doc": "Document", "chat.mention.none": "No match",
    "answer.references": "References ({n})", "answer.debug": "Debug", "answer.copy": "Copy",
    "answer.thinking": "Thinking", "answer.steps": "Reasoning steps ({n})", "answer.tool": "Tool: {name}",
    "answer.args": "Arguments", "answer.result": "Result", "answer.preamble": "Note",
    "answer.approval": "“{name}” needs your approval to run.", "answer.approve": "Approve", "answer.deny": "Deny",
    "answer.approved": "Approved", "answer.denied": "Denied", "answer.error": "Error: {msg}",
    "answer.fallback": "Fallback answer (no matching content)", "answer.model": "Answered by {model}",
    "cite.document": "Document", "cite.score": "Score", "cite.open": "Open document", "cite.web": "Web page",
    "cite.unknown": "Source not in this answer's references.",
    "debug.title": "Answer debug", "debug.timings": "Stage timings", "debug.stage": "Stage", "debug.ms": "ms",
    "debug.kept": "Kept", "debug.chunks": "Retrieved chunks", "debug.none": "No debug data for this answer.",
    "debug.doc": "Document", "debug.vector": "Vector", "debug.keyword": "Keyword", "debug.fused": "Fused",
    "debug.rerank": "Rerank", "debug.score": "Score", "debug.match": "Match", "debug.total": "Total",
    "kb.list": "Knowledge bases", "kb.new": "New knowledge base", "kb.name": "Name", "kb.description": "Description",
    "kb.type": "Type", "kb.type.document": "Documents", "kb.type.faq": "FAQ", "kb.docs": "{n} documents",
    "kb.chunks": "{n} chunks", "kb.empty": "No knowledge bases yet.", "kb.tab.docs": "Documents",
    "kb.tab.faq": "FAQ", "kb.tab.search": "Search playground", "kb.tab.settings": "Settings",
    "kb.chunkSize": "Chunk size", "kb.chunkOverlap": "Chunk overlap", "kb.embedding": "Embedding model",
    "kb.summary": "Chat model", "kb.defaultModel": "Server default", "kb.saved": "Saved.", "kb.back": "All knowledge bases",
    "doc.upload": "Upload files", "doc.uploadFolder": "Upload a folder", "doc.url": "Add URL", "doc.manual": "Write an entry",
    "doc.title": "Title", "doc.content": "Content", "doc.status": "Status", "doc.size": "Size", "doc.updated": "Updated",
    "doc.empty": "No documents yet. Upload files or a whole folder.", "doc.status.pending": "Pending",
    "doc.status.processing": "Processing", "doc.status.finalizing": "Finalizing", "doc.status.completed": "Ready",
    "doc.status.failed": "Failed", "doc.status.cancelled": "Cancelled", "doc.chunks": "Chunks",
    "doc.reparse": "Re-parse", "doc.drop": "Drop files here", "doc.uploading": "Uploading {name}", "doc.uploaded": "{n} uploaded",
    "doc.duplicate": "{name} is already in this knowledge base.",
    "chunk.title": "Chunks of “{name}”", "chunk.enabled": "Enabled", "chunk.empty": "No chunks (yet).",
    "chunk.saved": "Chunk saved.", "chunk.index": "#{n}", "doc.skipped": "Partly parsed: {n} part(s) left out", "doc.progress.embedding": "Embedding {done} / {total}", "doc.progress.indexing": "Indexing {total} passages", "doc.progress.left": "{time} left",
    "chunk.page": "p. {n}", "chunk.pages": "pp. {a}–{b}", "chunk.kind.slide": "slide", "chunk.kind.sheet": "sheet",
    "chunk.kind.section": "section", "chunk.kind.attachment": "attachment", "chunk.image": "Image from the document",
    "chunk.imageMissing": "(image unavailable)",
    "faq.question": "Standard question", "faq.similar": "Similar questions (one per line)",
    "faq.answers": "Answers (one per line)", "faq.add": "Add entry", "faq.empty": "No FAQ entries yet.",
    "search.query": "Query", "search.run": "Search", "search.vectorThreshold": "Vector threshold",
    "search.keywordThreshold": "Keyword threshold", "search.matchCount": "Results", "search.noVector": "No vector path",
    "search.noKeyword": "No keyword path", "search.empty": "No results.",
    "settings.title": "Settings", "settings.models": "Models", "settings.apiKey": "API key",
    "settings.language": "Language", "settings.show": "Show", "settings.hide": "Hide", "settings.copy": "Copy",
    "settings.copied": "Copied.", "settings.changeKey": "Use another key",
    "model.add": "Add model", "model.name": "Model name", "model.type": "Type", "model.source": "Source",
    "model.baseUrl": "Base URL", "model.apiKey": "API key (left empty: unchanged)", "model.dimension": "Embedding dimension",
    "model.test": "Test connection", "model.testOk": "Connection OK.", "model.testFail": "Connection failed: {msg}",
    "model.testUnsupported": "This server has no connection test (POST /models/:id/debug).",
    "model.default": "default", "model.builtin": "built-in", "model.empty": "No models configured; the local extractive answerer is used.",
    "model.type.KnowledgeQA": "Chat", "model.type.Embedding": "Embedding", "model.type.Rerank": "Rerank",
    "model.type.VLLM": "Vision", "error.generic": "Something went wrong: {msg}", "error.notFound": "Not found.",
  },
  zh: {
    "app.name": "Knora", "nav.chat": "对话", "nav.knowledge": "知识库", "nav.settings": "设置",
    "login.title": "登录 Knora", "login.hint": "粘贴租户的 API Key（`knora serve` 启动时会打印）。",
    "login.key": "API Key", "login.submit": "登录", "login.bad": "该 Key 无效。",
    "logout": "退出登录", "cancel": "取消", "save": "保存", "delete": "删除", "create": "创建",
    "edit": "编辑", "close": "关闭", "loading": "加载中…", "retry": "重试", "ok": "确定",
    "confirm.delete": "删除“{name}”？此操作无法撤销。",
    "sessions.new": "新对话", "sessions.untitled": "新的对话", "sessions.rename": "重命名",
    "sessions.pin": "置顶", "sessions.unpin": "取消置顶", "sessions.more": "加载更多", "sessions.title": "标题",
    "sessions.menu": "对话操作", "sessions.empty": "还没有对话。",
    "chat.placeholder": "输入问题…（Enter 发送，Shift+Enter 换行，@ 指定范围）",
    "chat.send": "发送", "chat.stop": "停止", "chat.mode": "模式", "chat.mode.quick": "快速回答",
    "chat.mode.smart": "智能推理", "chat.websearch": "联网搜索", "chat.earlier": "加载更早的消息",
    "chat.empty": "就你的知识库提任何问题。", "chat.scope": "范围", "chat.scope.all": "全部知识库",
    "chat.removeScope": "从范围中移除 {name}", "chat.stopped": "已被用户停止。",
    "chat.resuming": "正在恢复回答…", "chat.noKb": "还没有知识库——请在“知识库”中添加。",
    "chat.mention.kb": "知识库", "chat.mention.doc": "文档", "chat.mention.none": "无匹配",
    "answer.references": "参考来源（{n}）", "answer.debug": "调试", "answer.copy": "复制",
    "answer.thinking": "思考", "answer.steps": "推理步骤（{n}）", "answer.tool": "工具：{name}",
    "answer.args": "参数", "answer.result": "结果", "answer.preamble": "说明",
    "answer.approval": "“{name}” 需要你的批准才能运行。", "answer.approve": "批准", "answer.deny": "拒绝",
    "answer.approved": "已批准", "answer.denied": "已拒绝", "answer.error": "错误：{msg}",
    "answer.fallback": "兜底回答（未找到匹配内容）", "answer.model": "回答模型：{model}",
    "cite.document": "文档", "cite.score": "得分", "cite.open": "打开文档", "cite.web": "网页",
    "cite.unknown": "该来源不在本回答的参考列表中。",
    "debug.title": "回答调试", "debug.timings": "各阶段耗时", "debug.stage": "阶段", "debug.ms": "毫秒",
    "debug.kept": "保留", "debug.chunks": "召回的分块", "debug.none": "本回答没有调试数据。",
    "debug.doc": "文档", "debug.vector": "向量", "debug.keyword": "关键词", "debug.fused": "融合",
    "debug.rerank": "重排", "debug.score": "得分", "debug.match": "匹配", "debug.total": "合计",
    "kb.list": "知识库", "kb.new": "新建知识库", "kb.name": "名称", "kb.description": "描述",
    "kb.type": "类型", "kb.type.document": "文档", "kb.type.faq": "问答", "kb.docs": "{n} 个文档",
    "kb.chunks": "{n} 个分块", "kb.empty": "还没有知识库。", "kb.tab.docs": "文档",
    "kb.tab.faq": "问答", "kb.tab.search": "检索测试", "kb.tab.settings": "设置",
    "kb.chunkSize": "分块大小", "kb.chunkOverlap": "分块重叠", "kb.embedding": "向量模型",
    "kb.summary": "对话模型", "kb.defaultModel": "服务器默认", "kb.saved": "已保存。", "kb.back": "全部知识库",
    "doc.upload": "上传文件", "doc.uploadFolder": "上传文件夹", "doc.url": "添加网址", "doc.manual": "手动录入",
    "doc.title": "标题", "doc.content": "内容", "doc.status": "状态", "doc.size": "大小", "doc.updated": "更新时间",
    "doc.empty": "还没有文档。上传文件或整个文件夹。", "doc.status.pending": "等待中",
    "doc.status.processing": "解析中", "doc.status.finalizing": "收尾中", "doc.status.completed": "就绪",
    "doc.status.failed": "失败", "doc.status.cancelled": "已取消", "doc.chunks": "分块",
    "doc.reparse": "重新解析", "doc.drop": "拖放文件到这里", "doc.uploading": "正在上传 {name}", "doc.uploaded": "已上传 {n} 个",
    "doc.duplicate": "{name} 已在该知识库中。",
    "chunk.title": "“{name}”的分块", "chunk.enabled": "启用", "chunk.empty": "（暂时）没有分块。",
    "chunk.saved": "分块已保存。", "chunk.index": "#{n}", "doc.skipped": "部分解析：{n} 处未解析", "doc.progress.embedding": "向量化 {done} / {total}", "doc.progress.indexing": "正在写入索引（{total} 段）", "doc.progress.left": "剩余 {time}",
    "chunk.page": "第 {n} 页", "chunk.pages": "第 {a}–{b} 页", "chunk.kind.slide": "幻灯片", "chunk.kind.sheet": "工作表",
    "chunk.kind.section": "章节", "chunk.kind.attachment": "附件", "chunk.image": "文档中的图片",
    "chunk.imageMissing": "（图片不可用）",
    "faq.question": "标准问题", "faq.similar": "相似问题（每行一个）",
    "faq.answers": "答案（每行一个）", "faq.add": "添加条目", "faq.empty": "还没有问答条目。",
    "search.query": "查询", "search.run": "检索", "search.vectorThreshold": "向量阈值",
    "search.keywordThreshold": "关键词阈值", "search.matchCount": "结果数", "search.noVector": "关闭向量检索",
    "search.noKeyword": "关闭关键词检索", "search.empty": "没有结果。",
    "settings.title": "设置", "settings.models": "模型", "settings.apiKey": "API Key",
    "settings.language": "界面语言", "settings.show": "显示", "settings.hide": "隐藏", "settings.copy": "复制",
    "settings.copied": "已复制。", "settings.changeKey": "使用其他 Key",
    "model.add": "添加模型", "model.name": "模型名称", "model.type": "类型", "model.source": "来源",
    "model.baseUrl": "Base URL", "model.apiKey": "API Key（留空则不变）", "model.dimension": "向量维度",
    "model.test": "测试连接", "model.testOk": "连接正常。", "model.testFail": "连接失败：{msg}",
    "model.testUnsupported": "该服务器不提供连接测试（POST /models/:id/debug）。",
    "model.default": "默认", "model.builtin": "内置", "model.empty": "尚未配置模型；将使用本地抽取式回答。",
    "model.type.KnowledgeQA": "对话", "model.type.Embedding": "向量", "model.type.Rerank": "重排",
    "model.type.VLLM": "视觉", "error.generic": "出错了：{msg}", "error.notFound": "未找到。",
  },
};

const listeners = new Set();
let lang = initialLang();

function initialLang() {
  const saved = localStorage.getItem("knora.lang");
  if (saved && STRINGS[saved]) return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

export function getLang() { return lang; }
export function languages() { return Object.keys(STRINGS); }

export function setLang(next) {
  if (!STRINGS[next] || next === lang) return;
  lang = next;
  localStorage.setItem("knora.lang", next);
  document.documentElement.lang = next === "zh" ? "zh-CN" : "en";
  for (const fn of listeners) fn(next);
}

export function onLangChange(fn) { listeners.add(fn); return () => listeners.delete(fn); }

export function t(key, vars) {
  let s = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

export function missingKeys() {
  // Used by the tests: every English key has a Chinese translation and vice versa.
  const en = Object.keys(STRINGS.en), zh = Object.keys(STRINGS.zh);
  return { zh: en.filter((k) => !(k in STRINGS.zh)), en: zh.filter((k) => !(k in STRINGS.en)) };
}
