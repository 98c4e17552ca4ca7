"""Whether memread survives what the world sends it: damaged files, kill -9, real-world PDFs."""
