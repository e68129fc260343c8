"""Reports: format what the stages computed (terminal, inspection, calibration, comparison,
html); they never compute."""
