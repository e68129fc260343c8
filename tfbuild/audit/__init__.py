"""Auditing a wheel: its ELF objects (elf) and the instruction sets they use (isa), its CUDA
device code (cuobjdump), the report (inspect), the verdict for a target (verdict), and the ground
truth on an emulated CPU (qemu)."""
