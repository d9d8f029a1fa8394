"""jobs stage."""
