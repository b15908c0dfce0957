"""Workbench settings: everything comes from the environment (and `.env` when present)."""

import os
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from accounts.client_address import parse_trusted
from accounts.oauth_config import provider_settings
from accounts.sso.providers import check as check_sso_settings
from kernel.tenant_paths import root_pattern
from mcp_gateway import (
    GatewayOptions,
    embedded_store,
    env_file_names,
    protect_cache_directory,
    shared_cache,
)
from workbench_site.dbfile import make_private, sqlite_path
from workbench_site.drain import DEFAULT_DRAIN_SECONDS

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# Values already in the environment win over the file's.
environ.Env.read_env(os.environ.get("WORKBENCH_ENV_FILE", BASE_DIR / ".env"))

DEBUG: bool = env.bool("DEBUG", default=False)

SECRET_KEY: str = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-secret-key-do-not-use-in-production"

# Fernet keys for secrets at rest (server env values and header values), comma-separated.
# The first encrypts; every key decrypts, so a new key can be put first and the old one
# kept until `manage.py rotate_encryption_keys` has re-encrypted everything.
ENCRYPTION_KEYS: list[str] = env.list("ENCRYPTION_KEYS", default=[])
if not ENCRYPTION_KEYS and not DEBUG:
    raise ImproperlyConfigured(
        "ENCRYPTION_KEYS must be set when DEBUG is off "
        "(generate one with: python -c 'from cryptography.fernet import Fernet; "
        "print(Fernet.generate_key().decode())')."
    )

