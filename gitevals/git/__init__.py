"""Git: trees of a working directory, the index or a revision; packs; pushed refs."""
