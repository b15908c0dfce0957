"""Workbench settings: everything comes from the environment (and `.env` when present)."""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

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
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "toolboxes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://workbench")}

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
# Only for collectstatic; WhiteNoise finds the admin's files in the apps otherwise.
STATIC_ROOT = env.str("STATIC_ROOT", default=None)
# The admin's CSS and JS are served by WhiteNoise straight from the apps: no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Secure cookies whenever the admin is served over HTTPS in production.
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)

# The gateway's own knobs (read by mcp_gateway through django.conf.settings).
WORKBENCH_SESSION_IDLE_SECONDS: int = env.int("WORKBENCH_SESSION_IDLE_SECONDS", default=3600)
WORKBENCH_CONNECT_TIMEOUT_SECONDS: float = env.float(
    "WORKBENCH_CONNECT_TIMEOUT_SECONDS", default=30.0
)
WORKBENCH_IDLE_CONNECTION_SECONDS: float = env.float(
    "WORKBENCH_IDLE_CONNECTION_SECONDS", default=600.0
)
WORKBENCH_MAX_REQUEST_BYTES: int = env.int("WORKBENCH_MAX_REQUEST_BYTES", default=4 * 1024 * 1024)
WORKBENCH_MAX_RESULT_BYTES: int = env.int("WORKBENCH_MAX_RESULT_BYTES", default=10 * 1024 * 1024)
# Live downstream connections per gateway process, in all and per tenant (a tenant's own
# limit, set in the admin, overrides the second).
WORKBENCH_MAX_CONNECTIONS: int = env.int("WORKBENCH_MAX_CONNECTIONS", default=500)
WORKBENCH_TENANT_MAX_CONNECTIONS: int = env.int("WORKBENCH_TENANT_MAX_CONNECTIONS", default=50)
# use_tool calls per second (token buckets, shared through Redis); 0 means no limit.
WORKBENCH_TENANT_RATE_LIMIT: float = env.float("WORKBENCH_TENANT_RATE_LIMIT", default=0.0)
WORKBENCH_TENANT_RATE_BURST: int = env.int("WORKBENCH_TENANT_RATE_BURST", default=0)
WORKBENCH_KEY_RATE_LIMIT: float = env.float("WORKBENCH_KEY_RATE_LIMIT", default=0.0)
WORKBENCH_KEY_RATE_BURST: int = env.int("WORKBENCH_KEY_RATE_BURST", default=0)

LOG_LEVEL: str = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # A misbehaving downstream must not flood the log: repeats of one message are bounded.
    "filters": {"repeats": {"()": "mcp_gateway.logfilter.RepeatLimit", "per_minute": 20}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["repeats"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False}},
}
