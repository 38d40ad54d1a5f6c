"""The official Python SDK's public surface: every public method of its client, handles,
services and streams.

Run as a script to print them: ``python tests/e2e/sdk_surface.py``.
"""

from __future__ import annotations

import inspect

from createos import _streams, client, instance, services


def public_methods() -> list[str]:
    """``Class.method`` for every public method of the SDK's client, handles and services."""
    classes = [client.Client, instance.SandboxInstance]
    for module in (services, _streams):
        classes += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__
        ]
    return sorted(
        f"{cls.__name__}.{name}"
        for cls in classes
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(member)
    )


if __name__ == "__main__":
    every = public_methods()
    print(f"{len(every)} public methods:")
    print("\n".join(f"  {name}" for name in every))
