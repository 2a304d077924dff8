-- score_distribution: how many deals end at each score, per player and variant.
--
-- grain:      one row per (variant, policy, score) for every score 0..48 (zero counts included)
-- inputs:     score_counts, tallies (views of the aggregates); macro player_kind
-- parameters: none
-- columns:
--   variant, policy, kind   as in win_odds
--   score                   final score 0..48 (discarded cards; 48 = won); for the solver
--                           its best score (a lower bound on gave_up deals)
--   deals                   deals that ended at this score
--   share                   deals / all deals of this (variant, policy)
--   at_least                deals that scored this much or more (survival count)
WITH counts AS (
    SELECT variant, policy, score, deals FROM score_counts
),
totals AS (
    SELECT variant, policy, deals AS total FROM tallies
),
grid AS (
    SELECT t.variant, t.policy, t.total, s.score::INTEGER AS score
    FROM totals t CROSS JOIN range(0, 49) AS s(score)
),
filled AS (
    SELECT g.variant, g.policy, g.total, g.score, coalesce(c.deals, 0) AS deals
    FROM grid g
    LEFT JOIN counts c ON c.variant = g.variant AND c.policy = g.policy AND c.score = g.score
)
SELECT
    variant,
    policy,
    player_kind(policy) AS kind,
    score,
    deals,
    deals::DOUBLE / total AS share,
    sum(deals) OVER (PARTITION BY variant, policy ORDER BY score DESC
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)::BIGINT AS at_least
FROM filled
ORDER BY variant, kind, policy, score;
