"""The one ``Settings`` object, read from ``HARNESS_*`` environment variables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from application.run_journal import DEFAULT_COMMIT_INTERVAL_S
from domain.values import DEFAULT_DEADLINE_S, DEFAULT_MODEL_TIMEOUT_S, Budget
from domain.values import DEFAULT_LIMITS as LIMITS
from infrastructure.api_keys import ApiKey as ApiKey  # re-exported
from infrastructure.api_keys import check_api_keys
from infrastructure.audit_keys import check_signing_key_file
from infrastructure.database_target import DatabaseTarget as DatabaseTarget  # re-exported
from infrastructure.database_target import parse_database_url as parse_database_url
from infrastructure.model_config import check_base_url, check_model
from infrastructure.reference_clock import check_reference_time
from infrastructure.settings_errors import describe_settings_error, describe_validation
from infrastructure.tool_config import check_tools_config

DEFAULT_DATABASE_URL = "sqlite:///./harness.db"
_PLAIN_NAME = re.compile(r"[a-z_\x80-\U0010ffff][a-z0-9_$\x80-\U0010ffff]*")


class ConfigurationError(ValueError):
    """A setting is malformed or names something that cannot be built; the message says which."""


class Settings(BaseSettings):
    """Configuration of every process; each field is ``HARNESS_<NAME>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="HARNESS_", extra="ignore", frozen=True)

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="Where the event store and the read tables live: sqlite:///PATH for an SQLite"
        " file (the default, ./harness.db in the working directory) or"
        " postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME for a PostgreSQL database.",
    )
    database_schema: str = Field(
        "public",
        description="PostgreSQL schema that holds every table of the harness: the event log, the"
        " read tables and the worker leases. A lowercase name that needs no quoting (letters,"
        " digits, _ and $); the default is PostgreSQL's own public schema. Unused on SQLite.",
    )
    db_lock_timeout: int = Field(
        default=5,
        ge=1,
        description="Seconds a database write waits for a lock held by another writer before it"
        " fails (SQLite's busy timeout, PostgreSQL's lock_timeout).",
    )
    db_connect_timeout: int = Field(
        default=5,
        ge=1,
        description="Seconds to wait for a new PostgreSQL connection, and the longest a request"
        " waits for a pooled one: while the database is away, requests fail with 503 after about"
        " this long.",
    )
    db_pool_size: int = Field(
        default=5,
        ge=1,
        description="PostgreSQL connections each of a process's two pools (the event store's and"
        " the read side's) keeps open between uses.",
    )
    db_max_overflow: int = Field(
        default=10,
        ge=0,
        description="Connections each PostgreSQL pool may open beyond HARNESS_DB_POOL_SIZE under"
        " load; they are closed once returned (0: never more than the pool size).",
    )
    db_pre_ping: bool = Field(
        default=False,
        description="Check each pooled PostgreSQL connection with a round trip before use, so a"
        " connection the server dropped is replaced before a query fails on it. Off by default:"
        " a dropped connection already discards the whole pool on its first error.",
    )
    no_gain_threshold: int = Field(
        default=3,
        ge=1,
        description="Consecutive tool results that bring no new information (NO_GAIN) after"
        " which a run's evidence collection is saturated and the agent is told to stop and"
        " draft its answer (design §9).",
    )
    violation_threshold: int = Field(
        default=2,
        ge=1,
        description="Consecutive missing or malformed progress reports from the agent after"
        " which a run's evidence collection is saturated and the agent is told to stop and"
        " draft its answer (design §9).",
    )
    model: Annotated[str, AfterValidator(check_model)] = Field(
        default="offline",
        description="Model provider: offline (the default: a built-in model that needs no"
        " network), scripted:PATH (plays a scenario file, read and checked with the settings),"
        " or openai (an OpenAI-compatible server at HARNESS_OPENAI_BASE_URL).",
    )
    openai_base_url: Annotated[str, AfterValidator(check_base_url)] = Field(
        default="https://api.openai.com/v1",
        description="Base URL of the OpenAI-compatible server used when HARNESS_MODEL=openai"
        " (vLLM, Ollama, OpenAI, DeepSeek, …; the default is OpenAI's). No user:password@ in"
        " it: the key goes in HARNESS_OPENAI_API_KEY.",
    )
    openai_api_key: SecretStr = Field(
        default=SecretStr(""),
        description="API key sent to the OpenAI-compatible server; empty (the default) sends no"
        " Authorization header, for a local server that needs none.",
    )
    openai_model: str = Field(
        default="gpt-4o-mini",
        description="Model name requested from the OpenAI-compatible server.",
    )
    model_timeout: float = Field(
        DEFAULT_MODEL_TIMEOUT_S,
        gt=0,
        description="Seconds one model call may take, its retries included; a call still"
        " unanswered then fails. The run's remaining deadline bounds it further.",
    )
    model_max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries of a model call after a 429, a 5xx, a reset or a timeout, with"
        " backoff and the server's Retry-After, all within the call's timeout (0: none).",
    )
    run_deadline: float = Field(
        DEFAULT_DEADLINE_S,
        gt=0,
        description="Seconds a run may take from its start; a run still going then ends"
        " TIMED_OUT. It is also the longest deadline a request may ask for.",
    )
    run_commit_interval: float = Field(
        DEFAULT_COMMIT_INTERVAL_S,
        ge=0,
        le=60,
        allow_inf_nan=False,
        description="Seconds a run's recorded events may wait uncommitted while its calls stay"
        " inside the service; they are always committed before a call that leaves it and at the"
        " run's end (0: commit before every model and tool call).",
    )
    budget_model_calls: int = Field(
        LIMITS.model_calls,
        ge=1,
        description="Model calls a run may make; going past it ends the run BUDGET_EXHAUSTED."
        " Also the most a request may ask for.",
    )
    budget_tool_calls: int = Field(
        LIMITS.tool_calls,
        ge=0,
        description="Tool calls a run may make; going past it ends the run BUDGET_EXHAUSTED (0:"
        " no tool calls). Also the most a request may ask for.",
    )
    budget_tokens: int = Field(
        LIMITS.tokens,
        ge=1,
        description="Model tokens (prompt and answer together) a run may use; going past it ends"
        " the run BUDGET_EXHAUSTED. Also the most a request may ask for.",
    )
    budget_bytes: int = Field(
        LIMITS.bytes,
        ge=0,
        description="Bytes of tool output a run may take in; going past it ends the run"
        " BUDGET_EXHAUSTED. Also the most a request may ask for.",
    )
    projections_in_process: bool = Field(
        default=True,
        description="Run the projections inside the service (the default, for one worker); set"
        " false when `harness projections run` follows the log in its own process, as it must"
        " with several workers.",
    )
    projection_batch: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Log entries a projection batch reads at most (unset: 4000 on SQLite, where a"
        " batch holds the only write lock, 8000 on PostgreSQL, where it saves round trips).",
    )
    projection_poll: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="Seconds between a projection follower's looks at the log when nothing woke"
        " it (this process's own appends and, on PostgreSQL, a NOTIFY wake it at once; the poll"
        " catches writes of other processes).",
    )
    host: str = Field(
        default="127.0.0.1",
        description="Address `harness serve` listens on; the default takes connections from this"
        " machine only.",
    )
    port: int = Field(
        default=8000, ge=1, le=65535, description="TCP port `harness serve` listens on."
    )
    api_keys: list[ApiKey] = Field(
        default_factory=list,
        description='API keys as JSON: [{"key": "…", "name": "ann", "role": "user"}, …]; roles'
        " user, auditor, admin. Empty (the default): no keys, one local user, and the service"
        " answers loopback clients only.",
    )
    max_concurrent_runs: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Runs one worker executes at once; beyond it a new run is refused with 429"
        " and Retry-After.",
    )
    max_runs_per_key: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Runs one API key may execute at once on a worker (429 beyond). Unset: half"
        " of HARNESS_MAX_CONCURRENT_RUNS, rounded up, once two keys may start runs; no share of"
        " its own otherwise.",
    )
    max_stuck_calls: int = Field(
        default=16,
        ge=1,
        le=1000,
        description="Calls to one tool (or to the model) a worker leaves running after their runs"
        " stopped waiting, before it refuses that port until one returns.",
    )
    stuck_after: float = Field(
        default=60.0,
        ge=0,
        le=86400,
        description="Seconds a call left running must have run before it counts as stuck toward"
        " HARNESS_MAX_STUCK_CALLS (a call abandoned by a cancel usually answers soon after).",
    )
    worker_lease_ttl: float = Field(
        default=30.0,
        ge=1,
        le=3600,
        description="Seconds a worker's lease lasts without a heartbeat (it beats every third of"
        " it); the runs of a worker silent longer are ended WORKER_LOST by the recovery sweep.",
    )
    recovery_interval: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds between a service worker's recovery sweeps, which end the runs of"
        " workers whose lease expired (one sweep also runs at start-up).",
    )
    reference_time: Annotated[str, AfterValidator(check_reference_time)] = Field(
        default="auto",
        description="The now relative times (yesterday, right now) are read against: sample (the"
        " sample data's own now), system (the wall clock), an ISO 8601 UTC time, or auto: sample"
        " while the built-in tools serve the sample data, system once HARNESS_TOOLS_CONFIG is set.",
    )
    excerpt_min_words: int = Field(
        default=3,
        ge=1,
        le=50,
        description="Words a citation's excerpt needs before it can prove anything; a shorter"
        " excerpt fails the draft's grounding (design §10.1).",
    )
    excerpt_min_chars: int = Field(
        default=12,
        ge=1,
        le=500,
        description="Non-space characters a citation's excerpt needs before it can prove"
        " anything; a shorter excerpt fails the draft's grounding (design §10.1).",
    )
    max_query_chars: int = Field(
        default=4000,
        ge=1,
        description="Longest question a run accepts, in characters; a longer one is refused"
        " before a run starts.",
    )
    max_body_bytes: int = Field(
        default=65_536,
        ge=1024,
        description="Largest request body the API reads, in bytes; a larger one is refused with"
        " 413.",
    )
    max_header_bytes: int = Field(
        default=32_768,
        ge=1024,
        le=1_048_576,
        description="Largest request head (request line and header fields) the API reads, counted"
        " as it arrives (bytes; 431 beyond).",
    )
    max_headers: int = Field(
        default=100,
        ge=8,
        le=10_000,
        description="Header fields one request may have (431 beyond).",
    )
    max_streams: int = Field(
        default=1000,
        ge=1,
        description="Event streams (SSE) one worker sends at once; beyond it a new stream is"
        " refused with 429 and Retry-After.",
    )
    max_streams_per_key: int | None = Field(
        default=None,
        ge=1,
        description="Event streams one API key may have open at once on a worker (429 beyond)."
        " Unset: half of HARNESS_MAX_STREAMS, rounded up, once there are two keys; no share of"
        " its own otherwise.",
    )
    request_read_timeout: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a whole request, head and body; a request not"
        " in by then is answered 408 (or its connection closed) so it cannot hold a connection.",
    )
    sse_keepalive: float = Field(
        default=15.0,
        gt=0,
        le=300,
        description="Seconds an event stream may stay silent before the service sends a"
        " keep-alive comment, so proxies do not close it.",
    )
    feed_poll: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="Seconds between a worker's looks for new event-stream entries when no"
        " wake-up arrives.",
    )
    audit_key: SecretStr = Field(
        default=SecretStr(""),
        description="Secret that makes each event's chain link an HMAC (see Audit); empty (the"
        " default): a plain SHA-256 chain. Verifying needs the same key.",
    )
    audit_signing_key_file: Annotated[Path | None, AfterValidator(check_signing_key_file)] = Field(
        None,
        description="Ed25519 private key (PEM, mode 0600; `harness audit keygen` makes one) that"
        " signs every audit checkpoint and export, so anyone with its public key can check them"
        " (`harness audit verify --public-key`). Unset: nothing is signed.",
    )
    tools_config: Annotated[Path | None, AfterValidator(check_tools_config)] = Field(
        None,
        description="TOML or YAML file naming the tools runs may call: built-ins, plugins and MCP"
        " servers (see the Tools guide). Unset: the built-in tools over the sample data.",
    )
    read_wait: float = Field(
        default=5.0,
        ge=0,
        le=60,
        description="Seconds a query waits for the read tables to catch up with a run the log"
        " already holds before it answers with what they show, or 202 (retry) when the run's row"
        " is not there yet (0: do not wait).",
    )

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        parse_database_url(value)
        return value

    @field_validator("database_schema")
    @classmethod
    def _check_schema(cls, value: str) -> str:
        # The event store quotes the name, the read side does not: "Ops" would keep the events
        # in "Ops" and the read tables and leases in "ops" (shared with any store there).
        if _PLAIN_NAME.fullmatch(value) is None:
            raise ValueError(f"{value!r} is not a lowercase PostgreSQL name that needs no quotes")
        return value

    @field_validator("api_keys")
    @classmethod
    def _check_keys(cls, keys: list[ApiKey]) -> list[ApiKey]:
        check_api_keys(keys)
        return keys

    @classmethod
    def from_environment(cls) -> Settings:
        """Settings from ``HARNESS_*`` variables, or a ConfigurationError naming each problem."""
        try:
            return cls()
        except ValidationError as error:
            raise ConfigurationError(describe_validation(error)) from None
        except SettingsError as error:  # a JSON-valued variable that is not JSON
            raise ConfigurationError(describe_settings_error(error)) from None

    @property
    def database(self) -> DatabaseTarget:
        """The parsed database target."""
        return parse_database_url(self.database_url)

    @property
    def runs_per_key(self) -> int | None:
        """HARNESS_MAX_RUNS_PER_KEY; unset, half a worker's runs once two keys may start runs."""
        starters = sum(key.role != "auditor" for key in self.api_keys)
        half = (self.max_concurrent_runs + 1) // 2  # rounded up
        return self.max_runs_per_key or (half if starters > 1 else None)

    @property
    def streams_per_key(self) -> int | None:
        """HARNESS_MAX_STREAMS_PER_KEY; unset, half a worker's streams once there are two keys."""
        half = (self.max_streams + 1) // 2  # rounded up
        return self.max_streams_per_key or (half if len(self.api_keys) > 1 else None)

    @property
    def limits(self) -> Budget:
        """The run budget limits (HARNESS_BUDGET_*): every run's, and a request's ceiling."""
        return Budget(
            self.budget_model_calls, self.budget_tool_calls, self.budget_tokens, self.budget_bytes
        )
