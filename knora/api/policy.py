"""Which role each route needs: the one place that decides (issue 14).

Every route's requirement is ``requirement(method, path template)``: the first matching rule below, else the
default — a read (GET) needs a viewer, any other method a contributor. The roles (``knora.domain.access``):

- **viewer** reads and chats: every GET, and the chat-class writes (sessions, turns, messages, feedback,
  searches, tool approvals, the OpenAI chat endpoint);
- **contributor** writes knowledge (knowledge bases, documents, chunks, FAQ, tags, evaluations): the default;
- **admin** manages models, agents, MCP services, web search, storage and parser settings, members,
  invitations, API keys, shares; reads the API keys and the audit log;
- **owner** deletes the tenant.

``public`` routes need no credentials (logging in); ``tenantless`` ones need a signed-in user or a key but no
role in a tenant (who am I, my invitations, create a tenant). ``audited`` routes are written to the audit log
when they succeed: every admin action and every deletion. A path with ``{tenant_id}`` must name the caller's
tenant (another tenant's id answers 404). A few routes of one knowledge base are open to another tenant
through a share (``shared_use``). The route × role matrix test (tests/api/test_policy_matrix.py)
walks every route of the OpenAPI document against this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knora.domain.access import Role, SharePermission


@dataclass(frozen=True)
class Rule:
    role: Role | None  # None: public
    audited: bool = False
    tenantless: bool = False

    @property
    def public(self) -> bool:
        return self.role is None


PUBLIC = Rule(None)
TENANTLESS = Rule(Role.VIEWER, tenantless=True)
VIEWER = Rule(Role.VIEWER)
CHAT = VIEWER  # a viewer's writes: chatting is what a viewer does
CONTRIBUTOR = Rule(Role.CONTRIBUTOR)
ADMIN = Rule(Role.ADMIN, audited=True)
ADMIN_READ = Rule(Role.ADMIN)
OWNER = Rule(Role.OWNER, audited=True)

_READ = frozenset({"GET", "HEAD"})
_WRITE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_ANY = _READ | _WRITE

# (methods, path pattern below /api/v1 — or /v1 for the OpenAI API —, rule); the first match wins.
_RULES: list[tuple[frozenset[str], str, Rule]] = [
    # --- logging in, and who I am ------------------------------------------------------------------------
    (frozenset({"POST"}), r"/auth/(login|register|refresh|auto-setup)", PUBLIC),
    (_READ, r"/auth/config", PUBLIC),
    (_ANY, r"/auth/(me|logout|validate|change-password)", TENANTLESS),
    (_ANY, r"/me/invitations(/.*)?", TENANTLESS),
    (_ANY, r"/tenants", TENANTLESS),  # my tenants; create one (its creator is its owner)
    # --- the tenant itself --------------------------------------------------------------------------------
    (frozenset({"DELETE"}), r"/tenants/\{tenant_id\}", OWNER),
    (_WRITE, r"/tenants/\{tenant_id\}", ADMIN),
    (frozenset({"POST"}), r"/tenants/\{tenant_id\}/leave", VIEWER),
    (_READ, r"/tenants/\{tenant_id\}/(api-keys|audit-log)(/.*)?", ADMIN_READ),
    (_WRITE, r"/tenants/\{tenant_id\}/(members|invitations|api-keys)(/.*)?", ADMIN),
    (_WRITE, r"/tenants/kv/.*", ADMIN),
    # --- what admins manage -------------------------------------------------------------------------------
    (_WRITE, r"/(models|agents|mcp-services|web-search-providers|storage-backends|initialization)(/.*)?",
     ADMIN),
    (_WRITE, r"/system/.*", ADMIN),  # checks that call remote services with the tenant's credentials
    (_WRITE, r"/(knowledge-bases|agents)/\{[a-z_]+\}/shares(/.*)?", ADMIN),
    # --- chatting (a viewer may) ----------------------------------------------------------------------------
    (frozenset({"POST"}), r"/(knowledge-chat|agent-chat)/\{session_id\}", CHAT),
    (_WRITE, r"/sessions(/.*)?", CHAT),
    (_WRITE, r"/messages/.*", CHAT),
    (frozenset({"POST"}), r"/agent/tool-approvals/.*", CHAT),
    (frozenset({"POST"}), r"/knowledge-search", CHAT),
    (frozenset({"POST"}), r"/knowledge-bases/\{kb_id\}/(hybrid-search|faq/search)", CHAT),
    (frozenset({"POST"}), r"/chat/completions", CHAT),  # the OpenAI API
]
_COMPILED = [(methods, re.compile(pattern + r"/?"), rule) for methods, pattern, rule in _RULES]

# The routes of one knowledge base — or of one of its documents — another tenant may use through a share, and
# what the share must grant: reading it (its settings, documents and their chunks, previews and files, tags,
# FAQ entries; searching it) or editing its documents (adding, changing, re-parsing and deleting documents,
# editing their chunks). Chat and cross-KB search reach shared knowledge bases through
# ``knora.services.retrieval.shared``.
_SHARED: list[tuple[frozenset[str], str, SharePermission]] = [
    (_READ, r"/knowledge-bases/\{kb_id\}(/(knowledge|tags|faq/entries))?", SharePermission.READ),
    (frozenset({"POST"}), r"/knowledge-bases/\{kb_id\}/(hybrid-search|faq/search)", SharePermission.READ),
    (frozenset({"POST"}), r"/knowledge-bases/\{kb_id\}/knowledge/(file|url|manual)", SharePermission.EDIT),
    (_READ, r"/(knowledge|chunks)/\{knowledge_id\}(/.*)?", SharePermission.READ),
    (_WRITE, r"/(knowledge|chunks)/\{knowledge_id\}(/.*)?", SharePermission.EDIT),
]
_SHARED_COMPILED = [(methods, re.compile(pattern + r"/?"), need) for methods, pattern, need in _SHARED]
_PREFIX = re.compile(r"^(/api/v1|/v1)")


def requirement(method: str, path: str) -> Rule:
    """The rule of a route, by method and path template (``/api/v1/knowledge-bases/{kb_id}``)."""
    method = method.upper()
    tail = _PREFIX.sub("", path, count=1)
    for methods, pattern, rule in _COMPILED:
        if method in methods and pattern.fullmatch(tail):
            return _audited(method, rule)
    return _audited(method, VIEWER if method in _READ else CONTRIBUTOR)


def shared_use(method: str, path: str) -> SharePermission | None:
    """What a share must grant for another tenant to call this knowledge-base route, or None when no share
    opens it (the route is the owning tenant's alone)."""
    method = method.upper()
    tail = _PREFIX.sub("", path, count=1)
    for methods, pattern, need in _SHARED_COMPILED:
        if method in methods and pattern.fullmatch(tail):
            return need
    return None


def _audited(method: str, rule: Rule) -> Rule:
    """Every deletion is audited, whoever may make it."""
    if method == "DELETE" and not rule.audited and not rule.public:
        return Rule(rule.role, audited=True, tenantless=rule.tenantless)
    return rule
