"""The official Python SDK's public surface and the part of it the fake still answers 501.

Run as a script to print the count: ``python tests/e2e/sdk_surface.py``.
"""

from __future__ import annotations

import inspect

from createos import _streams, client, instance, services

#: Account resources and computer use: a separate piece of work; the fake answers 501 there.
UNIMPLEMENTED_CLASSES = frozenset(
    {
        "TemplatesService",
        "TemplateLogStream",
        "NetworksService",
        "DisksService",
        "ComputerService",
        "MouseService",
        "KeyboardService",
        "WindowsService",
        "ScreensService",
    }
)
UNIMPLEMENTED_METHODS = frozenset(
    {
        "SandboxInstance.attach_network",
        "SandboxInstance.detach_network",
        "SandboxInstance.list_disks",
        "SandboxInstance.attach_disk",
        "SandboxInstance.detach_disk",
    }
)


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


def reaching_501() -> list[str]:
    return [
        name
        for name in public_methods()
        if name.split(".")[0] in UNIMPLEMENTED_CLASSES or name in UNIMPLEMENTED_METHODS
    ]


if __name__ == "__main__":
    every, missing = public_methods(), reaching_501()
    print(f"{len(every)} public methods; {len(missing)} reach a 501:")
    print("\n".join(f"  {name}" for name in missing))
