"""Where tables leave the job: Delta Lake (the only place besides `sources/` that touches files)."""
