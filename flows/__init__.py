"""Prefect flows, thin over ``pipeline`` and ``queries``.

- ``flows.nightly.nightly_odds``: each night, extend the standing run by the next block
  of deals, verify, refresh the catalog and the report, publish artifacts;
- ``flows.backfill.backfill``: the same steps for a given spec and index range;
- ``flows.tasks``: the coarse tasks (one library call each, retries where they help);
- ``flows.plan``: which deals tonight covers (a plain function);
- ``flows.summary``: the text of the artifacts (plain functions);
- ``flows.mirror``: a local copy of data on object storage for the catalog and report;
- ``flows.deployments``: the nightly deployment (``acesup serve``; ``prefect.yaml`` at the root);
- ``flows.runtime``: which Prefect API a command uses (temporary, configured, or started).
"""
