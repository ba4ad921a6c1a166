"""The one ``MetaData`` every read table is defined on (``read_tables``, ``eval_tables``).

Apart so that the tables can live in modules of their own and still be created, fingerprinted,
emptied and compared together.
"""

from __future__ import annotations

from sqlalchemy import MetaData

metadata = MetaData()
