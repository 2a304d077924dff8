-- value_of_optional: what the choice of discards is worth, per variant and player.
--
-- RULES.md's option discards=optional makes every discard the player's choice. The same
-- player on the same deals (same seed and deal) under forced discards (variant) and under
-- optional discards (variant || '+optional'), paired deal for deal. For the clairvoyant
-- solver this is the value of the option to a perfect player (never negative on a deal:
-- taking every discard at once is one of its choices). The honest players of the batch
-- engine take every discard at once under optional discards, so theirs is zero by
-- construction; they are left out (only players whose rows differ are shown).
--
-- grain:      one row per (variant, policy) with rows under both discards rules
-- inputs:     pairs (a view of the aggregates); macros player_kind, paired_half
-- parameters: none
-- columns:
--   variant, optional_variant, policy
--   deals                     deals played under both
--   forced_wins, optional_wins
--   forced_rate, optional_rate  wins / deals, on the paired deals
--   optional_only, forced_only  deals won under one rule only
--   value                     (optional_only - forced_only) / deals: win rate the option adds
--   value_low, value_high     normal 95% interval on the per-deal differences; the deals a side
--                             gave up on without the other winning widen it (low: forced gave up,
--                             high: optional gave up)
--   mean_score_gain           mean of (optional score - forced score) over the paired deals
WITH oriented AS (
    SELECT variant_a AS variant, variant_b AS optional_variant, policy_a AS policy, deals,
           a_wins AS forced_wins, b_wins AS optional_wins, a_only AS forced_only, b_only AS optional_only,
           a_undecided AS forced_undecided, b_undecided AS optional_undecided, -gap_sum AS gain_sum
    FROM pairs WHERE policy_a = policy_b AND variant_b = variant_a || '+optional'
    UNION ALL
    SELECT variant_b, variant_a, policy_b, deals, b_wins, a_wins, b_only, a_only, b_undecided, a_undecided, gap_sum
    FROM pairs WHERE policy_a = policy_b AND variant_a = variant_b || '+optional'
),
moments AS (
    SELECT
        *,
        (optional_only - forced_only)::DOUBLE / deals AS value,
        paired_half(optional_only, forced_only, deals) AS half
    FROM oriented
)
SELECT
    variant,
    optional_variant,
    policy,
    deals,
    forced_wins,
    optional_wins,
    forced_wins::DOUBLE / deals AS forced_rate,
    optional_wins::DOUBLE / deals AS optional_rate,
    optional_only,
    forced_only,
    value,
    value - half - forced_undecided::DOUBLE / deals AS value_low,
    value + half + optional_undecided::DOUBLE / deals AS value_high,
    gain_sum::DOUBLE / deals AS mean_score_gain
FROM moments
WHERE optional_only + forced_only > 0 OR gain_sum <> 0 OR player_kind(policy) <> 'honest'
ORDER BY variant, policy;
