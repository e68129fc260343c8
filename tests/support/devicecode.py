"""CUDA device code as cuobjdump lists it and as the audit records it, for tests that need a
wheel's device code without a CUDA wheel."""

from __future__ import annotations

LISTING = """\
ELF file    1: libtensorflow_framework.so.1.sm_60.cubin
ELF file    2: libtensorflow_framework.so.2.sm_70.cubin
ELF file    3: libtensorflow_framework.so.3.sm_80.cubin
ELF file    4: libtensorflow_framework.so.4.sm_89.cubin
ELF file    5: libtensorflow_framework.so.5.sm_90.cubin
PTX file    1: libtensorflow_framework.so.1.sm_90.ptx
ELF file    6: libtensorflow_framework.so.6.sm_100a.cubin
"""

TF_LIKE = {"checked": True, "sass": ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90"],
           "ptx": ["compute_90"], "note": None}  # fmt: skip