ALLOWED_HOSTS: list[str] = env.list(
    "ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS: list[str] = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "workbench_site.admin_site.WorkbenchAdminConfig",  # django.contrib.admin, own apps first
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "servestatic",  # its configuration checks (it warns at start without them)
    "axes",
    "oauth2_provider",
    "kernel.admin_kit",  # the admins' shared pages: templates and the copy button
    "toolboxes",
    "accounts",
    "calls",
    "api",
    "ninja",  # the management API's docs page, served from static files
    "connections",
    "workbench_site",  # the composition root: answers the admin's questions of the gateway
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "accounts.middleware.ContentSecurityPolicyMiddleware",
    # ServeStatic (WhiteNoise's fork with ASGI): its files stream to uvicorn asynchronously;
    # WhiteNoise's synchronous iterators made Django warn on every admin page's CSS.
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "accounts.middleware.OneTimePasswordMiddleware",
    # A session opened through an identity provider that asks for re-checks (accounts/sso).
    "accounts.sso.recheck.RecheckMiddleware",
    # The management API's 404 and 405 outside its views as problems (RFC 9457).
    "api.middleware.ApiProblemsMiddleware",
    # Last, as django-axes asks: refuses a locked-out login before any view runs.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "workbench_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "workbench_site.asgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'workbench.sqlite3'}"),
}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
# PostgreSQL: a bounded pool of connections per process (psycopg_pool, through Django): the
# ORM's thread, a probe or an admin page borrows one instead of opening one each time (with
# CONN_MAX_AGE=0 each did: 29 new connections in 20 s of idle /readyz probes). A connection
# is checked before it is lent, so a restarted PostgreSQL costs no request an error; a
# borrower waits at most 10 s. 0 turns the pool off (as CONN_MAX_AGE > 0 does: Django
# takes one or the other).
DATABASE_POOL_MAX: int = env.int("DATABASE_POOL_MAX", default=10)
if (
    DATABASES["default"]["ENGINE"].endswith("postgresql")
    and DATABASE_POOL_MAX > 0
    and not DATABASES["default"]["CONN_MAX_AGE"]
):
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "pool", {"min_size": 1, "max_size": DATABASE_POOL_MAX, "timeout": 10}
    )
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # the pool checks before it lends
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Several processes share one SQLite file (gateway workers, the admin, commands, the call
    # log's writer): WAL lets reads go on while one connection writes; a write transaction
    # takes its lock when it begins (a wait, where upgrading a read lock would fail at once);
    # a writer waits up to 20 s for another.
    _sqlite = DATABASES["default"].setdefault("OPTIONS", {})
    _sqlite.setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    _sqlite.setdefault("transaction_mode", "IMMEDIATE")
    _sqlite.setdefault("timeout", 20)
    # Owner-only (0600) from creation, before any connection opens it (workbench_site/dbfile).
    if (_sqlite_file := sqlite_path(DATABASES["default"].get("NAME"))) is not None:
        make_private(_sqlite_file)

# The shared store (open toolboxes, configuration versions, rate buckets). By default an
# on-disk store that every process of this machine shares (gateway workers, the admin,
# manage.py commands); Redis (CACHE_URL=redis://...) when processes span machines. Either
# keeps JSON, never pickles (mcp_gateway/store/).
WORKBENCH_STORE_DIR: str = env.str(
    "WORKBENCH_STORE_DIR", default=str(BASE_DIR / ".workbench-store")
)
CACHES = {
    "default": shared_cache(env.cache("CACHE_URL"))
    if env.str("CACHE_URL", default="")
    else embedded_store(WORKBENCH_STORE_DIR)
}

# People and access (accounts/, README "Roles"): admin logins are throttled by django-axes.
# After WORKBENCH_LOGIN_FAILURE_LIMIT failed logins for one username from one address (each
# within WORKBENCH_LOGIN_COOLOFF_MINUTES of the last), that pair is refused for the cool-off;
# other usernames and addresses are unaffected. The address is the connection's
# (REMOTE_ADDR): behind a proxy, see axes' AXES_IPWARE_* settings.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
WORKBENCH_LOGIN_FAILURE_LIMIT: int = env.int("WORKBENCH_LOGIN_FAILURE_LIMIT", default=10)
WORKBENCH_LOGIN_COOLOFF_MINUTES: int = env.int("WORKBENCH_LOGIN_COOLOFF_MINUTES", default=15)
AXES_FAILURE_LIMIT = WORKBENCH_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=WORKBENCH_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# X-Forwarded-For is believed only from these proxies (addresses or networks; none by
# default): accounts/client_address.py, which also gives uvicorn's flags (`make run`).
WORKBENCH_TRUSTED_PROXIES: list[str] = env.list("WORKBENCH_TRUSTED_PROXIES", default=[])
try:
    parse_trusted(WORKBENCH_TRUSTED_PROXIES)
except ValueError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
AXES_CLIENT_IP_CALLABLE = "accounts.client_address.client_ip"
AXES_COOLOFF_MESSAGE = (
    "Too many failed logins for this username from your address: try again in "
    f"{WORKBENCH_LOGIN_COOLOFF_MINUTES} minutes."
)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Only for collectstatic; ServeStatic finds the admin's files in the apps otherwise.
STATIC_ROOT = env.str("STATIC_ROOT", default=None)
# The admin's CSS and JS are served by ServeStatic straight from the apps: no collectstatic.
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Secure cookies whenever the admin is served over HTTPS in production.
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
# HSTS on responses served over HTTPS (as Django sees the request: TLS at uvicorn, or a
# trusted proxy's X-Forwarded-Proto); 0 turns it off. The CSP: accounts.middleware.
SECURE_HSTS_SECONDS: int = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS: bool = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)

# The gateway's endpoint as clients reach it (e.g. https://mcp.example.com/mcp), for the
# client configurations the admin hands out with a key; empty: what the admin's request shows.
WORKBENCH_PUBLIC_URL: str = env.str("WORKBENCH_PUBLIC_URL", default="")
# The management API (/api/v1): requests per API token, as "<count>/<s|m|h|d>"
# (counted in the shared cache, CACHE_URL).
WORKBENCH_API_RATE_LIMIT: str = env.str("WORKBENCH_API_RATE_LIMIT", default="600/m")

