"""Application errors with WeKnora's integer codes (spec weknora-api §1.3). The API layer maps them to the
envelope."""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    status: int = 500
    code: int = 1007

    def __init__(self, message: str, *, details: Any = None, status: int | None = None,
                 code: int | None = None):
        super().__init__(message)
        self.message = message
        self.details = details
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class BadRequest(AppError):
    status, code = 400, 1000


class ValidationFailed(AppError):
    status, code = 400, 1010


class Unauthorized(AppError):
    status, code = 401, 1001


class Forbidden(AppError):
    status, code = 403, 1002


class NotFound(AppError):
    status, code = 404, 1003


class Conflict(AppError):
    status, code = 409, 1005


class TooManyRequests(AppError):
    """A spent budget (failed logins back off): answered with ``Retry-After``."""

    status, code = 429, 1006

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PayloadTooLarge(AppError):
    status, code = 413, 1000


class Unavailable(AppError):
    status, code = 503, 1008
