"""The Ray side of acesup: run plans, batch tasks, Parquet results, manifest, command line."""
