"""The social-link icons of the `social` block, served from our own static files (never a third party's host, so
mail does not depend on one and rendering is the same everywhere).

The icons are built at setup (scripts/editor_assets.sh runs `python -m templates.social_icons`): the brand logos
of the npm package super-tiny-icons (MIT; SVG), and our own `templates/icons/web.svg` for a website link, are
rasterized with resvg (resvg-py) to PNG at twice the size mail shows them (sharp on high-density screens; Gmail
and Outlook do not show SVG), with rounded corners, into `var/editor-assets/social/`, which Django serves as
`static/editor/social/<network>.png`. Nothing built is committed.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

#: The size (px) mail shows an icon at; the PNG has twice as many pixels.
ICON_SIZE = 28
SCALE = 2
#: Corner radius, as a fraction of the side.
CORNER = 0.18
STATIC_DIR = "editor/social"
OWN_ICONS = Path(__file__).resolve().parent / "icons"
#: network (templates.blocks.SOCIAL_NETWORKS) → the SVG it is drawn from: a file of super-tiny-icons'
#: images/svg/ folder, or ours (`own:`)
SOURCES = {
    "facebook": "facebook.svg",
    "instagram": "instagram.svg",
    "linkedin": "linkedin.svg",
    "x": "x.svg",
    "youtube": "youtube.svg",
    "github": "github.svg",
    "pinterest": "pinterest.svg",
    "web": "own:web.svg",
}


def icon_path(network: str) -> str:
    """The icon's path among the static files."""
    return f"{STATIC_DIR}/{network}.png"


def icon_url(network: str) -> str:
    """The icon's absolute address, as mail links it: the static file on SITE_URL (or STATIC_URL when that is
    an absolute address, e.g. a CDN)."""
    from django.conf import settings
    from django.templatetags.static import static

    url = static(icon_path(network))
    if url.startswith(("http://", "https://")):
        return url
    return f"{settings.SITE_URL.rstrip('/')}/{url.lstrip('/')}"


def _source(package_svg_dir: Path, network: str) -> Path:
    name = SOURCES[network]
    return OWN_ICONS / name.removeprefix("own:") if name.startswith("own:") else package_svg_dir / name


def render_icon(svg: Path) -> bytes:
    """One icon as PNG bytes: `svg` rasterized at ICON_SIZE × SCALE pixels, corners rounded."""
    import resvg_py
    from PIL import Image, ImageDraw

    side = ICON_SIZE * SCALE
    data = bytes(resvg_py.svg_to_bytes(svg_path=str(svg), width=side, height=side, skip_system_fonts=True))
    image = Image.open(io.BytesIO(data)).convert("RGBA")
    # the mask drawn 4x larger and scaled down: smooth corners
    mask = Image.new("L", (side * 4, side * 4), 0)
    ImageDraw.Draw(mask).rounded_rectangle(
        (0, 0, side * 4 - 1, side * 4 - 1), radius=side * 4 * CORNER, fill=255
    )
    mask = mask.resize((side, side), Image.Resampling.LANCZOS)
    alpha = Image.composite(image.getchannel("A"), Image.new("L", (side, side), 0), mask)
    image.putalpha(alpha)
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()


def build(package_svg_dir: Path, out_dir: Path) -> list[Path]:
    """Write every network's icon into `out_dir`; the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for network in SOURCES:
        source = _source(package_svg_dir, network)
        if not source.is_file():
            raise FileNotFoundError(f"{source} is missing: run `npm ci` (package super-tiny-icons)")
        target = out_dir / f"{network}.png"
        target.write_bytes(render_icon(source))
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the social block's icons (PNG) from their SVGs.")
    parser.add_argument("package_svg_dir", type=Path, help="node_modules/super-tiny-icons/images/svg")
    parser.add_argument("out_dir", type=Path, help="var/editor-assets/social")
    args = parser.parse_args(argv)
    try:
        written = build(args.package_svg_dir, args.out_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"social icons: {exc}", file=sys.stderr)
        return 2
    print(f"social icons: {len(written)} written to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
