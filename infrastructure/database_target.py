"""Where the events live: ``HARNESS_DATABASE_URL`` parsed into an SQLite file or PostgreSQL."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class DatabaseTarget:
    """A parsed ``HARNESS_DATABASE_URL``: an SQLite file or a PostgreSQL database."""

    kind: Literal["sqlite", "postgres"]
    path: str = ""
    host: str = ""
    port: int = 5432
    user: str = ""
    password: str = ""
    dbname: str = ""

    def describe(self) -> str:
        """A human description without the password, safe for logs and errors."""
        if self.kind == "sqlite":
            shown = self.path if self.path == ":memory:" else os.path.abspath(self.path)
            return f"SQLite file {shown}"
        return f"PostgreSQL database {self.dbname!r} at {self.host}:{self.port} as {self.user!r}"


def parse_database_url(url: str) -> DatabaseTarget:
    """Parse ``sqlite:///PATH`` or ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME``."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    if scheme == "sqlite":
        path = unquote(url.split("://", 1)[1])
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise ValueError(f"{url!r} names no file: use sqlite:///./harness.db")
        return DatabaseTarget(kind="sqlite", path=path)
    if scheme in ("postgresql", "postgres"):
        dbname = parts.path.lstrip("/")
        if not (parts.hostname and dbname):
            raise ValueError(
                "a PostgreSQL URL needs a host and a database: "
                "postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME"
            )
        return DatabaseTarget(
            kind="postgres",
            host=parts.hostname,
            port=parts.port or 5432,
            user=unquote(parts.username or "postgres"),
            password=unquote(parts.password or ""),
            dbname=dbname,
        )
    raise ValueError(
        f"unsupported database URL scheme {parts.scheme!r}: use sqlite:///PATH or postgresql://…"
    )
