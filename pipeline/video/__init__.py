"""video stage."""
