"""Settings, all read from the environment (django-environ).

Required in production (DEBUG off): SECRET_KEY, SITE_URL, ALLOWED_HOSTS. See README.md for every variable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
# Runtime files (the embedded SQLite database, collected static files, media, editor assets): var/ of the checkout,
# or OWLAT_VAR_DIR (an installed package has no checkout to write into).
VAR_DIR = Path(os.environ.get("OWLAT_VAR_DIR") or BASE_DIR / "var")

env = environ.Env()
TESTING = "pytest" in sys.modules or env.bool("OWLAT_TESTING", default=False)
if (BASE_DIR / ".env").exists() and not TESTING:  # make run's .env must not change what the tests see
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)


def _required(name: str, dev_default: str) -> str:
    value = env.str(name, default="")
    if value:
        return value
    if DEBUG or TESTING:
        return dev_default
    raise ImproperlyConfigured(
        f"The setting {name} is required when DEBUG is off. Set it in the environment or in .env "
        f"(see docs/settings.md)."
    )


SECRET_KEY = _required("SECRET_KEY", "dev-insecure-secret-key-change-me-0123456789abcdef")
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])
SITE_URL = _required("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"] if (DEBUG or TESTING) else [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("The setting ALLOWED_HOSTS is required when DEBUG is off.")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[SITE_URL])

INSTALLED_APPS = [
    "unfold",  # the admin theme (before django.contrib.admin: its templates win); config in UNFOLD below
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "django_q",
    "anymail",
    "axes",
    "owlat",
    "templates.apps.TemplatesConfig",
    "delivery",
    "automations",
    "campaigns",
    "inbox",
]

MIDDLEWARE = [
    "owlat.slashes.CollapseLeadingSlashesMiddleware",  # `//api/v1/…` (a base URL ending in /) as `/api/v1/…`
    "owlat.api.middleware.ApiCorsMiddleware",
    "owlat.api.middleware.ApiMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "owlat.content_policy.ContentPolicyMiddleware",  # django-csp: CONTENT_SECURITY_POLICY below
    "owlat.request_guard.RejectNulBytesMiddleware",
    # Django's session, auth and messages middleware, stepping aside under /api/v1; CSRF's stays
    # as it is (security.W003 looks for it by name; it costs little and enforces nothing under /api/v1)
    "owlat.sandbox.CookielessPagesMiddleware",  # public pages that read and set no cookie (the archive)
    "owlat.api.middleware.SessionMiddlewareExceptApi",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "owlat.api.middleware.AuthenticationMiddlewareExceptApi",
    "owlat.api.middleware.MessageMiddlewareExceptApi",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "owlat.admin_tenancy.ActiveOrganizationMiddleware",
    "owlat.not_found.FriendlyNotFoundMiddleware",  # no debug 404 page for operators
    "axes.middleware.AxesMiddleware",  # last, per django-axes
]

ROOT_URLCONF = "owlat.urls"
WSGI_APPLICATION = "owlat.wsgi.application"
ASGI_APPLICATION = "owlat.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "owlat" / "page_templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "owlat.admin_tenancy.active_organization_context",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------------------
# PostgreSQL is the real database; SQLite (file under var/) is the embedded quick-start default (D-16).
VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'owlat.sqlite3'}")}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db.setdefault("OPTIONS", {})
    _db["OPTIONS"].update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
else:
    _db["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=600)
    # Kept on (measured): the check is one `SELECT 1` on the first query of each request or task on a
    # reused connection, ~0.07 ms of web CPU per API request (~2 % of an events call). Without it, every
    # process's first request or task after a PostgreSQL restart or failover fails on its dead connection
    # (a 500 for an API call, a failed job for a worker) before Django replaces it.
    _db["CONN_HEALTH_CHECKS"] = True
IS_SQLITE = _db["ENGINE"] == "django.db.backends.sqlite3"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The block editor's browser libraries, installed from npm by scripts/editor_assets.sh (never committed)
(VAR_DIR / "editor-assets").mkdir(exist_ok=True)
STATICFILES_DIRS = [("editor", VAR_DIR / "editor-assets")]

# --- Template image library (templates.images) ----------------------------------------------------------
# Images are stored through Django's storage API: files under MEDIA_ROOT by default, an S3-compatible bucket
# with IMAGE_STORAGE=s3 (django-storages; AWS_STORAGE_BUCKET_NAME, AWS_S3_ENDPOINT_URL, AWS_S3_REGION_NAME and
# the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY credentials). Either way mail links them from SITE_URL/img/….
MEDIA_ROOT = env.path("MEDIA_ROOT", default=str(VAR_DIR / "media"))
IMAGE_STORAGE = env.str("IMAGE_STORAGE", default="local")
if IMAGE_STORAGE not in ("local", "s3"):
    raise ImproperlyConfigured("IMAGE_STORAGE must be local or s3.")
STORAGES = {
    "default": (
        {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": env.str("AWS_STORAGE_BUCKET_NAME", default=""),
                "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default="") or None,
                "region_name": env.str("AWS_S3_REGION_NAME", default="") or None,
                "default_acl": None,
                "querystring_auth": True,
                "file_overwrite": False,
            },
        }
        if IMAGE_STORAGE == "s3"
        else {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    ),
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
IMAGE_UPLOAD_MAX_BYTES = env.int("IMAGE_UPLOAD_MAX_BYTES", default=5 * 1024 * 1024)
IMAGE_MAX_PIXELS = env.int("IMAGE_MAX_PIXELS", default=25_000_000)

# --- API ------------------------------------------------------------------------------------------------
DATA_UPLOAD_MAX_MEMORY_SIZE = 15 * 1024 * 1024  # API-05: 15 MiB bodies
API_ALLOWED_ORIGINS = env.list("API_ALLOWED_ORIGINS", default=[])
API_RATE_LIMIT_PER_SECOND = env.float("API_RATE_LIMIT_PER_SECOND", default=10.0)  # API-04
API_RATE_LIMIT_BURST = env.float("API_RATE_LIMIT_BURST", default=15.0)
# Failed API-key and inbound-secret lookups per client address (owlat/lookup_throttle.py): past the burst, 429
# with Retry-After; 0 lifts it. Behind proxies set TRUSTED_PROXY_COUNT (X-Forwarded-For entries they add).
AUTH_FAILURE_RATE_PER_MINUTE = env.float("AUTH_FAILURE_RATE_PER_MINUTE", default=10.0)
AUTH_FAILURE_BURST = env.float("AUTH_FAILURE_BURST", default=20.0)
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=env.int("AXES_PROXY_COUNT", default=0))
# Input limits (owlat/limits.py): refused with 400 (413 on the raw inbound endpoint) naming the field and the
# limit, before any per-key work.
CONTACT_PROPERTIES_MAX_KEYS = env.int("CONTACT_PROPERTIES_MAX_KEYS", default=200)
CONTACT_PROPERTIES_MAX_BYTES = env.int("CONTACT_PROPERTIES_MAX_BYTES", default=64 * 1024)
EVENT_PROPERTIES_MAX_KEYS = env.int("EVENT_PROPERTIES_MAX_KEYS", default=200)
EVENT_PROPERTIES_MAX_BYTES = env.int("EVENT_PROPERTIES_MAX_BYTES", default=64 * 1024)
TRANSACTIONAL_DATA_MAX_KEYS = env.int("TRANSACTIONAL_DATA_MAX_KEYS", default=500)
TRANSACTIONAL_DATA_MAX_BYTES = env.int("TRANSACTIONAL_DATA_MAX_BYTES", default=256 * 1024)
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=15 * 1024 * 1024)
IMPORT_MAX_ROWS = env.int("IMPORT_MAX_ROWS", default=100_000)
FILE_UPLOAD_HANDLERS = [
    "owlat.uploads.UploadLimitHandler",  # stops reading uploads past IMPORT_MAX_BYTES / IMAGE_UPLOAD_MAX_BYTES
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["owlat.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "owlat.api.permissions.HasScope",
        "owlat.api.permissions.FeatureFlagEnabled",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["owlat.api.throttling.ApiKeyRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "owlat.api.pagination.KeysetPagination",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_PARSER_CLASSES": ["owlat.api.parsers.JSONObjectParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "owlat.api.negotiation.JSONOnlyNegotiation",
    "EXCEPTION_HANDLER": "owlat.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "owlat.api.schema.ApiAutoSchema",
}
from owlat.settings_api import SPECTACULAR_SETTINGS  # noqa: E402, F401  (the API document's settings)

# django-cors-headers, for /api/v1 only (API-01); the allowed origins are API_ALLOWED_ORIGINS (read by
# owlat.api.middleware.ApiCorsMiddleware), so CORS_ALLOWED_ORIGINS stays unset.
CORS_URLS_REGEX = r"^/api/v1(/|$)"
CORS_ALLOW_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
CORS_ALLOW_HEADERS = ["Content-Type", "Authorization", "Idempotency-Key"]
CORS_EXPOSE_HEADERS = [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Retry-After",
    "Idempotent-Replayed",
]
CORS_PREFLIGHT_MAX_AGE = 86400

# --- Background work (django-q2, D-05) ------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
# With REDIS_URL the rate limiters' buckets (API-04, D-06 pacing) live in Redis under this prefix.
REDIS_KEY_PREFIX = env.str("REDIS_KEY_PREFIX", default="owlat:")
Q_WORKERS = env.int("Q_WORKERS", default=2)
_q_common = {
    "timeout": env.int("Q_TIMEOUT", default=120),
    "retry": env.int("Q_RETRY", default=180),  # must stay above timeout
    "max_attempts": 1,  # DLV-15: no pool-level retries; retrying happens in our own code
    "save_limit": -1,  # our own status rows record outcomes
    "ack_failures": True,
    "catch_up": False,
    "bulk": 10,
    "poll": env.float("Q_POLL", default=0.05),
    "label": "Django Q2",
}
Q_CLUSTER = {
    "name": "default",
    "workers": Q_WORKERS,
    **_q_common,
    "ALT_CLUSTERS": {
        # D-06: each delivery pool is its own django-q2 queue
        "transactional": {"workers": env.int("Q_TRANSACTIONAL_WORKERS", default=1)},
        # two: while one process's job claims and loads its rows or records its last results, the other's
        # job keeps the SMTP connections busy; the pool's rate is global (D-06), not per process
        "campaign": {"workers": env.int("Q_CAMPAIGN_WORKERS", default=2)},
        # the inbox pipeline (inbox/queues.py): inbound triage never waits behind automations or campaigns
        "inbox": {"workers": env.int("Q_INBOX_WORKERS", default=1)},
    },
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"
# With the ORM broker on the default database, enqueueing is part of the caller's transaction.
Q_BROKER_IS_TRANSACTIONAL = not REDIS_URL
DUE_TASK_POLL_SECONDS = env.float("DUE_TASK_POLL_SECONDS", default=0.25)  # D-05: at most every 250 ms
DUE_TASK_LEASE_SECONDS = env.int("DUE_TASK_LEASE_SECONDS", default=60)
# Cluster liveness and progress (owlat/clusters.py, `manage.py run_cluster`): each cluster's
# supervisor beats every CLUSTER_WATCHDOG_INTERVAL_SECONDS and restarts its cluster when the queue's oldest task
# is older than CLUSTER_STALL_SECONDS while no worker started or finished a task for that long and none is busy.
CLUSTER_WATCHDOG_INTERVAL_SECONDS = env.float("CLUSTER_WATCHDOG_INTERVAL_SECONDS", default=5.0)
CLUSTER_STALL_SECONDS = env.float("CLUSTER_STALL_SECONDS", default=60.0)
# /api/v1/health says "degraded" when a queue's oldest task waited longer than this (or a cluster stopped beating).
HEALTH_QUEUE_AGE_DEGRADED_SECONDS = env.float("HEALTH_QUEUE_AGE_DEGRADED_SECONDS", default=60.0)
# Recovery sweeps (owlat.registry.register_sweep, e.g. re-driving orphaned send rows) run by the due-task
# dispatcher this often, outside the worker queues, so a stalled queue cannot hold them up.
QUEUE_SWEEP_SECONDS = env.float("QUEUE_SWEEP_SECONDS", default=10.0)
# D-07 claims (delivery.lifecycle): a running job renews its claim every SEND_CLAIM_RENEW_SECONDS; a claim not
# renewed for SEND_CLAIM_LEASE_SECONDS belongs to a dead job. Never-claimed transactional rows are handed to
# their pool again after SEND_ORPHAN_AFTER_SECONDS. Together: a killed worker's rows move within 60 s.
SEND_CLAIM_RENEW_SECONDS = env.float("SEND_CLAIM_RENEW_SECONDS", default=10.0)
SEND_CLAIM_LEASE_SECONDS = env.float("SEND_CLAIM_LEASE_SECONDS", default=30.0)
SEND_ORPHAN_AFTER_SECONDS = env.float("SEND_ORPHAN_AFTER_SECONDS", default=30.0)
# A row the sweep handed to its pool again is not handed out again for SEND_REDRIVE_LEASE_SECONDS (at least
# the orphan age above): a stuck queue gets one job per orphan and lease, not one per sweep.
SEND_REDRIVE_LEASE_SECONDS = env.float("SEND_REDRIVE_LEASE_SECONDS", default=60.0)
# Campaigns: the queue of a campaign's control tasks (orchestrator, the paged recipient walk of CMP-29, A/B
# auto-winner and remainder; campaigns/queues.py): apart from the campaign pool's queue, so a campaign starts and
# walks while another organization's large send fills the pool's queue.
CAMPAIGN_CONTROL_QUEUE = env.str("CAMPAIGN_CONTROL_QUEUE", default="default")
# CMP-29 hops: pages walked per task execution (each page its own checkpoint) and no new page after this many
# seconds (far below Q_TIMEOUT).
CAMPAIGN_WALK_PAGES_PER_HOP = env.int("CAMPAIGN_WALK_PAGES_PER_HOP", default=20)
CAMPAIGN_WALK_HOP_SECONDS = env.float("CAMPAIGN_WALK_HOP_SECONDS", default=30.0)
# The events intake's hot statements run as server-side prepared statements on PostgreSQL (owlat/sql.py).
# Off only behind a connection pooler that does not keep a session's prepared statements (PgBouncer in
# transaction mode before 1.21).
OWLAT_PREPARED_STATEMENTS = env.bool("OWLAT_PREPARED_STATEMENTS", default=True)
# Automations: after a batch of fewer than 50 step runs the walk pauses this long before its next
# claim, so that under a steady stream of events batches grow (less CPU per step and per mail, larger delivery
# jobs); it delays a step already due by at most this. 0 = no pause.
AUTOMATION_WALK_LINGER_MS = env.float("AUTOMATION_WALK_LINGER_MS", default=100.0)
# ... and under a fast stream (one that brings at least half a batch of 200 step runs within this) up to this long,
# as long as a full batch takes to arrive; at most AUTOMATION_WALK_LINGER_MS when this is not above it.
AUTOMATION_WALK_LINGER_MAX_MS = env.float("AUTOMATION_WALK_LINGER_MAX_MS", default=300.0)
# Test only: the enqueue helper hands every task to django-q2 twice, as a Redis redelivery or a crashed
# worker would, so tests can prove that every task is duplicate-safe. Ignored outside test mode.
OWLAT_TEST_DELIVER_TWICE = TESTING and env.bool("OWLAT_TEST_DELIVER_TWICE", default=False)

# --- Email (D-09) ---------------------------------------------------------------------------------------
EMAIL_PROVIDER = env.str("EMAIL_PROVIDER", default="")
EMAIL_URL = env.str("EMAIL_URL", default="")
# django-anymail credentials in anymail's own names (D-09), read from the environment; e.g. POSTMARK_SERVER_TOKEN,
# RESEND_API_KEY, MAILGUN_API_KEY, SENDGRID_API_KEY, MANDRILL_API_KEY, and the tracking-webhook secrets.
_ANYMAIL_ENV_NAMES = (
    "WEBHOOK_SECRET",
    "RESEND_API_KEY",
    "RESEND_SIGNING_SECRET",
    "RESEND_INBOUND_SECRET",
    "RESEND_API_URL",
    "POSTMARK_SERVER_TOKEN",
    "POSTMARK_API_URL",
    "POSTMARK_WEBHOOK_SECRET",
    "MAILGUN_API_KEY",
    "MAILGUN_SENDER_DOMAIN",
    "MAILGUN_API_URL",
    "MAILGUN_WEBHOOK_SIGNING_KEY",
    "SENDGRID_API_KEY",
    "SENDGRID_API_URL",
    "SENDGRID_WEBHOOK_SECRET",
    "SENDGRID_TRACKING_WEBHOOK_VERIFICATION_KEY",
    "MANDRILL_API_KEY",
    "MANDRILL_API_URL",
    "MANDRILL_WEBHOOK_KEY",
    "MANDRILL_WEBHOOK_URL",
    "AMAZON_SES_CONFIGURATION_SET_NAME",
)
ANYMAIL = {name: env.str(name) for name in _ANYMAIL_ENV_NAMES if env.str(name, default="")}
# Provider webhooks refuse unsigned events unless this is set, for development only (delivery/webhooks.py).
PROVIDER_WEBHOOKS_ALLOW_UNSIGNED = env.bool("PROVIDER_WEBHOOKS_ALLOW_UNSIGNED", default=False)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="owlat@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# Bounces over plain SMTP: the domain of the VERP return paths (its MX points at the bounce
# intake, `manage.py run_bounce_server`); empty = no VERP. The intake listens on BOUNCE_SERVER_HOST:PORT.
BOUNCE_DOMAIN = env.str("BOUNCE_DOMAIN", default="")
BOUNCE_SERVER_HOST = env.str("BOUNCE_SERVER_HOST", default="127.0.0.1")
BOUNCE_SERVER_PORT = env.int("BOUNCE_SERVER_PORT", default=2525)
# Local parts (at any domain) that take feedback-loop reports (RFC 5965 ARF) which do not come to a VERP address.
BOUNCE_FEEDBACK_LOCAL_PARTS = env.list("BOUNCE_FEEDBACK_LOCAL_PARTS", default=["fbl", "abuse", "complaints"])
# Suppression by bounce reason (delivery/bounces/records.py): an address that soft-bounced (mailbox full, expired,
# unexplained) on BOUNCE_SOFT_THRESHOLD sends within BOUNCE_SOFT_WINDOW_DAYS is suppressed; blocks never suppress,
# DELIVERABILITY_ALERT_THRESHOLD blocks from one receiving domain within DELIVERABILITY_ALERT_WINDOW_MINUTES raise
# the dashboard's deliverability alert.
BOUNCE_SOFT_THRESHOLD = env.int("BOUNCE_SOFT_THRESHOLD", default=5)
BOUNCE_SOFT_WINDOW_DAYS = env.int("BOUNCE_SOFT_WINDOW_DAYS", default=30)
DELIVERABILITY_ALERT_THRESHOLD = env.int("DELIVERABILITY_ALERT_THRESHOLD", default=10)
DELIVERABILITY_ALERT_WINDOW_MINUTES = env.int("DELIVERABILITY_ALERT_WINDOW_MINUTES", default=60)
# Sending-domain verification and DKIM (DOM-12, owlat/domains). Every DNS query goes through the
# resolver built from these: DNS_NAMESERVERS as "ip" or "ip:port" (empty: the system's resolv.conf).
DNS_NAMESERVERS = env.list("DNS_NAMESERVERS", default=[])
DNS_TIMEOUT_SECONDS = env.float("DNS_TIMEOUT_SECONDS", default=3.0)
# The SPF mechanism that authorizes this installation's outgoing mail (e.g. "include:_spf.mailhost.example" or
# "ip4:203.0.113.7"); empty: "a:<host of SITE_URL>".
DOMAIN_SPF_MECHANISM = env.str("DOMAIN_SPF_MECHANISM", default="")
# Return-path domain of a sending domain: "<RETURN_PATH_SUBDOMAIN>.<domain>", published as a CNAME to
# BOUNCE_DOMAIN (empty: the host of SITE_URL), so bounces to it reach the bounce intake.
RETURN_PATH_SUBDOMAIN = env.str("RETURN_PATH_SUBDOMAIN", default="bounces")
# A verification older than this is flagged stale (a warning, DOM-12); the cron re-check runs every 6 hours.
DOMAIN_VERIFICATION_STALE_HOURS = env.int("DOMAIN_VERIFICATION_STALE_HOURS", default=24)
# A verified domain that should sign with DKIM and cannot (its key not published, or undecryptable): "refuse"
# (default) fails its sends with the reason; "send_unsigned" sends them unsigned. Both put it on the dashboard.
DKIM_UNSIGNABLE = env.str("DKIM_UNSIGNABLE", default="refuse")
if DKIM_UNSIGNABLE not in ("refuse", "send_unsigned"):
    raise ImproperlyConfigured('DKIM_UNSIGNABLE must be "refuse" or "send_unsigned".')
# Tracked mail gets the open pixel only with at least this many bytes of visible text (shorter bodies with an
# image look image-only to spam filters); their opens are not measured. 0: always add the pixel.
DELIVERY_OPEN_PIXEL_MIN_TEXT = env.int("DELIVERY_OPEN_PIXEL_MIN_TEXT", default=3300)
# Pacing per pool, messages/second (D-06); 0 = unlimited.
DELIVERY_TRANSACTIONAL_RATE = env.float("DELIVERY_TRANSACTIONAL_RATE", default=30.0)
DELIVERY_CAMPAIGN_RATE = env.float("DELIVERY_CAMPAIGN_RATE", default=20.0)
# SMTP connections one pool job sends over concurrently (each row still claimed and handed off once).
DELIVERY_SMTP_CONNECTIONS = env.int("DELIVERY_SMTP_CONNECTIONS", default=4)
# The fair campaign pool (delivery.fairness): the share of each job's 100 rows every organization with campaign
# rows waiting gets at least (times its weight); the rest goes to the fewest rows waiting first. 0.5 splits two
# organizations equally. Weights: DELIVERY_POOL_WEIGHTS, organization id -> weight (default 1), in code.
DELIVERY_POOL_FLOOR = env.float("DELIVERY_POOL_FLOOR", default=0.1)
# Warm-up capacity, campaign messages per UTC day for the install (CMP-21 #9 pre-flight); 0 = not planned.
CAMPAIGN_DAILY_SEND_CAPACITY = env.int("CAMPAIGN_DAILY_SEND_CAPACITY", default=0)
# CMP-25 link reputation: Google Safe Browsing v4 lookup in the content scan when a key is set.
GOOGLE_SAFE_BROWSING_API_KEY = env.str("GOOGLE_SAFE_BROWSING_API_KEY", default="")
GOOGLE_SAFE_BROWSING_URL = env.str(
    "GOOGLE_SAFE_BROWSING_URL", default="https://safebrowsing.googleapis.com/v4/threatMatches:find"
)

# --- Analytics (DOM-16) ---------------------------------------------------------------------------------
POSTHOG_API_KEY = env.str("POSTHOG_API_KEY", default="")
POSTHOG_HOST = env.str("POSTHOG_HOST", default="https://eu.i.posthog.com")
POSTHOG_SYNC_MODE = env.bool("POSTHOG_SYNC_MODE", default=False)

# --- Customer webhooks (DOM-18) --------------------------------------------------------------------------
WEBHOOK_RETRY_DELAYS_SECONDS = [
    int(x) for x in env.list("WEBHOOK_RETRY_DELAYS_SECONDS", default=["60", "300"])
]
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)

# --- Outbound HTTP to tenant-entered URLs (owlat/outbound.py) -----------------------------------------------
# Hosts reachable whatever their address (`host` or `host:port`); tests list their loopback receivers here.
OUTBOUND_ALLOWED_HOSTS = env.list("OUTBOUND_ALLOWED_HOSTS", default=[])
# Settings holding URLs the operator configured; their hosts are allowed too (add yours, e.g. an LLM base URL).
OUTBOUND_OPERATOR_URL_SETTINGS = ["POSTHOG_HOST", "EMAIL_URL", "LLM_BASE_URL", "OPENAI_BASE_URL"]

# --- Inbox agent and its language model (AGT-02, AGT-28 … AGT-31) ------------------------------------------
# LLM_PROVIDER empty = no model configured: the pipeline still scans and retrieves context, drafts stay empty.
LLM_PROVIDER = env.str("LLM_PROVIDER", default="")  # openai | openrouter | ollama
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
OPENROUTER_API_KEY = env.str("OPENROUTER_API_KEY", default="")
OPENAI_API_KEY = env.str("OPENAI_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_MODEL_FAST = env.str("LLM_MODEL_FAST", default="")
LLM_MODEL_CAPABLE = env.str("LLM_MODEL_CAPABLE", default="")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)
# AGT-13 layer 5: URL reputation through Google Safe Browsing (off without a key; fails open).
SAFE_BROWSING_TIMEOUT_SECONDS = env.float("SAFE_BROWSING_TIMEOUT_SECONDS", default=5.0)
SAFE_BROWSING_CACHE_SECONDS = env.int("SAFE_BROWSING_CACHE_SECONDS", default=1800)
# The queue of the inbox pipeline's tasks (inbox/queues.py): "inbox" (its own cluster) or "default".
INBOX_QUEUE = env.str("INBOX_QUEUE", default="inbox")
INBOX_MAX_MESSAGE_BYTES = env.int("INBOX_MAX_MESSAGE_BYTES", default=10 * 1024 * 1024)
# Inbound attachments (inbox/attachments.py): stored up to this size each and this many per message (larger or
# further ones keep their name, type and size only); reviewers download them from the message's admin page.
INBOX_ATTACHMENT_MAX_BYTES = env.int("INBOX_ATTACHMENT_MAX_BYTES", default=5 * 1024 * 1024)
INBOX_ATTACHMENT_MAX_COUNT = env.int("INBOX_ATTACHMENT_MAX_COUNT", default=20)
# Where `manage.py run_inbox_smtp` (inbound mail over SMTP/LMTP from your MTA, inbox/smtp_intake.py) listens.
INBOX_SMTP_HOST = env.str("INBOX_SMTP_HOST", default="127.0.0.1")
INBOX_SMTP_PORT = env.int("INBOX_SMTP_PORT", default=2526)
# The authserv-id(s) your MTA writes into Authentication-Results (RFC 8601; comma-separated): only those fields
# are read, and without one the mail counts as unauthenticated (inbox/authresults.py). Empty: none is trusted.
INBOX_AUTHSERV_ID = env.list("INBOX_AUTHSERV_ID", default=[])
# IMAP polling of existing mailboxes (inbox/imap_poll.py, `manage.py run_inbox_imap`): messages per poll, the
# wait between polls where the server has no IDLE, the longest IDLE before a fresh poll, a poll's lease.
INBOX_IMAP_BATCH = env.int("INBOX_IMAP_BATCH", default=50)
INBOX_IMAP_POLL_SECONDS = env.float("INBOX_IMAP_POLL_SECONDS", default=60.0)
INBOX_IMAP_IDLE_SECONDS = env.float("INBOX_IMAP_IDLE_SECONDS", default=300.0)
INBOX_IMAP_LEASE_SECONDS = env.int("INBOX_IMAP_LEASE_SECONDS", default=300)
INBOX_STEP_LEASE_SECONDS = env.int("INBOX_STEP_LEASE_SECONDS", default=300)
# AGT-02 step 7 pipeline-start limits (per sender per minute / burst, global per minute / burst); 0 = lifted (D-17)
INBOX_START_RATE_PER_SENDER = env.float("INBOX_START_RATE_PER_SENDER", default=10.0)
INBOX_START_BURST_PER_SENDER = env.float("INBOX_START_BURST_PER_SENDER", default=20.0)
INBOX_START_RATE_GLOBAL = env.float("INBOX_START_RATE_GLOBAL", default=60.0)
INBOX_START_BURST_GLOBAL = env.float("INBOX_START_BURST_GLOBAL", default=120.0)

# --- Admin theme (django-unfold) -------------------------------------------------------------------------
# The sidebar is built per request (owlat/admin/sidebar.py); the admin home is the dashboard
# (owlat/admin/dashboard.py). "/" redirects to the admin, so "View site" lands there.
UNFOLD = {
    "SITE_TITLE": "Owlat",
    "SITE_HEADER": "Owlat",
    "SITE_SUBHEADER": "Email marketing back-office",
    "SITE_SYMBOL": "mail",
    "SITE_URL": "/",
    "SHOW_HISTORY": True,
    "DASHBOARD_CALLBACK": "owlat.admin.dashboard.dashboard_callback",
    "SIDEBAR": {
        "show_search": True,
        "show_all_applications": False,
        "navigation": "owlat.admin.sidebar.navigation",
    },
    "COLORS": {
        "primary": {
            "50": "oklch(97% .014 254.604)",
            "100": "oklch(93.2% .032 255.585)",
            "200": "oklch(88.2% .059 254.128)",
            "300": "oklch(80.9% .105 251.813)",
            "400": "oklch(70.7% .165 254.624)",
            "500": "oklch(62.3% .214 259.815)",
            "600": "oklch(54.6% .245 262.881)",
            "700": "oklch(48.8% .243 264.376)",
            "800": "oklch(42.4% .199 265.638)",
            "900": "oklch(37.9% .146 265.522)",
            "950": "oklch(28.2% .091 267.935)",
        },
    },
}

# --- Production hardening: HTTPS, cookies, proxy, login throttling (README "Configuration") -----------------
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=1 (it then trusts X-Forwarded-Proto: https).
_HTTPS_SITE = SITE_URL.startswith("https://") and not (DEBUG or TESTING)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_HTTPS_SITE)
SECURE_REDIRECT_EXEMPT = env.list("SECURE_REDIRECT_EXEMPT", default=[])
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=_HTTPS_SITE)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=_HTTPS_SITE)
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
USE_X_FORWARDED_HOST = env.bool("USE_X_FORWARDED_HOST", default=False)

# --- Security: Content-Security-Policy of every page of ours (django-csp), invitations (README "Security")--------------------------
# Scripts only from our origin or carrying the request's nonce (`<script nonce="{{ request.csp_nonce }}">`);
# 'unsafe-eval' because django-unfold's Alpine.js evaluates its x-* attributes with Function(). Tenant-written
# HTML never runs under this policy: owlat.sandbox serves it with its own (`sandbox`, opaque origin, no
# scripts). `check --deploy` warns (owlat.W010-W013, owlat/content_policy.py) when this policy is weakened.
from csp.constants import NONCE, NONE, SELF, UNSAFE_EVAL, UNSAFE_INLINE  # noqa: E402

CSP_REPORT_URI = env.str("CSP_REPORT_URI", default="")  # where browsers report what the policy blocked
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE, UNSAFE_EVAL],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "frame-src": [SELF],
        "frame-ancestors": [SELF],
        "form-action": [SELF],
        "base-uri": [SELF],
        "object-src": [NONE],
        "report-uri": [CSP_REPORT_URI] if CSP_REPORT_URI else None,
    },
}
# Membership by invitation (owlat.invitations): how long an invitation and its email link stay open.
INVITATION_MAX_AGE_DAYS = env.int("INVITATION_MAX_AGE_DAYS", default=14)

# django-axes: admin login throttling. Off in test mode (tests log in without a request); one test enables it.
AXES_ENABLED = env.bool("AXES_ENABLED", default=not TESTING)
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("AXES_COOLOFF_MINUTES", default=15.0) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "owlat.lockout.lockout_response"  # 429 saying when it lifts and who can lift it
AXES_VERBOSE = False  # no version banner from every process that loads the settings
AXES_IPWARE_PROXY_COUNT = env.int("AXES_PROXY_COUNT", default=0) or None
AUTHENTICATION_BACKENDS = [
    *(["axes.backends.AxesStandaloneBackend"] if AXES_ENABLED else []),
    "django.contrib.auth.backends.ModelBackend",
]
SILENCED_SYSTEM_CHECKS = [] if AXES_ENABLED else ["axes.W003"]  # the backend is left out on purpose then

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # secrets (inbound secrets, API keys) are blanked in every line the console writes (owlat/logredact.py)
    "filters": {"redact_secrets": {"()": "owlat.logredact.RedactSecretsFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django-q": {"level": env.str("Q_LOG_LEVEL", default="WARNING")},
        # flufl.bounce logs every detector it runs at INFO: one line per detector per received message
        "flufl.bounce": {"level": "WARNING"},
        # one line per request: the access log (gunicorn's) has every 4xx; Django's "Not Found: …" warnings
        # would repeat it. Server errors (5xx) still log here with their traceback.
        "django.request": {"level": "ERROR"},
    },
}

# --- Admin login (forms engineer) -----------------------------------------------------------------------
# The themed login page posts without `next` when opened directly: land on the admin, not /accounts/profile/.
LOGIN_URL = "admin:login"
LOGIN_REDIRECT_URL = "admin:index"
