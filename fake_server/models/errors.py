"""Typed API errors: models raise them, only the HTTP layer renders them as envelopes."""

from __future__ import annotations

from typing import ClassVar, Final

__all__ = [
    "CAPACITY_RETRY_AFTER",
    "CODES",
    "NO_CAPACITY",
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
    "PaymentRequired",
    "QuotaExceeded",
    "RateLimited",
    "RequestTimeout",
    "ServiceUnavailable",
    "Unauthorized",
    "at_capacity",
    "code_for",
]

#: The error code each status carries unless an error names its own: the one table of them.
CODES: Final[dict[int, str]] = {
    400: "bad_request",
    401: "unauthorized",
    402: "payment_required",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "wait_timeout",
    409: "conflict",
    410: "output_offset_expired",
    413: "payload_too_large",
    429: "rate_limited",
    500: "internal_error",
    501: "not_implemented_by_fake",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
    507: "insufficient_storage",
}


def code_for(status: int) -> str:
    """The default code of ``status`` (``injected`` for one the API does not document)."""
    return CODES.get(status, "injected")


class ApiError(Exception):
    """An error the real API documents, with its HTTP status and a snake_case code.

    ``field`` names the request field at fault; 4xx errors with a field render as
    ``{"status": "fail", "data": {field: message}}``, other 4xx as
    ``{"status": "fail", "data": {"code": ..., "message": ...}}`` and 5xx as
    ``{"status": "error", "code": ..., "message": ...}``.
    """

    status: int = 500
    #: The code an error of this class carries unless it names its own; ``None``: its
    #: status's code in ``CODES``.
    default_code: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:  # an error of any status (an injected fault's)
            self.status = status
        self.message = message
        self.field = field
        self.code = code or self.default_code or code_for(self.status)
        self.headers = dict(headers or {})


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class PaymentRequired(ApiError):
    """The account has no credit for a cost-incurring call (``models.account.credit``)."""

    status = 402


class Forbidden(ApiError):
    status = 403


class QuotaExceeded(Forbidden):
    """An account resource past its per-account quota (the SDKs' ``PermissionError``)."""

    default_code = "quota_exceeded"


class NotFound(ApiError):
    status = 404


class MethodNotAllowed(ApiError):
    status = 405


class RequestTimeout(ApiError):
    status = 408


class Conflict(ApiError):
    status = 409


class Gone(ApiError):
    status = 410


class PayloadTooLarge(ApiError):
    status = 413


class RateLimited(ApiError):
    status = 429

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            "rate limit exceeded; retry later",
            headers={"Retry-After": str(max(1, retry_after))},
        )
        self.retry_after = max(1, retry_after)


class InternalError(ApiError):
    status = 500


class ServiceUnavailable(ApiError):
    """503: a part of the control plane the operator has not set up, or the fake stopping."""

    status = 503


class BadGateway(ApiError):
    """Nothing answers behind a sandbox's preview URL (no server on that port)."""

    status = 502


class InsufficientStorage(ApiError):
    """The sandbox's disk is full (the fake's disk is an in-memory filesystem with a cap)."""

    status = 507


#: The service's words for a create no host can place (TS ``errors.ts``: "Service unavailable
#: (503): no host with capacity. Retry shortly.").
NO_CAPACITY = "no host with capacity"
#: Seconds a client waits before trying again; both SDKs retry a 503 for any method, honouring
#: ``Retry-After`` (TS ``http.ts`` ``isRetryableStatus``, Python ``_transport._retryable``).
CAPACITY_RETRY_AFTER = 1


def at_capacity(exc: OSError) -> ApiError:
    """The fake's process is out of file descriptors (``runtime.CapacityError``): the service's
    503 "no host with capacity" with ``Retry-After``, the fake's reason after it."""
    return ApiError(
        f"{NO_CAPACITY}; {exc.strerror}",
        status=503,
        code="fake_at_capacity",
        headers={"Retry-After": str(CAPACITY_RETRY_AFTER)},
    )


class NotImplementedByFake(ApiError):
    status = 501
