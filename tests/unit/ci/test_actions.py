"""The GitHub actions the workflow uses, pinned by commit: every pin is a full commit SHA with
the release tag it is, a sub-action takes its repository's pin, an action without a pin
cannot be used, and once written out the tag is a YAML comment after the commit (GitHub reads
the commit; Dependabot and a reader see the tag). GitHub itself is not asked whether each
commit is its tag's: that needs the network (the module's docstring says how to check)."""

from __future__ import annotations

import re

import pytest
import yaml

from tfbuild.ci.actions import PINS, TAG_MARK, uses, with_tag_comments

PINNED_LINE = re.compile(r"uses: (?P<action>[\w./-]+)@(?P<commit>[0-9a-f]{40}) # (?P<tag>\S+)$")


def test_every_pin_is_a_full_commit_sha_and_a_release_tag() -> None:
    """A short SHA or a branch could be moved to other code; 40 hex digits cannot. Two
    repositories never share a commit."""
    assert PINS
    for repository, (commit, tag) in PINS.items():
        assert re.fullmatch(r"actions/[a-z][a-z-]*", repository), repository
        assert re.fullmatch(r"[0-9a-f]{40}", commit), (repository, commit)
        assert re.fullmatch(r"v\d+\.\d+\.\d+", tag), (repository, tag)
    commits = [commit for commit, _ in PINS.values()]
    assert len(set(commits)) == len(commits)


@pytest.mark.parametrize("repository", sorted(PINS))
def test_a_pinned_action_is_written_as_its_commit_with_its_tag_in_a_comment(
    repository: str,
) -> None:
    line = with_tag_comments(f"uses: {uses(repository)}")
    written = PINNED_LINE.fullmatch(line)
    assert written, line
    assert written["action"] == repository
    assert (written["commit"], written["tag"]) == PINS[repository]
    assert TAG_MARK not in line


@pytest.mark.parametrize(
    ("action", "repository"),
    [("actions/cache/save", "actions/cache"), ("actions/cache/restore", "actions/cache")],
)
def test_a_sub_action_keeps_its_path_and_takes_its_repositorys_pin(
    action: str, repository: str
) -> None:
    written = PINNED_LINE.fullmatch(with_tag_comments(f"uses: {uses(action)}"))
    assert written and written["action"] == action
    assert (written["commit"], written["tag"]) == PINS[repository]


@pytest.mark.parametrize("action", ["actions/labeler", "someone/checkout", "checkout"])
def test_an_action_without_a_pin_cannot_be_used(action: str) -> None:
    """No unpinned fallback: a new action needs its pin first."""
    with pytest.raises(KeyError):
        uses(action)


def test_in_a_written_workflow_github_reads_the_commit_and_the_tag_is_a_comment() -> None:
    steps = {
        "steps": [
            {"uses": uses("actions/checkout"), "with": {"persist-credentials": False}},
            {"uses": uses("actions/cache/save"), "if": "always()"},
        ]
    }
    text = with_tag_comments(yaml.safe_dump(steps, sort_keys=False))
    lines = [line for line in text.splitlines() if "uses:" in line]
    assert len(lines) == 2 and all(PINNED_LINE.search(line) for line in lines)
    read = yaml.safe_load(text)["steps"]
    assert [s["uses"] for s in read] == [
        f"actions/checkout@{PINS['actions/checkout'][0]}",
        f"actions/cache/save@{PINS['actions/cache'][0]}",
    ]
    assert read[0]["with"] == {"persist-credentials": False} and read[1]["if"] == "always()"


def test_text_without_pins_is_left_as_it_is() -> None:
    text = "run: echo '# not a pin' && git log --format='#%h'\n"
    assert with_tag_comments(text) == text
