"""The starter layouts offered when a template is created: block documents (templates.blocks) to build on."""

from __future__ import annotations

from typing import Any

FOOTER = {
    "id": "footer",
    "type": "footer",
    "text": "You get this email because you signed up on our website.",
}


def _text(block_id: str, html: str) -> dict[str, Any]:
    return {"id": block_id, "type": "text", "html": html}


LAYOUTS: dict[str, dict[str, Any]] = {
    "newsletter": {
        "name": "Newsletter",
        "description": "Heading, intro, two columns of stories, a button and the footer",
        "content": {
            "version": 1,
            "blocks": [
                {"id": "title", "type": "heading", "text": "This month at a glance", "align": "center"},
                _text("intro", "<div>Hi {{firstName|'there'}}, here is what happened this month.</div>"),
                {"id": "hero", "type": "image", "src": "", "alt": ""},
                {
                    "id": "stories",
                    "type": "columns",
                    "columns": [
                        {
                            "blocks": [
                                {"id": "s1-title", "type": "heading", "text": "First story", "level": 3},
                                _text("s1-text", "<div>A short summary of the first story.</div>"),
                            ]
                        },
                        {
                            "blocks": [
                                {"id": "s2-title", "type": "heading", "text": "Second story", "level": 3},
                                _text("s2-text", "<div>A short summary of the second story.</div>"),
                            ]
                        },
                    ],
                },
                {
                    "id": "cta",
                    "type": "button",
                    "label": "Read all stories",
                    "href": "https://example.com/news",
                },
                {"id": "rule", "type": "divider"},
                FOOTER,
            ],
        },
    },
    "announcement": {
        "name": "Announcement",
        "description": "One big message: image, heading, text and a button",
        "content": {
            "version": 1,
            "blocks": [
                {"id": "hero", "type": "image", "src": "", "alt": ""},
                {"id": "title", "type": "heading", "text": "Something new is here", "align": "center"},
                _text("body", "<div>Tell your readers what changed and why it matters to them.</div>"),
                {
                    "id": "cta",
                    "type": "button",
                    "label": "See what is new",
                    "href": "https://example.com/new",
                },
                {"id": "space", "type": "spacer", "height": 16},
                FOOTER,
            ],
        },
    },
    "welcome": {
        "name": "Welcome",
        "description": "A warm hello, three first steps and social links",
        "content": {
            "version": 1,
            "blocks": [
                {"id": "title", "type": "heading", "text": "Welcome, {{firstName|'friend'}}!"},
                _text(
                    "body",
                    "<div>Thanks for joining. Three things to start with:</div>"
                    "<ol><li>Complete your profile</li><li>Explore the guides</li><li>Say hello to the team</li></ol>",
                ),
                {"id": "cta", "type": "button", "label": "Get started", "href": "https://example.com/start"},
                {
                    "id": "social",
                    "type": "social",
                    "links": [
                        {"network": "x", "url": "https://x.com/example"},
                        {"network": "linkedin", "url": "https://www.linkedin.com/company/example"},
                    ],
                },
                FOOTER,
            ],
        },
    },
}
