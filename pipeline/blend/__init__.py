"""blend stage."""