# The gateway's options: WORKBENCH_<NAME> is GatewayOptions' field <name>, its default
# there (mcp_gateway.GatewayOptions.from_settings reads them).
_D = GatewayOptions
WORKBENCH_SESSION_IDLE_SECONDS: int = env.int(
    "WORKBENCH_SESSION_IDLE_SECONDS", default=_D.session_idle_seconds
)
WORKBENCH_CONNECT_TIMEOUT_SECONDS: float = env.float(
    "WORKBENCH_CONNECT_TIMEOUT_SECONDS", default=_D.connect_timeout_seconds
)
WORKBENCH_IDLE_CONNECTION_SECONDS: float = env.float(
    "WORKBENCH_IDLE_CONNECTION_SECONDS", default=_D.idle_connection_seconds
)
WORKBENCH_MAX_REQUEST_BYTES: int = env.int(
    "WORKBENCH_MAX_REQUEST_BYTES", default=_D.max_request_bytes
)
WORKBENCH_MAX_RESULT_BYTES: int = env.int("WORKBENCH_MAX_RESULT_BYTES", default=_D.max_result_bytes)
# Live downstream connections per gateway process, in all and per tenant (a tenant's own
# limit, set in the admin, overrides the second).
WORKBENCH_MAX_CONNECTIONS: int = env.int("WORKBENCH_MAX_CONNECTIONS", default=_D.max_connections)
WORKBENCH_TENANT_MAX_CONNECTIONS: int = env.int(
    "WORKBENCH_TENANT_MAX_CONNECTIONS", default=_D.tenant_max_connections
)
# use_tool calls per second (token buckets in the shared store); 0 means no limit.
WORKBENCH_TENANT_RATE_LIMIT: float = env.float(
    "WORKBENCH_TENANT_RATE_LIMIT", default=_D.tenant_rate_limit
)
WORKBENCH_TENANT_RATE_BURST: int = env.int(
    "WORKBENCH_TENANT_RATE_BURST", default=_D.tenant_rate_burst
)
WORKBENCH_KEY_RATE_LIMIT: float = env.float("WORKBENCH_KEY_RATE_LIMIT", default=_D.key_rate_limit)
WORKBENCH_KEY_RATE_BURST: int = env.int("WORKBENCH_KEY_RATE_BURST", default=_D.key_rate_burst)

# Tenant isolation (README "Security model"): open_toolbox's own buckets, requests in
# flight per key, which ${VAR} names servers may reference (never the gateway's own
# settings nor anything its env file sets), where remote servers may be reached beyond
# public addresses, and the bounds of one server's tool list.
WORKBENCH_OPEN_TENANT_RATE_LIMIT: float = env.float(
    "WORKBENCH_OPEN_TENANT_RATE_LIMIT", default=_D.open_tenant_rate_limit
)
WORKBENCH_OPEN_TENANT_RATE_BURST: int = env.int(
    "WORKBENCH_OPEN_TENANT_RATE_BURST", default=_D.open_tenant_rate_burst
)
WORKBENCH_OPEN_KEY_RATE_LIMIT: float = env.float(
    "WORKBENCH_OPEN_KEY_RATE_LIMIT", default=_D.open_key_rate_limit
)
WORKBENCH_OPEN_KEY_RATE_BURST: int = env.int(
    "WORKBENCH_OPEN_KEY_RATE_BURST", default=_D.open_key_rate_burst
)
WORKBENCH_KEY_MAX_IN_FLIGHT: int = env.int(
    "WORKBENCH_KEY_MAX_IN_FLIGHT", default=_D.key_max_in_flight
)
WORKBENCH_HELD_CALLS: int = env.int("WORKBENCH_HELD_CALLS", default=_D.held_calls)
WORKBENCH_ENV_REFERENCES: list[str] = env.list("WORKBENCH_ENV_REFERENCES", default=[])
WORKBENCH_ENV_FILE_NAMES: frozenset[str] = env_file_names(
    os.environ.get("WORKBENCH_ENV_FILE", BASE_DIR / ".env")
)
# Remote servers (and the sign-in flows' requests) only; sandboxed stdio servers have their
# own allowance below.
WORKBENCH_EGRESS_ALLOW: list[str] = env.list("WORKBENCH_EGRESS_ALLOW", default=[])
WORKBENCH_MAX_TOOLS_PER_SERVER: int = env.int(
    "WORKBENCH_MAX_TOOLS_PER_SERVER", default=_D.max_tools_per_server
)
WORKBENCH_MAX_TOOL_PAGES: int = env.int("WORKBENCH_MAX_TOOL_PAGES", default=_D.max_tool_pages)
WORKBENCH_MAX_TOOL_BYTES: int = env.int("WORKBENCH_MAX_TOOL_BYTES", default=_D.max_tool_bytes)

