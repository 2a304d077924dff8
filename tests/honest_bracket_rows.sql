-- honest_bracket from the per-deal rows: the twin of queries/honest_bracket.sql (which reads only the
-- aggregates, so the nightly report costs the same whatever the history). tests/test_bracket_report.py
-- holds the two to the same result, column for column and bit for bit.
--
-- honest_bracket: how often can an honest player win? A bracket [lower, upper] per variant.
--
-- lower: the honest player with the highest estimate of its win rate. For a player with a
-- per-deal `value` ('adp:...' and 'pimc:...', docs/bracket.md) the estimate is the mean of that
-- value (1{won} - z, z the bound's penalty along its own line: an unbiased estimate of its win
-- rate with a far smaller variance than 1{won}) with a normal interval; for any other honest
-- player (the policies) it is the plain win rate with its Wilson interval. The plain
-- tally and Wilson interval are given for every lower player (lower_wins / lower_deals).
-- upper: the bound player ('bound:...') with the lowest mean `value`: a proven upper bound on the
-- win rate of every honest player (information relaxation with a penalty, Brown, Smith & Sun
-- 2010). Per-deal values are real numbers, so both estimates carry a normal 95% interval
-- (mean +- 1.96 s / sqrt(n)), not a Wilson interval. Taking the lowest of several bounds, or the
-- best of several lower players, favours a lucky one slightly (with one of each, as the default
-- runs have, it does not arise).
-- gap: upper minus lower on the deals both played (paired; never negative deal by deal when both
-- use the same penalty tuples).
-- runner_up: the honest player with the next highest estimate; lead: the lower end's estimate minus
-- the runner-up's on the deals both played (paired).
-- Sums are exact: values are summed as integers of 1e-9 (HUGEINT), so the result does not
-- depend on row order.
--
-- grain:      one row per variant with a bound player
-- inputs:     results (view); macros player_kind, wilson_low, wilson_high
-- parameters: none
-- columns:
--   variant
--   lower_player, lower_deals, lower_wins        the lower end's player and its plain tally
--   lower_rate, lower_low, lower_high            its estimate and 95% interval (as lower_interval says)
--   lower_interval                               'normal' (a player with values) or 'wilson' (a plain rate)
--   lower_wilson_low, lower_wilson_high          the Wilson interval of its plain win rate
--   upper_method                                 the bound player's name (its W, samples, exact)
--   upper_estimate, upper_low, upper_high        the bound's mean value and 95% normal interval
--   deals                                        deals of the upper end
--   gap, gap_low, gap_high, gap_deals            upper - lower, paired, on gap_deals common deals
--   runner_up                                    the honest player with the next highest estimate
--   lead, lead_low, lead_high, lead_deals        lower - runner_up, paired, on lead_deals common deals
WITH bounded AS (
    SELECT DISTINCT variant FROM results WHERE player_kind(policy) = 'bound' AND value IS NOT NULL
),
rows AS (
    -- every row of an honest player or a bound, of a variant with a bound; v = the per-deal value in
    -- units of 1e-9: `value` where the player has one, else 1{won}
    SELECT variant, policy, seed, deal, won, value IS NOT NULL AS valued,
           CASE WHEN value IS NOT NULL THEN round(value * 1e9)::HUGEINT
                WHEN won THEN 1000000000::HUGEINT ELSE 0::HUGEINT END AS v
    FROM results
    WHERE variant IN (SELECT variant FROM bounded) AND player_kind(policy) IN ('honest', 'bound')
      AND (value IS NOT NULL OR player_kind(policy) = 'honest')
),
ends AS (
    SELECT variant, policy,
           bool_and(valued) AS valued,
           count(*) AS n,
           count(*) FILTER (WHERE won) AS wins,
           sum(v) AS s,
           sum(v * v) AS ss
    FROM rows
    GROUP BY variant, policy
),
stats AS (
    SELECT *,
           s::DOUBLE / 1e9 / n AS mean,
           CASE WHEN n > 1 THEN sqrt(greatest((ss::DOUBLE - s::DOUBLE * s::DOUBLE / n) / (n - 1), 0)) / 1e9 END AS sd
    FROM ends
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY variant ORDER BY mean DESC, policy) AS place
    FROM stats WHERE player_kind(policy) = 'honest'
),
lower_end AS (
    SELECT * FROM ranked WHERE place = 1
),
runner_up AS (
    SELECT * FROM ranked WHERE place = 2
),
upper_end AS (
    SELECT * FROM stats WHERE player_kind(policy) = 'bound'
    QUALIFY row_number() OVER (PARTITION BY variant ORDER BY mean ASC, policy) = 1
),
contrasts AS (
    -- the paired differences the table gives: x - y on the deals both played, per variant
    SELECT 'gap' AS what, ue.variant, ue.policy AS x, le.policy AS y
    FROM upper_end ue JOIN lower_end le ON le.variant = ue.variant
    UNION ALL
    SELECT 'lead', le.variant, le.policy, ru.policy
    FROM lower_end le JOIN runner_up ru ON ru.variant = le.variant
),
paired AS (
    SELECT c.what, c.variant,
           count(*) AS n,
           sum(x.v - y.v) AS s,
           sum((x.v - y.v) * (x.v - y.v)) AS ss
    FROM contrasts c
    JOIN rows x ON x.variant = c.variant AND x.policy = c.x
    JOIN rows y ON y.variant = c.variant AND y.policy = c.y AND y.seed = x.seed AND y.deal = x.deal
    GROUP BY c.what, c.variant
),
diffs AS (
    SELECT what, variant, n,
           s::DOUBLE / 1e9 / n AS mean,
           CASE WHEN n > 1 THEN sqrt(greatest((ss::DOUBLE - s::DOUBLE * s::DOUBLE / n) / (n - 1), 0)) / 1e9 END AS sd
    FROM paired
)
SELECT
    u.variant,
    l.policy AS lower_player,
    l.n AS lower_deals,
    l.wins AS lower_wins,
    l.mean AS lower_rate,
    CASE WHEN l.valued THEN l.mean - 1.96 * l.sd / sqrt(l.n) ELSE wilson_low(l.wins, l.n) END AS lower_low,
    CASE WHEN l.valued THEN l.mean + 1.96 * l.sd / sqrt(l.n) ELSE wilson_high(l.wins, l.n) END AS lower_high,
    CASE WHEN l.valued THEN 'normal' ELSE 'wilson' END AS lower_interval,
    wilson_low(l.wins, l.n) AS lower_wilson_low,
    wilson_high(l.wins, l.n) AS lower_wilson_high,
    u.policy AS upper_method,
    u.mean AS upper_estimate,
    u.mean - 1.96 * u.sd / sqrt(u.n) AS upper_low,
    u.mean + 1.96 * u.sd / sqrt(u.n) AS upper_high,
    u.n AS deals,
    g.mean AS gap,
    g.mean - 1.96 * g.sd / sqrt(g.n) AS gap_low,
    g.mean + 1.96 * g.sd / sqrt(g.n) AS gap_high,
    g.n AS gap_deals,
    r.policy AS runner_up,
    d.mean AS lead,
    d.mean - 1.96 * d.sd / sqrt(d.n) AS lead_low,
    d.mean + 1.96 * d.sd / sqrt(d.n) AS lead_high,
    d.n AS lead_deals
FROM upper_end u
LEFT JOIN lower_end l ON l.variant = u.variant
LEFT JOIN diffs g ON g.variant = u.variant AND g.what = 'gap'
LEFT JOIN runner_up r ON r.variant = u.variant
LEFT JOIN diffs d ON d.variant = u.variant AND d.what = 'lead'
ORDER BY u.variant
