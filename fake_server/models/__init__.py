"""The fake's pure domain: World → Account → Sandbox → Process, no aiohttp.

Every API operation is one method on ``Account`` taking typed arguments, returning model
objects and raising ``ApiError`` subclasses; the HTTP layer only parses and serialises.
"""

from __future__ import annotations

from fake_server.models.account import Account, Page, Stats, World
from fake_server.models.account.execs import (
    ExecError,
    ExecEvent,
    ExecExit,
    ExecHeartbeat,
    ExecOutput,
    ExecResult,
    ExecSpec,
)
from fake_server.models.catalog import Catalog, RootfsEntry, Shape
from fake_server.models.context import Context
from fake_server.models.errors import (
    ApiError,
    BadGateway,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    MethodNotAllowed,
    NotFound,
    NotImplementedByFake,
    PayloadTooLarge,
    RateLimited,
    RequestTimeout,
    Unauthorized,
)
from fake_server.models.ids import IdGenerator
from fake_server.models.journal.events import Event, Journal
from fake_server.models.output import OutputFrame, OutputJournal
from fake_server.models.process import (
    ExitFrame,
    ExpiredFrame,
    Frame,
    HeartbeatFrame,
    Process,
    ProcessSpec,
)
from fake_server.models.sandbox import STATUSES, Sandbox, SandboxSpec
from fake_server.models.transitions import Step, TransitionPolicy

__all__ = [
    "STATUSES",
    "Account",
    "ApiError",
    "BadGateway",
    "BadRequest",
    "Catalog",
    "Conflict",
    "Context",
    "Event",
    "ExecError",
    "ExecEvent",
    "ExecExit",
    "ExecHeartbeat",
    "ExecOutput",
    "ExecResult",
    "ExecSpec",
    "ExitFrame",
    "ExpiredFrame",
    "Forbidden",
    "Frame",
    "Gone",
    "HeartbeatFrame",
    "IdGenerator",
    "InternalError",
    "Journal",
    "MethodNotAllowed",
    "NotFound",
    "NotImplementedByFake",
    "OutputFrame",
    "OutputJournal",
    "Page",
    "PayloadTooLarge",
    "Process",
    "ProcessSpec",
    "RateLimited",
    "RequestTimeout",
    "RootfsEntry",
    "Sandbox",
    "SandboxSpec",
    "Shape",
    "Stats",
    "Step",
    "TransitionPolicy",
    "Unauthorized",
    "World",
]
