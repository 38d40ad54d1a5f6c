"""The fake's tables: operations (one list, bound by the router) and error codes."""

from __future__ import annotations

import inspect

from fake_server import operations
from fake_server.faults import OPERATIONS
from fake_server.http.routes import ROUTES
from fake_server.models import errors


def test_each_route_is_one_operation_bound_to_a_coroutine_handler() -> None:
    """``fake_server.operations`` is the one list of operations; the router serves it bound."""
    names = [operation for _method, _path, operation, _handler in ROUTES]
    assert len(names) == len(set(names))
    assert set(names) | {op.name for op in operations.DERIVED} == OPERATIONS
    assert [(op.method, op.path, op.name) for op in operations.ROUTES] == [
        route[:3] for route in ROUTES
    ]
    assert all(inspect.iscoroutinefunction(route[3]) for route in ROUTES)


def test_every_error_class_takes_its_code_from_the_one_table() -> None:
    classes = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ApiError) and cls is not errors.ApiError
    ]
    assert {errors.BadRequest, errors.NotImplementedByFake} <= set(classes)
    own = {cls.__name__: cls.default_code for cls in classes if cls.default_code is not None}
    # a class names its own code only where the docs promise one its status's code is not
    assert own == {"QuotaExceeded": "quota_exceeded"}
    for cls in classes:
        error = cls(1) if cls is errors.RateLimited else cls("x")  # type: ignore[call-arg]
        assert error.code == (cls.default_code or errors.CODES[cls.status]), cls.__name__


def test_an_error_of_any_status_gets_the_tables_code() -> None:
    assert errors.ApiError("x", status=503).code == "service_unavailable"
    assert errors.ApiError("x", status=418).code == "injected"
    assert errors.ApiError("x", status=503, code="own").code == "own"
