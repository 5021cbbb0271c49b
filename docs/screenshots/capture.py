"""Capture admin screenshots with headless Chromium (Debian's /usr/bin/chromium) through Playwright.

    .venv/bin/python docs/screenshots/capture.py --base http://127.0.0.1:8000 --user admin --password … \
        --out docs/screenshots/after home=/admin/ automation=/admin/automations/automation/<id>/change/

Each NAME=PATH pair is saved as OUT/NAME.png (viewport 1400 px wide, full page).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--full-page", action="store_true")
    parser.add_argument("pages", nargs="+", help="NAME=PATH")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": 900})
        page.goto(args.base + "/admin/login/")
        page.fill("input[name=username]", args.user)
        page.fill("input[name=password]", args.password)
        page.click("[type=submit]")
        page.wait_for_load_state("networkidle")
        for spec in args.pages:
            name, _, path = spec.partition("=")
            page.goto(args.base + path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(out / f"{name}.png"), full_page=args.full_page)
            print(out / f"{name}.png")
        browser.close()


if __name__ == "__main__":
    main()
