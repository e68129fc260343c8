"""The plan: the selected (select) variants x tunings resolved for one machine (make), what each
variant asks of it (target), and where each variant runs (runtimes)."""
