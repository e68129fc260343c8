"""The machine a command plans for: this one (detect), a saved profile, or the machine a remote
Docker engine runs on (remote); its CPU knowledge (cpu), GPUs (gpu), interpreters (pythons) and
the FP32 peak of its cores (peak)."""
