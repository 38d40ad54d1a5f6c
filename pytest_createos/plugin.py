"""The pytest plugin: options, markers and fixtures (filled in by the plugin issue)."""

from __future__ import annotations
