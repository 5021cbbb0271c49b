"""WSGI entry of `make run`'s web process (gunicorn, see the Procfile): the application plus the static files,
served the way `runserver` serves them under DEBUG. Production uses `owlat.wsgi` behind a real static server."""

import os

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
application = StaticFilesHandler(get_wsgi_application())
