"""matrix.yaml: the variants to build or fetch, the runtime tunings, the model forms, the suite,
the baseline and the opt-in sets.

The file is parsed once, here, into the frozen objects of tfbuild.config.model; nothing else reads
YAML. Validation walks the YAML node tree so that every problem is reported as
FILE:LINE:COL: what (got X; expected Y), all at once. Every value that can reach a Dockerfile, a
bazel command line or a shell is checked against a strict pattern (tfbuild.config.values)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from tfbuild.config.model import (
    Defaults,
    Matrix,
    Tuning,
)
from tfbuild.config.sections import (
    read_baseline,
    read_defaults,
    read_opt_in,
    read_suite,
    read_tuning,
    unique,
)
from tfbuild.config.tensorflow import accepted_releases, has_recipe, tf_release
from tfbuild.config.values import AS_GIVEN, FORMS, SCHEMA_VERSION, TF_VERSION_RE
from tfbuild.config.variants import read_variant
from tfbuild.config.yamlread import (
    Ctx,
    as_mapping,
    choice,
    compose,
    integer,
    show,
)
from tfbuild.errors import MatrixError, Problem, UsageError


def parse_matrix(text: str, file: str, base_dir: Path, tensorflow: str | None = None) -> Matrix:
    """Validate matrix text; raises MatrixError listing every problem with its position.
    `tensorflow` replaces defaults.tensorflow (`--tensorflow`: a new release): the source
    variants that do not pin their own release are read, and checked, for it, except those
    asking for a --config it dropped (they keep the declared release, in the matrix's notes)."""
    ctx = Ctx(file=file, base_dir=base_dir)
    root = compose(ctx, text)
    if root is None:
        if not ctx.problems:
            ctx.problems.append(
                Problem(file, 1, 1, "the file is empty; expected a 'variants' list")
            )
        raise MatrixError(ctx.problems)
    top = as_mapping(ctx, root, "")
    if top is None:
        raise MatrixError(ctx.problems)
    top.where = "matrix"
    top.check_keys(
        [
            "schema_version",
            "defaults",
            "variants",
            "tunings",
            "forms",
            "suite",
            "baseline",
            "opt_in",
        ],
        required=["variants"],
    )
    if (n := top.get("schema_version")) is not None:
        integer(ctx, n, "schema_version", SCHEMA_VERSION, SCHEMA_VERSION)
    defaults = read_defaults(ctx, top.get("defaults"))
    declared = None
    if tensorflow is not None:
        declared = defaults.tensorflow
        defaults = _override_tensorflow(defaults, tensorflow)

    def entries(key: str) -> list[yaml.Node]:
        n = top.get(key)
        if n is None:
            return []
        if not isinstance(n, yaml.SequenceNode):
            ctx.error(
                n,
                f"{key}: expected a list of entries, each starting with '- name:' (got {show(n)})",
            )
            return []
        return list(n.value)

    variant_nodes = entries("variants")
    variants, vnodes = [], []
    for i, n in enumerate(variant_nodes):
        v = read_variant(ctx, n, f"variants[{i}]", defaults, declared)
        if v is not None:
            variants.append(v)
            vnodes.append(n)
    if "variants" in top.items and not variant_nodes and not ctx.problems:
        ctx.error(top.items["variants"][1], "variants: the list is empty; expected at least one")
    tunings, tnodes = [], []
    for i, n in enumerate(entries("tunings")):
        t = read_tuning(ctx, n, f"tunings[{i}]")
        if t is not None:
            tunings.append(t)
            tnodes.append(n)
    unique(ctx, variants, "name", "variant", vnodes)
    unique(ctx, variants, "id", "variant", vnodes)
    unique(ctx, tunings, "name", "tuning", tnodes)
    if "tunings" not in top.items:
        tunings.append(Tuning(name="default"))
    forms = read_forms(ctx, top.get("forms"))
    suite = read_suite(ctx, top.get("suite"))
    baseline = read_baseline(ctx, top.get("baseline"), variants, tunings)
    opt_in = read_opt_in(ctx, top.get("opt_in"), variants, baseline)
    if ctx.problems or baseline is None:
        if not ctx.problems:
            ctx.error(root, "matrix: needs at least one variant and one tuning")
        raise MatrixError(sorted(ctx.problems, key=lambda p: (p.line, p.column)))
    return Matrix(
        path=Path(file),
        defaults=defaults,
        variants=tuple(variants),
        tunings=tuple(tunings),
        suite=suite,
        baseline=baseline,
        opt_in=opt_in,
        forms=forms,
        notes=dict(ctx.notes),
    )


def read_forms(ctx: Ctx, node: yaml.Node | None) -> tuple[str, ...]:
    """`forms:`, the model forms a SavedModel workload is measured in: as-given, which the
    others' outputs are checked against and the baseline is, first; each at most once."""
    if node is None:
        return (AS_GIVEN,)
    expected = f"a list of model forms, as-given among them ({', '.join(FORMS)})"
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        ctx.error(node, f"forms: expected {expected} (got {show(node)})")
        return (AS_GIVEN,)
    forms = [choice(ctx, n, f"forms[{i}]", FORMS, "model form") for i, n in enumerate(node.value)]
    for i, (form, n) in enumerate(zip(forms, node.value, strict=True)):
        if form is not None and form in forms[:i]:
            ctx.error(n, f"forms[{i}]: {form} is listed twice; expected each form once")
    if AS_GIVEN not in forms and all(f is not None for f in forms):
        ctx.error(node, f"forms: {AS_GIVEN} is missing; expected {expected}: the baseline is "
                  "measured as given, and every other form is checked against it")  # fmt: skip
    return (AS_GIVEN, *dict.fromkeys(f for f in forms if f is not None and f != AS_GIVEN))


def _override_tensorflow(defaults: Defaults, version: str) -> Defaults:
    if not has_recipe(version):
        short = tf_release(version) is not None and not TF_VERSION_RE.fullmatch(version)
        raise UsageError(
            f"--tensorflow {version!r}: "
            + ("name the patch release" if short else "no build recipe for this release")
            + f"; expected {accepted_releases()}"
            + ("" if short else "; a newer era needs its facts in tfbuild/data/tensorflow.yaml")
        )
    return dataclasses.replace(defaults, tensorflow=version)


def load_matrix(path: Path, tensorflow: str | None = None) -> Matrix:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MatrixError([Problem(str(path), 1, 1, f"cannot read ({exc.strerror})")]) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MatrixError([Problem(str(path), line, 1, "not UTF-8 text")]) from exc
    return parse_matrix(text, str(path), path.resolve().parent, tensorflow)
