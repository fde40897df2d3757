"""Errors the server answers with, as exceptions that carry its error body."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Type

import httpx


class PangolinError(Exception):
    """An answer the server gave instead of what was asked: its status, the error's type (the
    Java exception name Pangolin uses, e.g. `NoSuchCatalogException`), its message and the whole
    body as sent."""

    def __init__(self, status: int, type: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {type}: {message}")
        self.status = status
        self.type = type
        self.message = message
        self.body = body


class BadRequestError(PangolinError):
    """400: the request is malformed or names something invalid."""


class UnauthorizedError(PangolinError):
    """401: no valid credential (signed out, expired, revoked, disabled)."""


class ForbiddenError(PangolinError):
    """403: the caller may not do this."""


class NotFoundError(PangolinError):
    """404: the catalog, reference, user, ... does not exist (in the caller's tenant)."""


class ConflictError(PangolinError):
    """409: a duplicate, a lost race (a reference moved since it was read), a delete that
    something still depends on, or a merge, cherry-pick or revert that left conflicts: those are
    in `conflicts`, and the whole answer in `result`."""

    def __init__(self, status: int, type: str, message: str, body: Any = None) -> None:
        super().__init__(status, type, message, body)
        from .models import Conflict, HistoryResult

        self.result: Optional[HistoryResult] = None
        self.conflicts: List[Conflict] = []
        if isinstance(body, dict) and "conflicts" in body:
            self.result = HistoryResult.model_validate(body)
            self.conflicts = list(self.result.conflicts)


class ServiceUnavailableError(PangolinError):
    """503: something the server depends on (its database, an identity or storage provider)
    cannot be reached; the request may work later."""


class ServerError(PangolinError):
    """Any other 5xx: the server failed; `message` carries the error id its log repeats."""


_BY_STATUS: Dict[int, Type[PangolinError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    503: ServiceUnavailableError,
}


def from_response(response: httpx.Response) -> PangolinError:
    """The exception for an answer that is not a success."""
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = response.text
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        kind = str(error.get("type", ""))
        message = str(error.get("message", ""))
    else:
        kind, message = "", str(body)[:500] or response.reason_phrase
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else PangolinError)
    return cls(status, kind, message, body)
