"""Pangolin's versioning and admin APIs from Python, with PyIceberg for the tables.

    from pangolin_client import PangolinClient

    client = PangolinClient("http://127.0.0.1:8080", api_key="pgl_...")
    client.branch("dev").create(from_="main")
    with client.branch_context("etl-2026-12-01", from_="main") as catalog:
        catalog.load_table("sales.orders").append(rows)   # merged into main on exit
"""

from ._api import Branch, Tag, Versioning
from .auth import Anonymous, ApiKey, Credential, Password, Token
from .client import AsyncPangolinClient, PangolinClient
from .errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PangolinError,
    ServerError,
    ServiceUnavailableError,
    UnauthorizedError,
)
from .models import (
    AssignedRef,
    AuditEvent,
    AuditVerification,
    Catalog,
    Change,
    Commit,
    CommitDetail,
    Conflict,
    Entry,
    ExpireResult,
    ExternalPrincipal,
    Grant,
    HistoryResult,
    ImportResult,
    Job,
    KeyedEntry,
    NewServiceKey,
    Orphan,
    Ref,
    ResolvedRef,
    Role,
    ServiceKey,
    ServiceUser,
    SweepResult,
    TableExpiry,
    Tenant,
    User,
    Warehouse,
    Whoami,
)

__all__ = [
    "Anonymous",
    "ApiKey",
    "AssignedRef",
    "AsyncPangolinClient",
    "AuditEvent",
    "AuditVerification",
    "BadRequestError",
    "Branch",
    "Catalog",
    "Change",
    "Commit",
    "CommitDetail",
    "Conflict",
    "ConflictError",
    "Credential",
    "Entry",
    "ExpireResult",
    "ExternalPrincipal",
    "ForbiddenError",
    "Grant",
    "HistoryResult",
    "ImportResult",
    "Job",
    "KeyedEntry",
    "NewServiceKey",
    "NotFoundError",
    "Orphan",
    "PangolinClient",
    "PangolinError",
    "Password",
    "Ref",
    "ResolvedRef",
    "Role",
    "ServerError",
    "ServiceUnavailableError",
    "ServiceKey",
    "ServiceUser",
    "SweepResult",
    "TableExpiry",
    "Tag",
    "Tenant",
    "Token",
    "UnauthorizedError",
    "User",
    "Versioning",
    "Warehouse",
    "Whoami",
]
