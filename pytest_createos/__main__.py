"""``python -m pytest_createos --version``: which pytest-createos is installed."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["installed_version", "main"]

DISTRIBUTION = "pytest-createos"


def installed_version() -> str:
    """The installed distribution's version (the package and ``createos-fake`` ship in one)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_createos",
        description="pytest-createos registers itself with pytest: run pytest to use it.",
    )
    parser.add_argument(
        "--version", action="version", version=f"{DISTRIBUTION} {installed_version()}"
    )
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
