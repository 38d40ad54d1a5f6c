"""Typed API errors: models raise them, only the HTTP layer renders them as envelopes."""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ApiError",
    "BadGateway",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InsufficientStorage",
    "InternalError",
    "MethodNotAllowed",
    "NotFound",
    "NotImplementedByFake",
    "PayloadTooLarge",
    "RateLimited",
    "RequestTimeout",
    "Unauthorized",
]


class ApiError(Exception):
    """An error the real API documents, with its HTTP status and a snake_case code.

    ``field`` names the request field at fault; 4xx errors with a field render as
    ``{"status": "fail", "data": {field: message}}``, other 4xx as
    ``{"status": "fail", "data": {"code": ..., "message": ...}}`` and 5xx as
    ``{"status": "error", "code": ..., "message": ...}``.
    """

    status: ClassVar[int] = 500
    default_code: ClassVar[str] = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code or self.default_code
        self.headers = dict(headers or {})


class BadRequest(ApiError):
    status = 400
    default_code = "bad_request"


class Unauthorized(ApiError):
    status = 401
    default_code = "unauthorized"


class NotFound(ApiError):
    status = 404
    default_code = "not_found"


class Forbidden(ApiError):
    status = 403
    default_code = "forbidden"


class MethodNotAllowed(ApiError):
    status = 405
    default_code = "method_not_allowed"


class RequestTimeout(ApiError):
    status = 408
    default_code = "wait_timeout"


class Conflict(ApiError):
    status = 409
    default_code = "conflict"


class Gone(ApiError):
    status = 410
    default_code = "output_offset_expired"


class PayloadTooLarge(ApiError):
    status = 413
    default_code = "payload_too_large"


class RateLimited(ApiError):
    status = 429
    default_code = "rate_limited"

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            "rate limit exceeded; retry later",
            headers={"Retry-After": str(max(1, retry_after))},
        )
        self.retry_after = max(1, retry_after)


class InternalError(ApiError):
    status = 500
    default_code = "internal_error"


class BadGateway(ApiError):
    """Nothing answers behind a sandbox's preview URL (no server on that port)."""

    status = 502
    default_code = "bad_gateway"


class InsufficientStorage(ApiError):
    """The sandbox's disk is full (the fake's disk is an in-memory filesystem with a cap)."""

    status = 507
    default_code = "insufficient_storage"


class NotImplementedByFake(ApiError):
    status = 501
    default_code = "not_implemented_by_fake"
