"""The values matrix.yaml accepts: the pattern every value that may reach a Dockerfile, a bazel
command line or a shell must match, the environment variables tunings may set, durations and
percentages, and the "did you mean" hint of every message."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from typing import Literal

SCHEMA_VERSION = 1


Source = Literal["bazel", "pypi", "wheel"]


SHA256_RE = re.compile(r"[0-9a-f]{64}")
SOURCES: tuple[Source, ...] = ("bazel", "pypi", "wheel")
RUNTIMES = ("auto", "local", "docker")
THREAD_WORDS = ("physical", "logical")

# Patterns for everything that may reach a template, a command line or a shell.
NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?")
NAME_RULE = (
    "lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit, "
    "at most 64 characters"
)
ID_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?")
TF_VERSION_RE = re.compile(r"\d+\.\d+\.\d+(?:rc\d+)?")
"""A release, or a release candidate as the package index names it (2.22.0rc0)."""
PY_VERSION_RE = re.compile(r"3\.\d{1,2}")
CONFIG_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
COPT_RE = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+:/-]{0,199}")
BAZEL_FLAG_RE = re.compile(r"--[a-z_][a-z0-9_]{0,63}(=[A-Za-z0-9_.,:/=@+-]{0,200})?")
CUDA_VERSION_RE = re.compile(r"\d{1,2}\.\d{1,2}(\.\d{1,3})?")
CC_RE = re.compile(r"(sm|compute)_\d{2,3}[a-z]?")
CC_NUMBER_RE = re.compile(r"(\d{1,2})\.(\d)")
REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~*+ ]{0,199}")
IMAGE_RE = re.compile(
    r"(?:[a-z0-9.-]+(?::\d+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?"
)
PINNED_RE = re.compile(r"@sha256:[a-f0-9]{64}$")
PINNED_EXPECTED = (
    "an image reference with its digest, like "
    "docker.io/library/debian:bookworm-slim@sha256:<64 hex digits> (`docker buildx imagetools "
    "inspect IMAGE` prints the digest)"
)
URL_RE = re.compile(r"(?:grpcs?|https?)://[A-Za-z0-9.-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~/-]*)?")
INDEX_URL_RE = re.compile(r"(?:https?|file)://[A-Za-z0-9._~:/@%+-]+")
BUILD_NETWORKS = ("bridge", "host")
HOST_DIR_RE = re.compile(r"/[A-Za-z0-9._/+-]{0,1023}")
PATH_RE = re.compile(r"[A-Za-z0-9._/+-][A-Za-z0-9._/+ -]{0,1023}")
VOLUME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
HOST_RE = re.compile(r"[A-Za-z0-9.-]{1,253}(?::\d{1,5})?")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
ENV_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:=+/@%\- ]{0,1024}")


# Environment variables with a known meaning, and the values each one accepts.
KNOWN_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "threads",
    "MKL_NUM_THREADS": "threads",
    "TF_NUM_INTRAOP_THREADS": "threads",
    "TF_NUM_INTEROP_THREADS": "threads",
    "KMP_BLOCKTIME": "blocktime",
    "KMP_AFFINITY": "text",
    "KMP_SETTINGS": "bool01",
    "KMP_HW_SUBSET": "text",
    "OMP_PROC_BIND": "text",
    "OMP_PLACES": "text",
    "OMP_WAIT_POLICY": "text",
    "TF_ENABLE_ONEDNN_OPTS": "bool01",
    "TF_DISABLE_MKL": "bool01",
    "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "bool01",
    "TF_ONEDNN_USE_SYSTEM_ALLOCATOR": "bool01",
    "ONEDNN_MAX_CPU_ISA": "text",
    "DNNL_MAX_CPU_ISA": "text",
    "ONEDNN_VERBOSE": "text",
    "TF_CPP_MIN_LOG_LEVEL": "text",
    "TF_XLA_FLAGS": "text",
    "LD_PRELOAD": "text",
    "MALLOC_ARENA_MAX": "text",
}


_DURATION_RE = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def parse_duration(text: str) -> float | None:
    """Seconds in ``90s``, ``15m``, ``1h30m``, ``1.5h`` or a bare number of seconds; None if
    the text is none of these."""
    value = text.strip().lower()
    match = _DURATION_RE.fullmatch(value)
    if not value or match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


BUDGET_EXAMPLE = "like 20m or 1h30m in all, or 2m30s per config, at least 20m"
_PER_CONFIG_RE = re.compile(r"(.+?)\s*(?:per|/|a)\s*config(?:\s*,?\s*at\s+least\s+(.+))?")


def parse_budget(text: str) -> tuple[float, bool, float] | None:
    """A budget's seconds, whether they are per config and the least in all: ``20m`` in all,
    ``4m per config`` (also ``4m/config``, ``4m a config``) for each config run, with ``, at
    least 20m`` a floor in all; None if none of these."""
    value = text.strip().lower()
    per = _PER_CONFIG_RE.fullmatch(value)
    if per is None:
        seconds = parse_duration(value)
        return None if seconds is None else (seconds, False, 0.0)
    seconds = parse_duration(per.group(1))
    floor = parse_duration(per.group(2)) if per.group(2) is not None else 0.0
    return None if seconds is None or floor is None else (seconds, True, floor)


def parse_percent(text: str) -> float | None:
    """A fraction from ``5%`` or ``0.05``, strictly between 0 and 1; None otherwise."""
    value = text.strip()
    try:
        number = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
    except ValueError:
        return None
    return number if 0 < number < 1 and math.isfinite(number) else None


def did_you_mean(value: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or an empty string."""
    hint = difflib.get_close_matches(value, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {hint[0]!r}?" if hint else ""


def unknown(kind: str, value: str, known: Sequence[str]) -> str:
    message = f"unknown {kind} {value!r} (expected one of: {', '.join(known)})"
    return message + did_you_mean(value, known)


TIMEOUT_S = 1800.0
"""How long one piece of work outside tfbuild may take before it is stopped, unless the
command says otherwise: a benchmark process (--timeout), a runtime image's install, an
export."""
AS_GIVEN = "as-given"
FORMS = (AS_GIVEN, "optimized", "litert", "litert-int8")
"""The forms a SavedModel workload is measured in (tfbuild/bench/workload_forms.py makes them in
the runtime): as handed over; frozen and optimized ahead of time by TensorFlow's graph
optimizer; converted by the build's own TFLiteConverter and run by LiteRT's interpreter, in
float32 or (opt-in) quantized to int8 with the workload's inputs as representative data."""
QUANTIZED = ("litert-int8",)
"""Forms whose numbers are meant to differ from the as-given form's: never asked for unless
named, their errors shown wherever their speed is."""
FORM_PACKAGES = {form: ("ai-edge-litert==2.3.0",) for form in ("litert", "litert-int8")}
"""What a form needs installed beside the build's wheel, resolved with it by one pip install
(the versions pip picks, each with its sha256, are recorded with the runtime)."""
XLA_AUTO_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
"""TF_XLA_FLAGS of a tuning with `xla: auto`: auto-clustering, on the CPU as well."""
XLA_MODES = {
    "jit": "every graph function compiled by XLA (tf.function(jit_compile=True))",
    "auto": f"XLA auto-clustering (TF_XLA_FLAGS={XLA_AUTO_FLAGS})",
}
