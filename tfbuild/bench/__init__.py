"""A bench session: what it is asked (options), preparing its variants (prepare), its rounds
(schedule), the session and its results file (session), why a process failed (failures), the
benchmark payload that runs inside a runtime (payload), a summary of its figures (summary), and
the calibration session (calibrate)."""
