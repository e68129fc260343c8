"""Text from outside (paths, names, results files) placed inside a line tfbuild writes."""

from __future__ import annotations


def printable(value: object) -> str:
    """`value` with control characters shown escaped (a newline would end the comment or the
    line it is written in, and start another)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))


def half_width(value: float | None) -> str:
    """How far an interval reaches, as a fraction of its estimate: "±4.9%"; beyond 1000 % (an
    interval from very few rounds) it says only that."""
    if value is None:
        return "none"
    return f"±{value:.1%}" if value <= 10.0 else "±>1000%"


def first_line(exc: BaseException) -> str:
    """An exception's message, first line only, for a one-line error."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def duration(seconds: float) -> str:
    """A time span as a person reads it: "40 s", "10 min", "2.5 min", "1 h 30 min"."""
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if round(minutes) < 60:
        whole = abs(minutes - round(minutes)) < 0.05
        return f"{minutes:.0f} min" if whole else f"{minutes:.1f} min"
    hours, rest = divmod(round(minutes), 60)
    return f"{hours} h" + (f" {rest} min" if rest else "")
