"""How tfbuild words what it writes: outside text placed in a line cannot break it (control
characters are shown escaped), an interval's half-width is a percentage with one decimal (and
"±>1000%" beyond ten times the estimate), an error is said in its first line, and a time span is
said in seconds, minutes (whole, or to a tenth) or hours and minutes."""

from __future__ import annotations

import pytest

from tfbuild.wording import duration, first_line, half_width, printable


def test_control_characters_in_outside_text_are_shown_escaped() -> None:
    """A path or name with a newline would otherwise end the line it is written in."""
    assert printable("a\nb\tc\x1bd\u2028e") == "a\\nb\\tc\\x1bd\\u2028e"


def test_printable_text_is_kept_as_it_is_and_other_values_are_said_as_text() -> None:
    assert printable("café ±4.9% /srv/x y") == "café ±4.9% /srv/x y"
    assert printable(3.5) == "3.5"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (0.049, "±4.9%"),
        (0.0, "±0.0%"),
        (1.234, "±123.4%"),
        (10.0, "±1000.0%"),
        (10.01, "±>1000%"),
        (1e9, "±>1000%"),
        (None, "none"),
    ],
)
def test_a_half_width_is_a_percentage_of_the_estimate_up_to_a_thousand(
    value: float | None, said: str
) -> None:
    assert half_width(value) == said


def test_an_error_is_said_in_its_first_line() -> None:
    assert first_line(ValueError("  \nfirst\nsecond\n")) == "first"


def test_an_error_without_a_message_is_said_by_its_kind() -> None:
    assert first_line(TimeoutError()) == "TimeoutError"
    assert first_line(ValueError("   \n ")) == "ValueError"


def test_a_long_first_line_is_cut_at_three_hundred_characters() -> None:
    said = first_line(RuntimeError("x" * 299 + "yz" + "\nmore"))
    assert said == "x" * 299 + "y"


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "0 s"),
        (40, "40 s"),
        (59.4, "59 s"),
    ],
)
def test_a_duration_under_a_minute_is_said_in_seconds(seconds: float, said: str) -> None:
    assert duration(seconds) == said


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (59.5, "1 min"),  # would round to "60 s"
        (600, "10 min"),
        (177.6, "3 min"),  # 2.96 min: within a twentieth of a whole minute
        (150, "2.5 min"),
        (89, "1.5 min"),
        (3550, "59.2 min"),
    ],
)
def test_a_duration_under_an_hour_is_said_in_whole_minutes_or_to_a_tenth(
    seconds: float, said: str
) -> None:
    assert duration(seconds) == said


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (3597, "1 h"),  # 59.95 min rounds to an hour, not "60 min"
        (3600, "1 h"),
        (5400, "1 h 30 min"),
        (7200, "2 h"),
        (12600 + 40, "3 h 31 min"),
    ],
)
def test_a_duration_of_an_hour_or_more_is_said_in_hours_and_whole_minutes(
    seconds: float, said: str
) -> None:
    assert duration(seconds) == said
