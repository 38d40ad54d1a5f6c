"""Route tables built once per process and shared by every fake's app.

aiohttp builds an application's router route by route (a resource, a compiled pattern and a
handler check each, about 10 µs a route), and the fake's API has about 140 routes: that was
most of a fake's start. A table never changes between fakes (a handler finds its fake through
``request.app``), so each app registers one ``SharedRoutes`` resource that resolves through a
frozen router built on first use. aiohttp's own way to share a router,
``web.Application(router=...)``, is deprecated.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractResource

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from aiohttp.web_urldispatcher import AbstractRoute, _InfoDict
    from yarl import URL

__all__ = ["SharedRoutes", "shared_table"]


class SharedRoutes(AbstractResource):
    """One resource of an app standing for every route of a shared, frozen router.

    It answers as the router would: the matching route's match (the route and its name are
    the shared router's), or no match with the methods the path allows (the app's router then
    answers 405 naming them, or 404). Registered under ``prefix``, so an app's router tries it
    for paths under that prefix only, in the same longest-prefix order as its own routes.
    """

    def __init__(self, router: web.UrlDispatcher, prefix: str = "/") -> None:
        super().__init__()
        self._router = router
        self._prefix = prefix

    @property
    def canonical(self) -> str:
        return self._prefix

    def url_for(self, **kwargs: str) -> URL:
        raise NotImplementedError("a shared route table builds no URLs; use its routes' own")

    async def resolve(
        self, request: web.Request
    ) -> tuple[web.UrlMappingMatchInfo | None, set[str]]:
        match = await self._router.resolve(request)
        failure = match.http_exception
        if failure is None:
            return match, set()
        if isinstance(failure, web.HTTPMethodNotAllowed):
            return None, set(failure.allowed_methods)
        return None, set()

    def add_prefix(self, prefix: str) -> None:
        raise NotImplementedError("a shared route table cannot move under a sub-application")

    def get_info(self) -> _InfoDict:
        return {"prefix": self._prefix}

    def raw_match(self, path: str) -> bool:
        return False

    def resources(self) -> Iterator[AbstractResource]:
        """The shared router's resources (for listing the known routes)."""
        return iter(self._router.resources())

    def __len__(self) -> int:
        return len(self._router.routes())

    def __iter__(self) -> Iterator[AbstractRoute]:
        return iter(self._router.routes())


def shared_table(build: Callable[[web.UrlDispatcher], None]) -> Callable[[], web.UrlDispatcher]:
    """A function returning the router ``build`` fills, built and frozen on first call."""

    @functools.cache
    def table() -> web.UrlDispatcher:
        router = web.UrlDispatcher()
        build(router)
        router.freeze()
        return router

    return table
