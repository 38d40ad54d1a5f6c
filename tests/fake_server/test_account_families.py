"""``Account`` is one mixin per family of operations (its docstring says why): each mixin is a
whole class over ``AccountBase``, named in that docstring, and no two define the same method."""

from __future__ import annotations

from fake_server.models.account.account import AccountBase
from fake_server.models.account.world import Account


def test_each_family_is_whole_documented_and_owns_its_methods() -> None:
    families = [cls for cls in Account.__mro__[1:] if cls not in (AccountBase, object)]
    assert len(families) == 5
    owners: dict[str, str] = {}
    for cls in families:
        assert issubclass(cls, AccountBase), cls.__name__
        assert f"``{cls.__name__}``" in (Account.__doc__ or ""), cls.__name__
        for name, value in vars(cls).items():
            if callable(value) and not name.startswith("__"):
                assert name not in owners, f"{name} in {owners.get(name)} and {cls.__name__}"
                owners[name] = cls.__name__
    assert not set(owners) & set(vars(Account)), "Account overrides a family's method"
