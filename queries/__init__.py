"""SQL over the results (one .sql file per report table) and the odds report."""
