"""The results of a bench session: typed records (model) and their one JSON reader and writer
(codec)."""
