"""The pipeline: spec -> plan -> IR -> verified IR -> rendered sources and manifest, driven by pipeline.run; build writes the folder."""
