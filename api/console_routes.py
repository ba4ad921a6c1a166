"""The web console (``/console``) and the OpenAPI pages (``/docs``, ``/redoc``), from the package.

Every file is shipped inside the ``api`` package (``api/console/``; the Swagger UI and Redoc
bundles under ``api/console/vendor/``) and served from there, so the pages work with no network:
no CDN, no build step. Only the files named here are served, each with its media type. The pages
hold no data: their scripts read the JSON API with the key the user types, so these routes need
none (the loopback rule without keys still applies, as to every route).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING

from fastapi import APIRouter, HTTPException, Response
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import RedirectResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi.types import DecoratedCallable

router = APIRouter(include_in_schema=False)


def serves(path: str) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """A GET route that answers HEAD too (its headers, no body), as a static file server does.

    FastAPI's routes answer only the methods named (HEAD on a GET route was a 405): a link
    checker, a proxy's health probe or ``curl -I`` asks with HEAD.
    """
    return router.api_route(path, methods=["GET", "HEAD"])


HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
CSS = "text/css; charset=utf-8"
PNG = "image/png"

CONSOLE_ASSETS = {
    "console.css": CSS,
    "api.js": JS,
    "words.js": JS,
    "runs.js": JS,
    "run.js": JS,
    "timeline.js": JS,
    "answer.js": JS,
    "live.js": JS,
    "ask.js": JS,
    "session.js": JS,
    "system.js": JS,
    "overview.js": JS,
    "evals.js": JS,
    "charts.js": JS,
    "trends.js": JS,
}
"""The console's scripts and style sheet, served at ``/console/assets/{name}``."""
VENDOR_ASSETS = {
    "swagger-ui-bundle.js": JS,
    "swagger-ui.css": CSS,
    "favicon-32x32.png": PNG,
    "redoc.standalone.js": JS,
}
"""The OpenAPI pages' vendored files, served at ``/docs/assets/{name}``."""
PAGES = {
    "runs": ("Runs", "/console"),
    "run": ("Run", None),
    "ask": ("Ask", "/console/ask"),
    "session": ("Session", None),
    "system": ("System", "/console/system"),
    "overview": ("Overview", "/console/overview"),
}
"""Each page: its title and the header link marked as the current page (None: a page opened from
a list). ``NAME.html`` holds the page's ``<main>``, ``NAME.js`` its script; ``frame.html`` the
rest (head, header with the navigation and the key form), the same on every page."""

CONSOLE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The console's pages load nothing from elsewhere and run no inline script."""
REDOC_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; font-src 'self' data:; base-uri 'none'"
)
"""Redoc draws its vendor's logo from their CDN: this policy stops that request in the browser."""
HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
OPENAPI_URL = "/openapi.json"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"


@cache
def packaged(folder: str, name: str) -> bytes:
    """A file shipped in ``api/console`` (``folder`` "" or "vendor"), read once."""
    where = files("api").joinpath("console")
    if folder:
        where = where.joinpath(folder)
    return where.joinpath(name).read_bytes()


@cache
def page_html(name: str) -> bytes:
    """The page ``name``: its ``<main>`` in the shared frame, its link marked current."""
    title, current = PAGES[name]
    frame = packaged("", "frame.html").decode()
    if current is not None:
        link = f'<a href="{current}">'
        frame = frame.replace(link, f'<a href="{current}" aria-current="page">', 1)
    main = packaged("", f"{name}.html").decode()
    filled = frame.replace("@TITLE@", title).replace("@SCRIPT@", name)
    return filled.replace("@MAIN@", main).encode()


def _page(name: str) -> Response:
    headers = {**HEADERS, "Content-Security-Policy": CONSOLE_POLICY}
    return Response(page_html(name), media_type=HTML, headers=headers)


def _asset(table: dict[str, str], folder: str, name: str) -> Response:
    media_type = table.get(name)
    if media_type is None:
        raise HTTPException(404, f"no such file: {name!r:.80}")
    return Response(packaged(folder, name), media_type=media_type, headers=HEADERS)


@serves("/console")
def console_runs() -> Response:
    """The runs page: newest first, with filters and paging."""
    return _page("runs")


@serves("/console/ask")
def console_ask() -> Response:
    """The ask page: ask, watch the statuses and the answer arrive, cancel."""
    return _page("ask")


@serves("/console/chat")
def console_chat() -> RedirectResponse:
    """The ask page's former address, kept for bookmarks: a permanent redirect."""
    return RedirectResponse("/console/ask", status_code=308)


@serves("/console/sessions/{session_id}")
def console_session(session_id: str) -> Response:
    """A session's page: its turns and what each published."""
    return _page("session")


@serves("/console/system")
def console_system() -> Response:
    """The system page: projections' lag; for auditors and admins, workers and audit verify."""
    return _page("system")


@serves("/console/overview")
def console_overview() -> Response:
    """The overview page: daily runs and latency (auditors, admins) and the eval history."""
    return _page("overview")


@serves("/console/runs/{run_id}")
def console_run(run_id: str) -> Response:
    """One run's page (its script reads the id from the address and asks the API)."""
    return _page("run")


@serves("/console/assets/{name}")
def console_asset(name: str) -> Response:
    """A script or style sheet of the console."""
    return _asset(CONSOLE_ASSETS, "", name)


@serves("/docs/assets/{name}")
def docs_asset(name: str) -> Response:
    """A vendored file of Swagger UI or Redoc."""
    return _asset(VENDOR_ASSETS, "vendor", name)


@serves("/docs")
def swagger_ui() -> Response:
    """Swagger UI over ``/openapi.json``, its files served from the package."""
    return get_swagger_ui_html(
        openapi_url=OPENAPI_URL,
        title="Diagnosis Harness - Swagger UI",
        swagger_js_url="/docs/assets/swagger-ui-bundle.js",
        swagger_css_url="/docs/assets/swagger-ui.css",
        swagger_favicon_url="/docs/assets/favicon-32x32.png",
        oauth2_redirect_url=OAUTH2_REDIRECT,
        swagger_ui_parameters={"validatorUrl": None},  # the badge would ask a public validator
    )


@serves(OAUTH2_REDIRECT)
def swagger_ui_redirect() -> Response:
    """Swagger UI's OAuth2 redirect page (part of the page set FastAPI serves)."""
    return get_swagger_ui_oauth2_redirect_html()


@serves("/redoc")
def redoc() -> Response:
    """Redoc over ``/openapi.json``, its script served from the package, no web fonts."""
    page = get_redoc_html(
        openapi_url=OPENAPI_URL,
        title="Diagnosis Harness - ReDoc",
        redoc_js_url="/docs/assets/redoc.standalone.js",
        redoc_favicon_url="/docs/assets/favicon-32x32.png",
        with_google_fonts=False,
    )
    page.headers["Content-Security-Policy"] = REDOC_POLICY
    return page
