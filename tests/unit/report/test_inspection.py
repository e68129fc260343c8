"""`tfbuild inspect` in a terminal, from audit reports built here: the verdict first, then the
wheel's facts (at most eight requirements named), what a CPU must have (the least set, what it
implies, and why, counted in objects), one row per extension its code uses (summed over the
objects, required or dispatched), the system's floors, and the CUDA device code (objects with
the same architectures on one row, at most six of them named)."""

from __future__ import annotations

import io

from rich.console import Console

from tfbuild.audit.model import (
    AuditReport,
    CudaListing,
    CudaSummary,
    CudaTool,
    ExtensionUse,
    Needs,
    ObjectFindings,
    WheelMetadata,
)
from tfbuild.audit.verdict import Target, WheelVerdict
from tfbuild.machine import cpu
from tfbuild.report.inspection import inspect_view
from tfbuild.store import Manifest, SourceBuild

HASWELL = Target("haswell (as -march=haswell)", cpu.CpuModel.named("haswell"))
RUNS = WheelVerdict(
    True,
    "runs here: needs AVX2; haswell (as -march=haswell) has up to AVX2",
    "needs 2.27, this system has 2.35: ok",
    "no device code",
)
PYWRAP = "tensorflow/python/_pywrap_tensorflow_internal.so"
FRAMEWORK = "tensorflow/libtensorflow_framework.so.2"
REQUIRES = tuple(f"dep{i}>=1" for i in range(10))


def findings(path: str, functions: int, usage: dict[str, ExtensionUse], why: str = "",
             cuda: CudaListing | None = None) -> ObjectFindings:  # fmt: skip
    baseline = {"avx2": (why,)} if why else {}
    return ObjectFindings(path, functions, 1, 1, usage, baseline, {}, "2.27", None, cuda)


def report(
    objects: tuple[ObjectFindings, ...],
    needs: tuple[str, ...] = ("avx2",),
    requires: tuple[str, ...] = REQUIRES,
    manifest: Manifest | None = None,
    cuda: CudaSummary | None = None,
    glibc: tuple[str | None, str | None, str | None] = ("2.27", "manylinux_2_27_x86_64", "3.4.26"),
    cached: bool = True,
) -> AuditReport:
    why = {
        flag: tuple(
            f"{o.path.rsplit('/', 1)[-1]}: {r}" for o in objects for r in o.baseline.get(flag, ())
        )
        for flag in needs
    }
    return AuditReport(
        analysis_version=1,
        wheel="tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl",
        sha256="ab" * 32,
        metadata=WheelMetadata(
            "tensorflow_cpu", "2.21.0", ("cp311-cp311-manylinux_2_27_x86_64",), requires, ">=3.9"
        ),
        manifest=manifest,
        unreadable=(),
        unchecked={},
        objects=objects,
        needs=Needs(needs, needs, why, "an extension used by over a quarter of the functions"),
        glibc=glibc[0],
        manylinux=glibc[1],
        glibcxx=glibc[2],
        cuda=cuda,
        seconds=12.34,
        cached=cached,
    )


def cpu_wheel() -> AuditReport:
    """Two objects needing AVX2 (pervasive in both); AVX, FMA and AVX-512F used as well, in
    1500 functions; a third object with no extension code."""
    pywrap = findings(PYWRAP, 1000, {
        "avx2": ExtensionUse(5000, 300, 0.3, ("tensorflow::Foo()",)),
        "avx": ExtensionUse(1200, 150, 0.15, ("tensorflow::Bar()",)),
        "avx512f": ExtensionUse(800, 40, 0.04, ("dnnl::jit_avx512_core_" + "x" * 80,)),
    }, why="pervasive (30% of functions)")  # fmt: skip
    framework = findings(FRAMEWORK, 500, {
        "avx2": ExtensionUse(2000, 200, 0.4, ("Eigen::Packet()",)),
        "fma": ExtensionUse(100, 10, 0.02, ()),
    }, why="pervasive (40% of functions)")  # fmt: skip
    return report((pywrap, framework, findings("tensorflow/lite/_lite.so", 0, {})))


def shown(r: AuditReport, verdict: WheelVerdict = RUNS, target: Target = HASWELL) -> list[str]:
    """The view as a 240-column terminal prints it, each line's spaces collapsed."""
    console = Console(width=240, record=True, file=io.StringIO())
    console.print(inspect_view(r, verdict, target))
    return [" ".join(line.split()) for line in console.export_text().splitlines()]


