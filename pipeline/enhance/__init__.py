"""enhance stage."""
