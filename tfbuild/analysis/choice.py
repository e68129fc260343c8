"""What to use: the config a session's verdicts recommend, and what it takes to get the same
build and settings on another machine: the exact requirement, hash-checked by pip wherever the
commands are pasted, the variables to export and the thread pools to set."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from tfbuild import wheelfile
from tfbuild.analysis.answer import Decision
from tfbuild.analysis.estimates import Estimate
from tfbuild.errors import BadWheel
from tfbuild.results.model import ConfigEntry, VariantRecord


@dataclass(frozen=True)
class Choice:
    """The config to use, and what it takes to get the same build and settings on another
    machine."""

    config: str
    variant: str
    tuning: str
    ratio: float | None
    reason: str
    wheel: str | None
    """The wheel's file name."""
    sha256: str | None
    requirement: str | None
    """The exact requirement measured: name[extras]==version."""
    where: str | None
    """Where that wheel is to be had: the package index, or a store of tfbuild's."""
    install: list[str]
    """The commands that install it, hash-checked, wherever they are pasted."""
    env: dict[str, str]
    threading: list[str]
    lock: tuple[str, ...] = ()
    """The whole runtime as measured, a requirements file's lines: every package pip
    installed into it, pinned to its version and file (--hash); none when the session did not
    record them. `lock_text` writes the file."""
    requirements: str | None = None
    """Where the lock was written, when a command wrote it."""

    def lock_text(self, session: str) -> str:
        """The requirements file of the runtime measured (`pip install --require-hashes -r`)."""
        head = [
            f"# The runtime tfbuild measured for {self.config} ({session}): every package pip",
            "# installed into it, pinned to the version and the file (sha256) measured.",
            "#   pip install --require-hashes -r THIS-FILE",
        ]
        if any(_WHERE in line for line in self.install):  # a wheel on no package index
            head += [
                f"# The build's wheel comes from the folder or page in ${WHEELS_VARIABLE}.",
                f"--find-links ${{{WHEELS_VARIABLE}}}",
            ]
        return "\n".join([*head, *self.lock]) + "\n"


WHEELS_VARIABLE = "TFBUILD_WHEELS"
"""What the "use this" block of a wheel on no package index asks the reader to set: a folder
or page (pip --find-links) that holds the wheel."""
_WHERE = f"${{{WHEELS_VARIABLE}:?a folder or page that holds the wheel}}"


def _install(source: str, requirement: str, sha256: str, constraints: Sequence[str]) -> list[str]:
    """Commands that install exactly the wheel measured, pasted anywhere: the wheel alone,
    checked against its sha256 (pip's hash-checking mode, fed on stdin), then what it depends
    on, with the session's constraints. A wheel on no package index comes from the folder or
    page in $TFBUILD_WHEELS, and the shell stops with a message when it is not set."""
    name = requirement.split("[", 1)[0].split("==", 1)[0] + "==" + requirement.split("==", 1)[1]
    hashed = shlex.quote(f"{name} --hash=sha256:{sha256}")
    links = ""
    if source != "pypi":
        links = f' --find-links "{_WHERE}"'
    rest = " ".join(shlex.quote(c) for c in constraints)
    return [
        f"echo {hashed} | pip install --no-deps --require-hashes{links} -r /dev/stdin",
        f"pip install{links} {shlex.quote(requirement)}" + (f" {rest}" if rest else ""),
    ]


def published(choice: Choice, index_url: str) -> Choice:
    """The choice of a wheel on no package index, its install commands reading the wheel
    from `index_url` (a PEP 503 index over the store, as `tfbuild index` writes and the nightly
    workflow's publish job deploys), unless TFBUILD_WHEELS names another place. Unchanged for
    a wheel from the package index."""
    if choice.requirement is None or not any(_WHERE in line for line in choice.install):
        return choice
    project = canonicalize_name(choice.requirement.split("[", 1)[0].split("==", 1)[0])
    page = f"{index_url.rstrip('/')}/{project}/"
    return replace(
        choice,
        where=f"the index published at {index_url.rstrip('/')}/ (its page {page})",
        install=[
            line.replace(_WHERE, f"${{{WHEELS_VARIABLE}:-{page}}}") for line in choice.install
        ],
    )


def _requirement(variant: VariantRecord) -> tuple[str, str] | None:
    """The variant's wheel as the exact requirement that installs it (name[extras]==version,
    from the wheel's own name), and where it is to be had."""
    artifact = variant.artifact
    if artifact is None:
        return None
    filename = artifact.wheel.replace("\\", "/").rsplit("/", 1)[-1]
    try:
        name, version, _, _ = parse_wheel_filename(filename)
        pythons = wheelfile.cpython_versions(filename)
    except (InvalidWheelFilename, BadWheel):
        return None
    extras = f"[{','.join(sorted(artifact.extras))}]" if artifact.extras else ""
    requirement = f"{name}{extras}=={version}"
    if variant.definition.get("source") == "pypi":
        for_python = f", the wheel for CPython {' or '.join(pythons)}" if pythons else ""
        return requirement, f"the package index{for_python}"
    folder = artifact.wheel.rsplit("/", 1)[0] if "/" in artifact.wheel else "."
    return requirement, (
        f"the store of the machine the session ran on ({folder}/), on no package index: copy "
        f"the wheel, or serve that store with `tfbuild index`, and set {WHEELS_VARIABLE} to the "
        "folder or page that holds it"
    )


