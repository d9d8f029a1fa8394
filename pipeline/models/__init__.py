"""Model layer: the catalog (data), verified fetch/import, I/O validation and the session factory."""
