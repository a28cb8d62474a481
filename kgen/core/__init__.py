"""Facts and plumbing every layer uses: enumerations (types), arch facts (arch), errors, paths and the cache (resources)."""