# The stdio sandbox (mcp_gateway/downstream/sandbox/; README "Security model"): bwrap or none, the
# default limits of every stdio server (0: none), the first of the per-tenant uids, and
# the gateway's own paths that no server may see or mount.
WORKBENCH_SANDBOX: str = env.str("WORKBENCH_SANDBOX", default=_D.sandbox)
WORKBENCH_SANDBOX_MEMORY_MB: int = env.int(
    "WORKBENCH_SANDBOX_MEMORY_MB", default=_D.sandbox_memory_mb
)
WORKBENCH_SANDBOX_PROCESSES: int = env.int(
    "WORKBENCH_SANDBOX_PROCESSES", default=_D.sandbox_processes
)
WORKBENCH_SANDBOX_CPU_SECONDS: int = env.int(
    "WORKBENCH_SANDBOX_CPU_SECONDS", default=_D.sandbox_cpu_seconds
)
WORKBENCH_SANDBOX_OPEN_FILES: int = env.int(
    "WORKBENCH_SANDBOX_OPEN_FILES", default=_D.sandbox_open_files
)
WORKBENCH_SANDBOX_UID_BASE: int = env.int("WORKBENCH_SANDBOX_UID_BASE", default=_D.sandbox_uid_base)
# Where each installation on this host claims its uid base (downstream/sandbox/uid_claims).
WORKBENCH_SANDBOX_UID_CLAIMS_DIR: str = env.str(
    "WORKBENCH_SANDBOX_UID_CLAIMS_DIR", default=_D.sandbox_uid_claims_dir
)
WORKBENCH_SANDBOX_TMP_MB: int = env.int("WORKBENCH_SANDBOX_TMP_MB", default=_D.sandbox_tmp_mb)
# Networks and host names every sandboxed stdio server may reach beyond public addresses
# (each server may add its own: `egress_allow`). Never the host's loopback, whatever the
# networks named: a server reaches a host port only when an operator names it on that
# server (`host_ports`).
WORKBENCH_SANDBOX_EGRESS_ALLOW: list[str] = env.list("WORKBENCH_SANDBOX_EGRESS_ALLOW", default=[])
# The host directories a tenant admin may name in a server's parameters (README, "Security
# model"): `{tenant}` is the tenant's slug; empty (the default): none, only mounts an
# operator configures.
WORKBENCH_SANDBOX_TENANT_ROOT: str = root_pattern(
    env.str("WORKBENCH_SANDBOX_TENANT_ROOT", default="")
)
WORKBENCH_SANDBOX_PROTECTED_PATHS: list[str] = sorted(
    {
        str(BASE_DIR),
        str(Path(os.environ.get("WORKBENCH_ENV_FILE", BASE_DIR / ".env")).resolve()),
        str(Path(WORKBENCH_STORE_DIR).resolve()),
        *(
            [str(Path(DATABASES["default"]["NAME"]).resolve().parent)]
            if "sqlite" in DATABASES["default"]["ENGINE"]
            and str(DATABASES["default"]["NAME"]).startswith("/")
            else []
        ),
        *env.list("WORKBENCH_SANDBOX_PROTECTED", default=[]),
    }
)
# Each tenant's persistent package cache (~/.npm, ~/.cache; downstream/sandbox/cache.py):
# where, and its bound in MiB (0: none). No server may mount the directory itself.
WORKBENCH_SANDBOX_CACHE_DIR: str = env.str(
    "WORKBENCH_SANDBOX_CACHE_DIR", default=_D.sandbox_cache_dir
)
WORKBENCH_SANDBOX_CACHE_MB: int = env.int("WORKBENCH_SANDBOX_CACHE_MB", default=_D.sandbox_cache_mb)
WORKBENCH_SANDBOX_PROTECTED_PATHS = protect_cache_directory(
    WORKBENCH_SANDBOX_CACHE_DIR, WORKBENCH_SANDBOX_PROTECTED_PATHS
)

