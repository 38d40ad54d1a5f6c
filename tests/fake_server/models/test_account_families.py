"""``Account`` is its sandbox table (sandboxes, credit, resources) with the sandbox lifecycle;
each other family of operations is a small service over the table (the account's docstring
names them), and no two services define the same operation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fake_server.models.account import Account
from fake_server.models.account.admin import Admin
from fake_server.models.account.execs import Execs
from fake_server.models.account.metrics import Metrics
from fake_server.models.account.processes import Processes
from fake_server.models.account.table import SandboxTable
from fake_server.models.account.tokens import Tokens

if TYPE_CHECKING:
    from fake_server import FakeCreateOS

SERVICES = {"execs": Execs, "processes": Processes, "admin": Admin, "tokens": Tokens}
SERVICES["metrics"] = Metrics


def test_each_service_is_named_documented_and_owns_its_operations() -> None:
    # composition: the table is the one base; the families are services, not mixins
    assert Account.__mro__ == (Account, SandboxTable, object)
    owners: dict[str, str] = {}
    for attribute, cls in SERVICES.items():
        assert f"``{attribute}``" in (Account.__doc__ or ""), attribute
        for name, value in vars(cls).items():
            if callable(value) and not name.startswith("_"):
                assert name not in owners, f"{name} in {owners.get(name)} and {cls.__name__}"
                owners[name] = cls.__name__
    assert not set(owners) & set(vars(Account)), "Account defines a service's operation"


def test_an_account_holds_one_of_each_service_over_itself(fake: FakeCreateOS) -> None:
    account = fake.world.account_for_key(fake.api_key)
    assert account is not None
    for attribute, cls in SERVICES.items():
        service = getattr(account, attribute)
        assert type(service) is cls
        assert service.account is account
