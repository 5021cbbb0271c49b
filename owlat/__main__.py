"""`owlat` (the installed package's console script) and `python -m owlat`: manage.py for an install without the
checkout, e.g. `owlat migrate`, `owlat run_bounce_server`, `owlat bootstrap --demo`."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "owlat.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line([os.path.basename(sys.argv[0]) or "owlat", *sys.argv[1:]])


if __name__ == "__main__":
    main()
