"""User accounts: registration, login with a password, access and refresh tokens, logout, password changes,
and the principal a token stands for (issue 14).

- Passwords are hashed with Argon2id (``argon2-cffi``; memory and passes from settings, OWASP's minimum by
  default) in a worker thread: a hash costs about 0.1 s of CPU, which the event loop must not wait for.
  An unknown login is verified against a dummy hash, so it takes as long and gets the same answer as a
  wrong password.
- An access token is a JWT (HS256, ``PyJWT``) signed with a key derived from ``KNORA_SECRET_KEY`` (so every
  replica verifies every replica's tokens) and valid for ``ACCESS_TTL``; it names its login session. A refresh
  token is an opaque random string stored only as a hash and replaced on each use.
- A token's role is read from the database, not from the token: what a user may do follows membership changes,
  logouts and password changes within ``RECHECK_SECONDS`` on every replica, like a revoked API key.
- Failed logins back off per account and per client address: a few attempts at once, then one per interval
  (``knora.ports.rate_limit`` budgets; on Redis they are shared by every replica).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from knora.domain.access import Member, Principal, Role, User
from knora.domain.errors import BadRequest, TooManyRequests, Unauthorized
from knora.ports.account_store import AccountRepo
from knora.ports.rate_limit import Budget, RateLimiter
from knora.ports.secrets import SecretBox

ACCESS_TTL = timedelta(minutes=15)
REFRESH_TTL = timedelta(days=30)
RECHECK_SECONDS = 1.0  # a token's role is confirmed with the database again after this
_ALGORITHM = "HS256"
_VERIFIED_MAX = 50_000  # verified tokens remembered (cleared when full)
_REFRESH_PREFIX = "rt-"
# Failed logins: a burst of attempts, then one more per window / limit seconds.
ACCOUNT_FAILURES = Budget(5, 300.0)  # 5 at once, then one a minute, per account
ADDRESS_FAILURES = Budget(20, 300.0)  # 20 at once, then one per 15 s, per client address
BAD_LOGIN = "Invalid username, e-mail or password"
_USERNAME = re.compile(r"^[A-Za-z0-9_.-]{3,64}$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,253}$")
MIN_PASSWORD = 8


def looks_like_token(credential: str) -> bool:
    """Whether a credential is one of our JWTs rather than an API key (three base64url parts)."""
    return credential.startswith("eyJ") and credential.count(".") == 2


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str
    expires_in: int  # seconds the access token is valid


@dataclass(frozen=True)
class Login:
    user: User
    tokens: Tokens
    memberships: list[Member]
    tenant_id: int | None  # the tenant the tokens act in first (the first membership), or None


def _peek(budget: Budget) -> Budget:
    """The budget whose cost-0 hit is refused exactly when a cost-1 hit of ``budget`` would be: it answers
    "is this caller backing off?" without spending anything."""
    return Budget(budget.limit - 1, budget.window_seconds - budget.interval)


class AccountService:
    def __init__(self, repo: AccountRepo, box: SecretBox, limiter: RateLimiter, *, memory_kib: int = 19456,
                 iterations: int = 2, clock: type[datetime] = datetime) -> None:
        self._repo = repo
        self._key = box.derive("access-token-v1")
        self._limiter = limiter
        self._hasher = PasswordHasher(time_cost=iterations, memory_cost=memory_kib, parallelism=1)
        self._dummy: str | None = None  # what an unknown login is verified against (made on first use)
        self._clock = clock
        # (session, tenant) → (role or None, when the database last said so)
        self._roles: dict[tuple[str, int], tuple[tuple[bool, Role | None], float]] = {}
        self._verified: dict[str, dict[str, object]] = {}  # access token → its verified claims

    def _now(self) -> datetime:
        return self._clock.now(UTC)

    # --- accounts -------------------------------------------------------------------------------------------
    async def register(self, username: str, email: str, password: str) -> User:
        username, email = username.strip(), email.strip().lower()
        if not _USERNAME.match(username):
            raise BadRequest("username: 3–64 letters, digits, '_', '.' or '-'")
        if not _EMAIL.match(email):
            raise BadRequest("email: not an e-mail address")
        check_password(password)
        return await self._repo.create_user(username, email, await self._hash(password))

    async def _hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def _verify(self, stored: str, password: str) -> bool:
        def verify() -> bool:
            try:
                return self._hasher.verify(stored, password)
            except (VerificationError, InvalidHashError):
                return False
        return await asyncio.to_thread(verify)

    async def users(self) -> list[User]:
        return await self._repo.users()

    async def user(self, user_id: str) -> User | None:
        found = await self._repo.user(user_id)
        return None if found is None else found[0]

    async def find(self, login: str) -> User | None:
        found = await self._repo.user_by_login(login.strip())
        return None if found is None else found[0]

    async def memberships(self, user_id: str) -> list[Member]:
        return await self._repo.memberships(user_id)

    # --- login ----------------------------------------------------------------------------------------------
    async def login(self, login: str, password: str, address: str) -> Login:
        """Tokens for a user whose password is right. Wrong or unknown: 401 with one message; too many
        failures for this account or address: 429 with the wait."""
        login = login.strip()
        keys = [(f"login-fail:acct:{_digest(login.lower())}", ACCOUNT_FAILURES),
                (f"login-fail:ip:{address}", ADDRESS_FAILURES)]
        for key, budget in keys:
            decision = await self._limiter.hit(key, _peek(budget), cost=0)
            if not decision.allowed:
                wait = max(1, round(decision.retry_after))
                raise TooManyRequests(f"Too many failed logins: retry after {wait} s",
                                      retry_after=decision.retry_after)
        found = await self._repo.user_by_login(login) if login else None
        if found is None and self._dummy is None:
            self._dummy = await self._hash(secrets.token_hex(16))
        ok = await self._verify(found[1] if found else self._dummy or "", password) and found is not None
        if not ok or found is None or not found[0].is_active:
            for key, budget in keys:
                await self._limiter.hit(key, budget)
            raise Unauthorized(BAD_LOGIN)
        user = found[0]
        if self._hasher.check_needs_rehash(found[1]):
            await self._repo.set_password(user.id, await self._hash(password))
        memberships = await self._repo.memberships(user.id)
        tenant_id = memberships[0].tenant_id if memberships else None
        return Login(user, await self._new_session(user.id, tenant_id), memberships, tenant_id)

    async def _new_session(self, user_id: str, tenant_id: int | None) -> Tokens:
        refresh = _REFRESH_PREFIX + secrets.token_urlsafe(32)
        session_id = await self._repo.create_session(user_id, _digest(refresh), self._now() + REFRESH_TTL)
        return Tokens(self._access(user_id, session_id, tenant_id), refresh, int(ACCESS_TTL.total_seconds()))

    def _access(self, user_id: str, session_id: str, tenant_id: int | None) -> str:
        now = self._now()
        claims: dict[str, object] = {"sub": user_id, "sid": session_id, "typ": "access",
                                     "iat": int(now.timestamp()), "exp": int((now + ACCESS_TTL).timestamp())}
        if tenant_id is not None:
            claims["tid"] = tenant_id
        return jwt.encode(claims, self._key, algorithm=_ALGORITHM)

    async def refresh(self, refresh_token: str, tenant_id: int | None = None) -> Tokens:
        """New tokens for a live refresh token, which stops working (rotation: a stolen token used twice
        fails for one of the two)."""
        if not refresh_token.startswith(_REFRESH_PREFIX):
            raise Unauthorized("Unauthorized: invalid or expired token")
        new = _REFRESH_PREFIX + secrets.token_urlsafe(32)
        now = self._now()
        found = await self._repo.rotate_session(_digest(refresh_token), _digest(new), now, now + REFRESH_TTL)
        if found is None:
            raise Unauthorized("Unauthorized: invalid or expired token")
        session_id, user_id = found
        if tenant_id is None:
            memberships = await self._repo.memberships(user_id)
            tenant_id = memberships[0].tenant_id if memberships else None
        return Tokens(self._access(user_id, session_id, tenant_id), new, int(ACCESS_TTL.total_seconds()))

    async def logout(self, principal: Principal) -> None:
        """Ends the caller's login session: its refresh token and every access token of it stop working."""
        if principal.user_id is not None and principal.session_id is not None:
            await self._repo.end_sessions(principal.user_id, session_id=principal.session_id)
            self._forget(principal.session_id)

    async def change_password(self, principal: Principal, old: str, new: str) -> None:
        """Sets a new password after checking the old one; every other login session of the user ends."""
        if principal.user_id is None:
            raise BadRequest("Only a signed-in user has a password (this request used an API key)")
        if not old:
            raise BadRequest("old_password is required")
        found = await self._repo.user(principal.user_id)
        # 400, not 401: WeKnora's UI takes a 401 for an expired session and signs the user out
        if found is None or not await self._verify(found[1], old):
            raise BadRequest("The current password is wrong")
        check_password(new)
        await self._repo.set_password(principal.user_id, await self._hash(new))
        await self._repo.end_sessions(principal.user_id, keep=principal.session_id)
        self._roles = {k: v for k, v in self._roles.items() if k[0] == principal.session_id}

    async def set_password(self, user_id: str, password: str) -> None:
        """An operator's reset (``knora user create``/CLI): every login session of the user ends."""
        check_password(password)
        await self._repo.set_password(user_id, await self._hash(password))
        await self._repo.end_sessions(user_id)

    # --- who a token is -------------------------------------------------------------------------------------
    def claims(self, token: str) -> dict[str, object] | None:
        """The claims of a valid, unexpired access token of ours, else None. A token verified once is
        remembered (its claims cannot change; its expiry is checked on every use): a request then costs a
        dict lookup, not a signature check."""
        known = self._verified.get(token)
        if known is not None:
            return known if time.time() < float(str(known["exp"])) else None
        try:
            claims: dict[str, object] = jwt.decode(token, self._key, algorithms=[_ALGORITHM],
                                                   options={"require": ["exp", "sub", "sid"]})
        except jwt.PyJWTError:
            return None
        if claims.get("typ") != "access":
            return None
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified[token] = claims
        return claims

    async def principal(self, token: str, tenant_id: int | None) -> Principal | None:
        """The principal an access token stands for in ``tenant_id`` (else the token's tenant): None when
        the token is invalid or expired, its session ended or its user inactive. A user who is not a member
        of that tenant (or of none) is a principal with ``in_tenant=False``: it may call only the routes that
        need no tenant (who am I, my invitations, create a tenant)."""
        claims = self.claims(token)
        if claims is None:
            return None
        user_id, session_id = str(claims["sub"]), str(claims["sid"])
        if tenant_id is None:
            tid = claims.get("tid")
            tenant_id = tid if isinstance(tid, int) else 0
        live, role = await self._role(session_id, user_id, tenant_id)
        if not live:
            return None
        return Principal(tenant_id=tenant_id, role=role or Role.VIEWER, user_id=user_id,
                         session_id=session_id, in_tenant=role is not None)

    async def _role(self, session_id: str, user_id: str, tenant_id: int) -> tuple[bool, Role | None]:
        cached = self._roles.get((session_id, tenant_id))
        if cached is not None and time.monotonic() - cached[1] < RECHECK_SECONDS:
            return cached[0]
        found = await self._repo.session_role(session_id, user_id, tenant_id, self._now())
        if len(self._roles) > 100_000:
            self._roles.clear()
        self._roles[(session_id, tenant_id)] = (found, time.monotonic())
        return found

    def _forget(self, session_id: str) -> None:
        self._roles = {k: v for k, v in self._roles.items() if k[0] != session_id}

    def forget_member(self, tenant_id: int) -> None:
        """After a membership change in this process: its cached roles in that tenant are read again (other
        replicas learn within ``RECHECK_SECONDS``)."""
        self._roles = {k: v for k, v in self._roles.items() if k[1] != tenant_id}


def check_password(password: str) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise BadRequest(f"password: at least {MIN_PASSWORD} characters")
    if len(password) > 1024:
        raise BadRequest("password: at most 1024 characters")
