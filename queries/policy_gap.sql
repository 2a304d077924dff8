-- policy_gap: each player against the clairvoyant solver on the same deals (paired).
--
-- grain:      one row per (variant, policy) with policy <> $reference, over the deals both
--             played: the pair is matched on (seed, deal, variant), so the two samples are
--             not independent and the intervals are on the per-deal differences.
-- inputs:     pairs (view of the aggregates); macros wilson_low, wilson_high, player_kind
-- parameters:
-- param reference = 'solver'
--             the reference player (the unrestricted clairvoyant solver)
-- columns:
--   variant, policy, kind  as in win_odds
--   reference              the reference player ($reference)
--   deals                  deals both the policy and the reference played
--   reference_wins         of those, deals the reference won
--   policy_wins            of those, deals the policy won
--   reference_only         deals the reference wins and the policy loses
--   policy_only            deals the policy wins and the reference does not (only possible
--                          on a reference deal that gave up: otherwise the solver is exact)
--   undecided              deals the policy lost where the reference gave up
--   share                  reference_only / deals
--   share_low, share_high  95% Wilson interval of share; undecided deals count as not
--                          reference-only for low and as reference-only for high
--   win_gap                (reference_wins - policy_wins) / deals: the paired win-rate gap
--   win_gap_low, win_gap_high  normal 95% interval on the per-deal differences d = won_ref - won_pol
--                          (d in -1, 0, 1); high also adds undecided / deals
--   score_gap_sum          sum of (reference score - policy score), exact
--   score_gap_sq_sum       sum of its squares, exact
--   mean_score_gap         score_gap_sum / deals
--   score_gap_sd           sample standard deviation of the per-deal score gap
--   score_gap_low, score_gap_high  mean_score_gap -+ 1.96 * sd / sqrt(deals) (normal interval)
WITH tallies AS (
    -- every pair of two players of one variant that holds the reference, seen from the reference
    SELECT variant_a AS variant, policy_b AS policy, deals, a_wins AS reference_wins, b_wins AS policy_wins,
           a_only AS reference_only, b_only AS policy_only, a_undecided AS undecided,
           gap_sum AS score_gap_sum, gap_sq_sum AS score_gap_sq_sum
    FROM pairs WHERE variant_a = variant_b AND policy_a = $reference
    UNION ALL
    SELECT variant_a, policy_a, deals, b_wins, a_wins, b_only, a_only, b_undecided, -gap_sum, gap_sq_sum
    FROM pairs WHERE variant_a = variant_b AND policy_b = $reference
),
moments AS (
    SELECT
        *,
        (reference_only - policy_only)::DOUBLE / deals AS win_gap,
        -- sample variance from exact integer sums: (sum d^2 - n * mean^2) / (n - 1)
        CASE WHEN deals > 1 THEN
            greatest(0.0, ((reference_only + policy_only)::DOUBLE
                           - (reference_only - policy_only)::DOUBLE * (reference_only - policy_only) / deals) / (deals - 1))
        END AS win_var,
        score_gap_sum::DOUBLE / deals AS mean_score_gap,
        CASE WHEN deals > 1 THEN
            greatest(0.0, (score_gap_sq_sum::DOUBLE - score_gap_sum::DOUBLE * score_gap_sum / deals) / (deals - 1))
        END AS gap_var
    FROM tallies
)
SELECT
    variant,
    policy,
    player_kind(policy) AS kind,
    $reference AS reference,
    deals,
    reference_wins,
    policy_wins,
    reference_only,
    policy_only,
    undecided,
    reference_only::DOUBLE / deals AS share,
    wilson_low(reference_only, deals) AS share_low,
    wilson_high(reference_only + undecided, deals) AS share_high,
    win_gap,
    win_gap - 1.96 * sqrt(win_var / deals) AS win_gap_low,
    win_gap + 1.96 * sqrt(win_var / deals) + undecided::DOUBLE / deals AS win_gap_high,
    score_gap_sum,
    score_gap_sq_sum,
    mean_score_gap,
    sqrt(gap_var) AS score_gap_sd,
    mean_score_gap - 1.96 * sqrt(gap_var / deals) AS score_gap_low,
    mean_score_gap + 1.96 * sqrt(gap_var / deals) AS score_gap_high
FROM moments
ORDER BY variant, kind, policy;