def cells(lines: list[str], first: str) -> list[str]:
    """The cells of the table row that starts with `first`."""
    row = next(line for line in lines if line.startswith(f"│ {first} │"))
    return [c.strip() for c in row[1:-1].split("│")]


def test_the_verdict_comes_first_then_the_wheels_facts() -> None:
    lines = shown(cpu_wheel())
    assert lines[:4] == [
        "Verdict for haswell (as -march=haswell)",
        "CPU runs here: needs AVX2; haswell (as -march=haswell) has up to AVX2",
        "glibc needs 2.27, this system has 2.35: ok",
        "CUDA no device code",
    ]
    wheel = lines.index("Wheel")
    assert lines[wheel + 1 : wheel + 7] == [
        "wheel tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl",
        "sha256 " + "ab" * 32,
        "name / version tensorflow_cpu 2.21.0",
        "tags cp311-cp311-manylinux_2_27_x86_64",
        "requires dep0>=1, dep1>=1, dep2>=1, dep3>=1, dep4>=1, dep5>=1, dep6>=1, dep7>=1, ... "
        "(10 in all)",
        "tfbuild manifest none (not built by tfbuild)",
    ]


def test_what_a_cpu_must_have_names_what_it_implies_and_why() -> None:
    """AVX2 brings AVX, which brings SSE4.2 (and with it SSE4.1, SSSE3, SSE3 and POPCNT): named
    in the extension table's order; AVX2's reasons counted in objects."""
    lines = shown(cpu_wheel())
    at = lines.index("Baseline (what a CPU must have)")
    assert lines[at + 1 : at + 4] == [
        "needs AVX2 (and SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, AVX, which it implies)",
        "AVX2 pervasive in 2 objects (e.g. _pywrap_tensorflow_internal.so)",
        "how decided an extension used by over a quarter of the functions",
    ]


def test_each_extension_is_one_row_summed_over_the_objects() -> None:
    """1500 functions in 3 objects: AVX2 in 500 of them (33.33 %), 7,000 instructions, most in
    the pywrap object; AVX implied by AVX2; FMA and AVX-512F dispatched."""
    lines = shown(cpu_wheel())
    assert "Instruction-set extensions in 3 ELF objects (1,500 functions)" in lines
    table = [line.split(" │ ")[0].strip("│ ") for line in lines if line.startswith("│ ")]
    assert table == ["AVX", "AVX2", "FMA", "AVX512F"]  # in the extension table's order
    pywrap = "_pywrap_tensorflow_internal.so"
    assert cells(lines, "AVX2") == [
        "AVX2", "7,000", "33.33%", "yes: pervasive", pywrap, "tensorflow::Foo()"
    ]  # fmt: skip
    assert cells(lines, "AVX") == [
        "AVX", "1,200", "10.00%", "yes: implied by AVX2", pywrap, "tensorflow::Bar()"
    ]  # fmt: skip
    assert cells(lines, "FMA") == [
        "FMA", "100", "0.67%", "no: dispatched", "libtensorflow_framework.so.2", ""
    ]  # fmt: skip
    avx512 = cells(lines, "AVX512F")
    assert avx512[:4] == ["AVX512F", "800", "2.67%", "no: dispatched"]
    assert avx512[5] == ("dnnl::jit_avx512_core_" + "x" * 80)[:70]  # an example cut at 70


def test_the_system_rows_give_the_floors_and_the_audits_time() -> None:
    lines = shown(cpu_wheel())
    at = lines.index("System")
    assert lines[at + 1 : at + 5] == [
        "glibc floor 2.27 (manylinux_2_27_x86_64)",
        "libstdc++ GLIBCXX_3.4.26",
        "CUDA no device code",
        "audit 12.3 s (cached)",
    ]
    assert not any(line.startswith("cuobjdump") for line in lines)
    assert "CUDA device code (cuobjdump)" not in lines


def test_a_wheel_needing_nothing_says_so() -> None:
    bare = report((findings("probe/_a.so", 10, {}),), needs=(), requires=(),
                  glibc=(None, None, None), cached=False)  # fmt: skip
    lines = shown(bare)
    assert "requires nothing" in lines
    assert "needs x86-64 only" in lines
    at = lines.index("System")
    assert lines[at + 1 : at + 5] == [
        "glibc floor none",
        "libstdc++ not needed",
        "CUDA no device code",
        "audit 12.3 s",
    ]
    assert "Instruction-set extensions in 1 ELF objects (10 functions)" in lines


