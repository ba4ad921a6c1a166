"""The console's and the OpenAPI pages' files are served from the package, each as what it is.

Over real uvicorn on an SQLite file: every file the routes name is answered with its bytes in the
package and its media type (and ``nosniff``); every file the pages load is one of them; the pages
load nothing from another host; an unknown name is a 404 in JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.resources import files

import pytest

from api.console_routes import CONSOLE_ASSETS, VENDOR_ASSETS
from infrastructure.settings import Settings
from tests.api._serve import Served, served_client

CONSOLE = files("api").joinpath("console")
ASSETS = [("/console/assets", CONSOLE, name, kind) for name, kind in CONSOLE_ASSETS.items()] + [
    ("/docs/assets", CONSOLE.joinpath("vendor"), name, kind) for name, kind in VENDOR_ASSETS.items()
]
PAGES = (
    "/console",
    "/console/ask",
    "/console/system",
    "/console/overview",
    "/console/sessions/s-1",
    "/console/runs/6b1c9a52-0e0f-4c43-9d0e-6a4b1f1d2e3c",
    "/docs",
    "/redoc",
)
LOADED = re.compile(r"""(?:src|href|from)\s*=?\s*["']([^"'#]+)["']""")
"""What an HTML page or a module script loads (src=, href=, import … from)."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The app over uvicorn on a fresh SQLite file."""
    folder = tmp_path_factory.mktemp("assets")
    with served_client(Settings(database_url=f"sqlite:///{folder / 'h.db'}")) as running:
        yield running


@pytest.mark.parametrize(("prefix", "folder", "name", "kind"), ASSETS, ids=[a[2] for a in ASSETS])
def test_each_asset_is_the_packaged_file_with_its_media_type(
    served: Served, prefix: str, folder: object, name: str, kind: str
) -> None:
    response = served.client.get(f"{prefix}/{name}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == kind
    assert response.headers["x-content-type-options"] == "nosniff"
    assert (
        response.content
        == CONSOLE.joinpath(
            *([] if prefix.startswith("/console") else ["vendor"]), name
        ).read_bytes()
    )


def test_every_script_and_style_sheet_in_the_package_is_served() -> None:
    shipped = {p.name for p in CONSOLE.iterdir() if p.name.endswith((".js", ".css"))}
    assert shipped == set(CONSOLE_ASSETS)
    for license_file in ("swagger-ui.LICENSE", "swagger-ui.NOTICE", "redoc.LICENSE"):
        assert CONSOLE.joinpath("vendor", license_file).is_file()


@pytest.mark.parametrize("page", PAGES)
def test_each_page_loads_only_files_the_service_serves(served: Served, page: str) -> None:
    response = served.client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    loaded = LOADED.findall(response.text)
    assert loaded, page
    for url in loaded:
        assert not url.startswith(("http:", "https:", "//")), f"{page} loads {url} from elsewhere"
        if url.startswith("/"):
            assert served.client.get(url).status_code == 200, f"{page} loads {url}"


def test_every_console_page_has_the_one_header_with_its_own_link_marked(served: Served) -> None:
    headers = {}
    for page in PAGES[:6]:
        text = served.client.get(page).text
        assert text.count("<main>") == 1 and "@" not in text.split("<main>")[0], page
        current = re.findall(r'<a href="([^"]+)" aria-current="page">', text)
        headers[page] = text.split("<main>")[0].replace(' aria-current="page"', "")
        expected = [page] if page in ("/console", "/console/ask", "/console/system") else []
        assert current == (["/console/overview"] if page.endswith("overview") else expected)
    titled = {re.sub(r"<title>.*</title>|assets/\w+\.js", "", h) for h in headers.values()}
    assert len(titled) == 1  # the same head and header but for the title and the page's script


def test_the_console_pages_forbid_anything_but_their_own_origin(served: Served) -> None:
    policy = served.client.get("/console").headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self';" in policy  # no inline script, no other host


def test_the_module_scripts_import_only_served_modules() -> None:
    for name in CONSOLE_ASSETS:
        if name.endswith(".js"):
            text = CONSOLE.joinpath(name).read_text(encoding="utf-8")
            for imported in re.findall(r"""from\s+["']\./([^"']+)["']""", text):
                assert imported in CONSOLE_ASSETS, f"{name} imports {imported}"


@pytest.mark.parametrize(
    "url",
    [
        "/console/assets/nope.js",
        "/docs/assets/..%2fmain.py",
        "/console/assets/runs.html",
        "/console/assets/frame.html",
    ],
)
def test_an_unknown_file_is_a_404_in_json(served: Served, url: str) -> None:
    response = served.client.get(url)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert "detail" in response.json() and response.json()["status"] == 404


@pytest.mark.parametrize(
    "url",
    [*PAGES, "/docs/oauth2-redirect", *(f"{prefix}/{name}" for prefix, _, name, _ in ASSETS)],
)
def test_head_answers_what_get_would_without_the_body(served: Served, url: str) -> None:
    """A link checker, a proxy's probe or ``curl -I`` asks with HEAD: it was a 405."""
    got, head = served.client.get(url), served.client.head(url)
    assert head.status_code == got.status_code == 200, (head.status_code, head.text)
    assert head.content == b""
    for name in ("content-type", "content-length", "x-content-type-options"):
        assert head.headers.get(name) == got.headers.get(name), name
    assert int(head.headers["content-length"]) == len(got.content)


def test_head_of_an_unknown_file_is_a_404_too(served: Served) -> None:
    assert served.client.head("/console/assets/nope.js").status_code == 404


def test_the_ask_pages_former_address_redirects_to_it(served: Served) -> None:
    response = served.client.get("/console/chat", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (308, "/console/ask")
