"""Bench-only settings: the project's settings plus the baseline app and its URL (never used in production)."""

from owlat.settings import *  # noqa: F403
from owlat.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.baseline"]
ROOT_URLCONF = "bench.baseline.urls"
