"""The GitHub actions the generated workflow uses, pinned by commit: a tag can be moved to
other code after a workflow was reviewed, a commit cannot. Each pin is written with its
release tag in a comment (`uses: actions/checkout@<sha> # v7.0.1`), so Dependabot and Renovate
update both, and a reader sees the version.

The commits are each release tag's, as Dependabot's and Renovate's update pull requests and
workflows pinned by `gh api` agree (October 2026); every action here runs on Node 24. Before
changing one: `git ls-remote --tags https://github.com/actions/REPO 'vN*'`.
"""

from __future__ import annotations

PINS: dict[str, tuple[str, str]] = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/cache": ("55cc8345863c7cc4c66a329aec7e433d2d1c52a9", "v6.1.0"),
    "actions/upload-artifact": ("043fb46d1a93c77aae656e7c1c64a875d1fc6a0a", "v7.0.1"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
    "actions/upload-pages-artifact": ("fc324d3547104276b827a68afc52ff2a11cc49c9", "v5.0.0"),
    "actions/deploy-pages": ("368f82528645a54fb793d4d04e342629a3f51346", "v5.0.1"),
}
"""Action repository -> (commit, the release tag it is)."""

TAG_MARK = "#tag="
"""Joins a pin to its tag until the workflow is written out: YAML has no comment to carry it
in a value, so `render` turns `@sha#tag=v7.0.1` into `@sha # v7.0.1`."""


def uses(action: str) -> str:
    """`uses:` for an action of PINS or a sub-action of one (actions/cache/save)."""
    repository = "/".join(action.split("/")[:2])
    commit, tag = PINS[repository]
    return f"{action}@{commit}{TAG_MARK}{tag}"


def with_tag_comments(text: str) -> str:
    """The workflow's text with each pin's tag as a comment after it."""
    return text.replace(TAG_MARK, " # ")
