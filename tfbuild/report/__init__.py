"""What a person reads: terminal tables, Markdown, JSON and HTML. Formats; never computes."""
