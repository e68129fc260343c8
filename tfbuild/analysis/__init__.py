"""From results to an answer: the sessions (sessions), their per-round values (rounds), the
estimates and claims (estimates), the looks of a sequential session (looks), the report of a
machine (report), the regression gate (gate), and the calibration of the suite (calibration)."""