def choose(
    key: str,
    reason: str,
    configs: Mapping[str, ConfigEntry],
    variants: Mapping[str, VariantRecord],
    ratio: float | None,
) -> Choice:
    """What it takes to use config `key` (the answer's, or the baseline while nothing is
    decided) on another machine; `reason` says why it is the one."""
    config = configs[key]
    variant = variants.get(config.variant)
    artifact = variant.artifact if variant else None
    found = _requirement(variant) if variant else None
    install = []
    if artifact and found:
        install = _install(
            str(variant.definition.get("source")) if variant else "",
            found[0],
            artifact.sha256,
            artifact.constraints,
        )
    elif variant and variant.definition.get("requirement"):
        install.append(f"pip install {shlex.quote(str(variant.definition['requirement']))}")
    threading = []
    if config.intra_op:
        threading.append(
            f"tf.config.threading.set_intra_op_parallelism_threads({int(config.intra_op)})"
        )
    if config.inter_op:
        threading.append(
            f"tf.config.threading.set_inter_op_parallelism_threads({int(config.inter_op)})"
        )
    if config.xla == "jit":  # measured with every graph function compiled by XLA
        threading.append("tf.function(..., jit_compile=True) around the model's call (xla: jit)")
    threading += FORM_STEPS.get(config.form, [])
    packages = variant.runtime.packages if variant and variant.runtime else ()
    lock = tuple(p.requirement() for p in packages if p.sha256) + tuple(
        f"# {p.name}=={p.version} ({p.file}): pip recorded no hash for it, so it is not pinned"
        for p in packages
        if not p.sha256
    )
    return Choice(
        config=key,
        variant=config.variant,
        tuning=config.tuning,
        ratio=ratio,
        reason=reason,
        wheel=artifact.wheel.rsplit("/", 1)[-1] if artifact else None,
        sha256=artifact.sha256 if artifact else None,
        requirement=found[0] if found else None,
        where=found[1] if found else None,
        install=install,
        env={str(k): str(v) for k, v in config.env.items()},
        threading=threading,
        lock=lock,
    )


FORM_STEPS = {
    "optimized": [
        "the model in the form it was measured in (optimized): its signature frozen at its "
        "inputs' shapes (convert_variables_to_constants_v2), optimized by grappler ahead of "
        "time, called as a graph function (tfbuild/bench/workload_forms.py does it)"
    ],
    "litert": [
        "the model in the form it was measured in (litert): its signature frozen at its "
        "inputs' shapes, converted by this TensorFlow's TFLiteConverter.from_concrete_functions "
        "(float32), run by ai_edge_litert's Interpreter with the tuning's intra-op threads; "
        "`tfbuild export --workload DIR -o model.tflite --python PYTHON` (the runtime's "
        "Python) writes that file, checked against the signature's outputs first"
    ],
    "litert-int8": [
        "the model in the form it was measured in (litert-int8): its signature frozen at its "
        "inputs' shapes, converted by this TensorFlow's TFLiteConverter.from_concrete_functions "
        "with Optimize.DEFAULT and the workload's inputs as representative_dataset (int8 "
        "weights and activations, float32 inputs and outputs), run by ai_edge_litert's "
        "Interpreter with the tuning's intra-op threads; `tfbuild export --form litert-int8 "
        "--workload DIR -o model.tflite --python PYTHON` with the session's --atol and --rtol "
        "writes that file, checked against the signature's outputs first"
    ],
}
"""What using a config measured in a model form other than as-given takes besides the build."""


def choice_for(
    decision: Decision,
    by_config: Mapping[str, Estimate],
    baseline: str,
    configs: Mapping[str, ConfigEntry],
    variants: Mapping[str, VariantRecord],
    left_out: Mapping[str, str],
) -> Choice:
    """The 'use this' of a report: the answer's config, or the baseline while nothing is
    decided, with why (and the configs that could be faster but are no candidates, with why:
    `left_out`)."""
    margin = f"{decision.margin:.1%} margin"
    partial = "".join(
        f"; {c} could be faster on what it measured, but {why}, so it is not a candidate"
        for c, why in left_out.items()
    )
    if decision.kind == "use" and decision.config is not None:
        e = by_config[decision.config]
        reason = (
            f"{e.config} is faster than the baseline {baseline} ({e.ratio:.3f}x [{e.low:.3f}, "
            f"{e.high:.3f}]) and the fastest config measured or within the {margin} of it"
        )
        return choose(e.config, reason + partial, configs, variants, e.ratio)
    if decision.kind == "keep":
        reason = (
            f"no config measured is faster than the baseline {baseline} by more than the {margin}"
        )
    else:
        reason = (
            f"nothing is decided at the {margin} yet; until it is, keep the baseline {baseline}"
        )
    return choose(baseline, reason + partial, configs, variants, 1.0)
