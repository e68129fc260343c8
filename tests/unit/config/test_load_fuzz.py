"""Property tests: whatever text the loader is given, it either returns a Matrix or raises
MatrixError whose every problem points at a line and column inside the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.env import REPO

from tfbuild.config.load import parse_matrix
from tfbuild.errors import MatrixError

DEFAULT = (REPO / "matrix.yaml").read_text()
LINES = DEFAULT.splitlines()
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VOCABULARY = [
    "schema_version",
    "defaults",
    "variants",
    "tunings",
    "suite",
    "baseline",
    "name",
    "id",
    "source",
    "bazel",
    "pypi",
    "wheel",
    "tensorflow",
    "python",
    "configs",
    "cpu_flags",
    "march",
    "copts",
    "cuda",
    "version",
    "cudnn",
    "compute_capabilities",
    "requirement",
    "constraints",
    "path",
    "intra_op",
    "inter_op",
    "env",
    "benchmarks",
    "rounds",
    "min_rounds",
    "max_rounds",
    "budget",
    "resolve",
    "warmup",
    "samples",
    "presets",
    "quick",
    "variant",
    "tuning",
    "base_images",
    "build",
    "runtime",
    "pip",
    "cache",
    "OMP_NUM_THREADS",
    "TF_ENABLE_ONEDNN_OPTS",
    "mkl",
    "avx2",
    "host",
    "physical",
    "<<",
]
TOKENS = [
    ":",
    ": ",
    "-",
    "- ",
    " ",
    "  ",
    "\n",
    "\n  ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "&a ",
    "*a",
    "!!str ",
    "!!python/object ",
    "#",
    "? ",
    "|",
    ">",
    "~",
    "null",
    "true",
    "off",
    "1",
    "2.20",
    "3.10",
    "-1",
    "1e9",
    "99999999999999999999",
    "\t",
    "---\n",
    "...\n",
    "%YAML 1.2\n",
    "\x00",
    "\x85",
    "\ufeff",
    "sm_90",
    "numpy<2",
    "$(x)",
    "x; rm -rf /",
    *VOCABULARY,
]


def check(text: str) -> None:
    try:
        parse_matrix(text, "m.yaml", Path("/tmp"))
    except MatrixError as error:
        assert error.problems
        # YAML's line breaks: LF, CR, CRLF, NEL, LS, PS
        breaks = text.replace("\r\n", "\n")
        last_line = sum(breaks.count(c) for c in "\n\r\x85\u2028\u2029") + 2
        for problem in error.problems:
            assert 1 <= problem.line <= last_line, problem
            assert problem.column >= 1
            assert str(problem).startswith(f"m.yaml:{problem.line}:{problem.column}: ")
            assert problem.message.strip()


@FUZZ
@given(st.text())
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map("".join))
def test_yaml_shaped_text(text: str) -> None:
    check(text)


scalars = st.one_of(
    st.sampled_from(VOCABULARY),
    st.integers(-5, 2000),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(VOCABULARY), children, max_size=5),
    ),
    max_leaves=30,
)


@FUZZ
@given(st.dictionaries(st.sampled_from(VOCABULARY), documents, max_size=6))
def test_schema_shaped_documents(document: dict[str, Any]) -> None:
    check(yaml.safe_dump(document, sort_keys=False))


@FUZZ
@given(st.data())
def test_mutated_default_matrix(data: st.DataObject) -> None:
    lines = list(LINES)
    for _ in range(data.draw(st.integers(1, 6))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["delete", "duplicate", "token", "indent", "swap", "cut"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "token":
            j = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + data.draw(st.sampled_from(TOKENS)) + lines[i][j:]
        elif op == "indent":
            lines[i] = data.draw(st.sampled_from(["", " ", "    ", "\t"])) + lines[i].lstrip()
        elif op == "swap":
            k = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[k] = lines[k], lines[i]
        else:
            lines = lines[:i]
    check("\n".join(lines) + "\n")


def test_default_matrix_itself_is_valid() -> None:
    parse_matrix(DEFAULT, "matrix.yaml", REPO)
