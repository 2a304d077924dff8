-- coverage: which deals the results hold, for the report's provenance.
--
-- grain:      one row per (seed, variant, policy, run_id)
-- inputs:     deal_coverage (view of the aggregates)
-- parameters: none
-- columns:
--   seed, variant, policy, run_id
--   deals                  rows (deals) of this run for this variant and policy
--   first_deal, last_deal  smallest and largest deal index
--   contiguous             deals = last_deal - first_deal + 1 (the indices have no gap)
SELECT
    seed,
    variant,
    policy,
    run_id,
    deals,
    first_deal,
    last_deal,
    deals = last_deal - first_deal + 1 AS contiguous
FROM deal_coverage
ORDER BY seed, variant, policy, run_id;
