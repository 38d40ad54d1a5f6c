"""Tables that cannot be derived from one another (they live in different layers) agree."""

from __future__ import annotations

from fake_server.faults import OPERATIONS
from fake_server.http.routes import ROUTES
from fake_server.models import errors

#: Operation names the router does not name: exec refined by ``?stream=true`` and unmatched
#: requests (``http.middlewares.operation_of``).
_DERIVED = {"exec_stream", "not_implemented", "method_not_allowed"}


def test_fault_operations_are_exactly_the_routes_operations() -> None:
    routed = {operation for _method, _path, operation, _handler in ROUTES}
    assert set(OPERATIONS) == routed | _DERIVED


def test_every_error_class_takes_its_code_from_the_one_table() -> None:
    classes = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ApiError) and cls is not errors.ApiError
    ]
    assert {errors.BadRequest, errors.NotImplementedByFake} <= set(classes)
    for cls in classes:
        error = cls(1) if cls is errors.RateLimited else cls("x")  # type: ignore[call-arg]
        assert error.code == errors.CODES[cls.status], cls.__name__


def test_an_error_of_any_status_gets_the_tables_code() -> None:
    assert errors.ApiError("x", status=503).code == "service_unavailable"
    assert errors.ApiError("x", status=418).code == "injected"
    assert errors.ApiError("x", status=503, code="own").code == "own"