def test_a_source_builds_manifest_is_summed_up_in_one_line() -> None:
    build = SourceBuild(tensorflow="2.21.0", git_ref="v2.21.0", configs=("opt", "cuda"),
                        copts=("-march=skylake-avx512", "-O3"))  # fmt: skip
    manifest = Manifest(variant={"name": "avx512", "id": "tf2.21-py3.11-avx512"},
                        source="bazel", build=build)  # fmt: skip
    plain = Manifest(variant={"name": "plain", "id": "tf2.21-py3.11-plain"}, source="bazel",
                     build=SourceBuild(tensorflow="2.21.0", git_ref="v2.21.0"))  # fmt: skip
    assert (
        "tfbuild manifest variant avx512 (tf2.21-py3.11-avx512), TensorFlow 2.21.0 at v2.21.0, "
        "configs ['opt', 'cuda'], copts -march=skylake-avx512 -O3"
    ) in shown(report(cpu_wheel().objects, manifest=manifest))
    assert (
        "tfbuild manifest variant plain (tf2.21-py3.11-plain), TensorFlow 2.21.0 at v2.21.0, "
        "configs [], copts none"
    ) in shown(report(cpu_wheel().objects, manifest=plain))


def gpu_wheel() -> AuditReport:
    """Eight objects with SASS sm_80, sm_90 and PTX compute_90; one cuobjdump could not list."""
    listing = CudaListing(True, ("sm_80", "sm_90"), ("compute_90",), None)
    failed = CudaListing(False, (), (), "cuobjdump failed")
    objects = tuple(findings(f"gpu/k{i}.so", 10, {}, cuda=listing) for i in range(8))
    objects += (findings("gpu/broken.so", 10, {}, cuda=failed),)
    tool = CudaTool("/usr/local/cuda/bin/cuobjdump", "12.4.131", "PATH")
    summary = CudaSummary(9, False, ("sm_80", "sm_90"), ("compute_90",), tool,
                          "not checked: cuobjdump failed on gpu/broken.so")  # fmt: skip
    return report(objects, needs=(), cuda=summary)


def test_device_code_is_listed_per_group_of_objects_with_the_same_architectures() -> None:
    lines = shown(gpu_wheel())
    at = lines.index("System")
    assert lines[at + 3 : at + 5] == [
        "CUDA device code in 9 objects; architectures not checked: cuobjdump failed on "
        "gpu/broken.so",
        "cuobjdump 12.4.131 (on PATH): /usr/local/cuda/bin/cuobjdump",
    ]
    table = lines[lines.index("CUDA device code (cuobjdump)") :]
    assert cells(table, "gpu/k0.so") == ["gpu/k0.so", "sm_80, sm_90", "compute_90"]
    named = [c for line in table for c in [line.strip("│ ").split(" │ ")[0]] if "gpu/" in c]
    assert named == [f"gpu/k{i}.so" for i in range(6)] + ["gpu/broken.so"]  # six of eight
    assert any(line.startswith("│ ... and 2 more") for line in table)
    assert cells(table, "gpu/broken.so") == ["gpu/broken.so", "not checked", ""]
    assert cells(table, "all 9 objects") == ["all 9 objects", "sm_80, sm_90", "compute_90"]


def test_checked_device_code_names_its_architectures_and_the_tool_it_came_from() -> None:
    listing = CudaListing(True, (), ("compute_90",), None)
    tool = CudaTool("/cache/cuobjdump", None, "nvidia-cuda-cuobjdump 13.0")
    summary = CudaSummary(1, True, (), ("compute_90",), tool, None)
    lines = shown(report((findings("gpu/only.so", 10, {}, cuda=listing),), needs=(), cuda=summary))
    assert "CUDA SASS none; PTX compute_90 (in 1 object)" in lines
    assert (
        "cuobjdump version unknown (nvidia-cuda-cuobjdump 13.0, package index): /cache/cuobjdump"
    ) in lines
    table = lines[lines.index("CUDA device code (cuobjdump)") :]
    assert cells(table, "gpu/only.so") == ["gpu/only.so", "none", "compute_90"]
    assert not any("all 1 objects" in line for line in table)  # one group: no total row