# Behind a load balancer (README "Several replicas"): on SIGTERM, /readyz answers 503 and
# requests are still served this long, before uvicorn stops (workbench_site/drain.py).
WORKBENCH_DRAIN_SECONDS: float = env.float("WORKBENCH_DRAIN_SECONDS", default=DEFAULT_DRAIN_SECONDS)
# A replica named as its load balancer names it (stable across restarts: HAProxy's `server
# r1`, a StatefulSet's pod) starts again, when it starts, the servers it ran, for at most
# WORKBENCH_WARM_UP_SECONDS, /readyz answering 503 meanwhile (mcp_gateway/downstream/warmup).
WORKBENCH_REPLICA: str = env.str("WORKBENCH_REPLICA", default=_D.replica)
WORKBENCH_WARM_UP_SECONDS: float = env.float(
    "WORKBENCH_WARM_UP_SECONDS", default=_D.warm_up_seconds
)

# Observability (mcp_gateway/observe/; README "Observability"). /metrics answers a
# bearer WORKBENCH_METRICS_TOKEN (when set) or a request from one of the allowed addresses,
# and 404 otherwise. Worker processes write their metrics under WORKBENCH_METRICS_DIR
# (cleaned of dead processes' files at start); empty: single-process metrics.
WORKBENCH_METRICS_TOKEN: str = env.str("WORKBENCH_METRICS_TOKEN", default=_D.metrics_token)
WORKBENCH_METRICS_ALLOWED_IPS: list[str] = env.list(
    "WORKBENCH_METRICS_ALLOWED_IPS", default=_D().metrics_allowed_ips
)
WORKBENCH_METRICS_DIR: str = env.str(
    "WORKBENCH_METRICS_DIR", default=str(Path(WORKBENCH_STORE_DIR) / "metrics")
)
# The call log (calls/): on by default; its queue's bound (beyond it entries are dropped
# and counted, a call never waits), the rows per write, how long rows are kept
# (manage.py prune_calls), and the cap on stored arguments/results of opted-in tenants.
WORKBENCH_CALL_LOG: bool = env.bool("WORKBENCH_CALL_LOG", default=_D.call_log)
WORKBENCH_CALL_LOG_QUEUE: int = env.int("WORKBENCH_CALL_LOG_QUEUE", default=_D.call_log_queue)
WORKBENCH_CALL_LOG_BATCH: int = env.int("WORKBENCH_CALL_LOG_BATCH", default=_D.call_log_batch)
WORKBENCH_CALL_LOG_RETENTION_DAYS: int = env.int("WORKBENCH_CALL_LOG_RETENTION_DAYS", default=30)
WORKBENCH_CALL_LOG_PAYLOAD_BYTES: int = env.int("WORKBENCH_CALL_LOG_PAYLOAD_BYTES", default=4096)
# OAuth 2.1 sign-in for tenant members (accounts/oauth_*.py; README "Connect from Claude.ai or
# ChatGPT"): the gateway is its own authorization server, on django-oauth-toolkit.
# WORKBENCH_PUBLIC_URL (above) is also the protected resource its metadata and the 401's
# resource_metadata advertise; the authorization server is at its origin.
WORKBENCH_OAUTH_REGISTRATION: bool = env.bool("WORKBENCH_OAUTH_REGISTRATION", default=True)
WORKBENCH_OAUTH_CLIENT_ID_DOCUMENTS: bool = env.bool(
    "WORKBENCH_OAUTH_CLIENT_ID_DOCUMENTS", default=True
)
WORKBENCH_OAUTH_ACCESS_TOKEN_SECONDS: int = env.int(
    "WORKBENCH_OAUTH_ACCESS_TOKEN_SECONDS", default=3600
)
WORKBENCH_OAUTH_REFRESH_TOKEN_SECONDS: int = env.int(
    "WORKBENCH_OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 24 * 3600
)
WORKBENCH_OAUTH_REDIRECT_SCHEMES: list[str] = env.list(
    "WORKBENCH_OAUTH_REDIRECT_SCHEMES", default=["https"]
)
WORKBENCH_OAUTH_LOOPBACK_HTTP: bool = env.bool("WORKBENCH_OAUTH_LOOPBACK_HTTP", default=True)
# A self-registered client that no member consented to within this long (a sign-in given
# up) is deleted at the next registration (accounts.oauth_clients).
WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS: int = env.int(
    "WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS", default=24 * 3600
)
# Single sign-on (accounts/sso/; README "Sign in with your identity provider"): the
# identity providers (a JSON list), the group mapping kept in Git (added to the admin's),
# and whether local passwords work for anyone but the break-glass superusers.
WORKBENCH_OIDC_PROVIDERS: list[dict[str, object]] = env.json("WORKBENCH_OIDC_PROVIDERS", default=[])
WORKBENCH_OIDC_GROUP_MAPPINGS: list[dict[str, object]] = env.json(
    "WORKBENCH_OIDC_GROUP_MAPPINGS", default=[]
)
WORKBENCH_LOCAL_LOGIN: bool = env.bool("WORKBENCH_LOCAL_LOGIN", default=True)
WORKBENCH_BREAK_GLASS_USERS: list[str] = env.list("WORKBENCH_BREAK_GLASS_USERS", default=[])
check_sso_settings(WORKBENCH_OIDC_PROVIDERS, WORKBENCH_OIDC_GROUP_MAPPINGS)
OAUTH2_PROVIDER = provider_settings(
    issuer=WORKBENCH_PUBLIC_URL.rstrip("/").removesuffix("/mcp"),
    registration=WORKBENCH_OAUTH_REGISTRATION,
    client_id_documents=WORKBENCH_OAUTH_CLIENT_ID_DOCUMENTS,
    refresh_token_seconds=WORKBENCH_OAUTH_REFRESH_TOKEN_SECONDS,
    redirect_schemes=WORKBENCH_OAUTH_REDIRECT_SCHEMES,
    loopback_http=WORKBENCH_OAUTH_LOOPBACK_HTTP,
)

# plain (default) or json: one JSON object per line, uvicorn's own lines included.
LOG_FORMAT: str = env.str("LOG_FORMAT", default="plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be 'plain' or 'json'.")

LOG_LEVEL: str = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "mcp_gateway.JsonFormatter"},
    },
    # A misbehaving downstream must not flood the log: repeats of one message are bounded.
    "filters": {
        # (A downstream server's secret values are redacted as each record is made:
        # kernel.redaction.redact_log_records.)
        "repeats": {"()": "mcp_gateway.RepeatLimit", "per_minute": 20},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["repeats"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        # With LOG_FORMAT=json, uvicorn's own lines (start-up, access) go the same way.
        **{
            name: {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
            if LOG_FORMAT == "json"
        },
    },
}
