"""pytest-createos: fixtures and markers for testing CreateOS sandbox code against a fake."""

from __future__ import annotations

__all__: list[str] = []
