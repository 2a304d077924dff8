-- honest_bracket: how often can an honest player win? A bracket [lower, upper] per variant.
--
-- lower: the honest player with the highest estimate of its win rate. For a player with a
-- per-deal `value` (adp and pimc, docs/bracket.md) the estimate is the mean of that value
-- (1{won} - z, z the bound's penalty along its own line: an unbiased estimate of its win rate
-- with a far smaller variance than 1{won}) with a normal interval; for any other honest player
-- (the policies) it is the plain win rate with its Wilson interval. The plain
-- tally and Wilson interval are given for every lower player (lower_wins / lower_deals).
-- upper: the player of role 'bound' with the lowest mean `value`: a proven upper bound on the
-- win rate of every honest player (information relaxation with a penalty, Brown, Smith & Sun
-- 2010). Per-deal values are real numbers, so both estimates carry a normal 95% interval
-- (mean +- 1.96 s / sqrt(n)), not a Wilson interval. Taking the lowest of several bounds, or the
-- best of several lower players, favours a lucky one slightly (with one of each, as the default
-- runs have, it does not arise).
-- gap: upper minus lower on the deals both played (paired; never negative deal by deal when both
-- use the same penalty tuples).
-- runner_up: the honest player with the next highest estimate; lead: the lower end's estimate minus
-- the runner-up's on the deals both played (paired, per-deal v as above: does the best honest
-- player measurably beat the next?).
-- Read from the aggregates only (tallies, pairs: queries/aggregates.py), whose value sums are exact
-- integers of 1e-9 (HUGEINT), so the result does not depend on row order or on how the rows came
-- in night by night. Its twin over the per-deal rows is tests/honest_bracket_rows.sql.
--
-- grain:      one row per variant with a bound player
-- inputs:     tallies, pairs (views of the aggregates); macros player_kind, wilson_low, wilson_high
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
WITH ends AS (
    -- s, ss: the sums of v and v^2, v the per-deal value in units of 1e-9 (1e9 * 1{won} for a
    -- row without one); valued: every row of the player has a value
    SELECT variant, policy,
           valued = deals AS valued,
           deals AS n,
           wins,
           value_sum::HUGEINT AS s,
           value_sq_sum::HUGEINT AS ss
    FROM tallies
    WHERE (player_kind(policy) = 'honest' OR (player_kind(policy) = 'bound' AND valued > 0))
      AND variant IN (SELECT variant FROM tallies WHERE player_kind(policy) = 'bound' AND valued > 0)
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
    -- value_gap_sum is side a minus side b, so x - y is it when x is side a, minus it otherwise
    SELECT c.what, c.variant,
           p.deals AS n,
           CASE WHEN p.policy_a = c.x THEN p.value_gap_sum ELSE -p.value_gap_sum END AS s,
           p.value_gap_sq_sum AS ss
    FROM contrasts c
    JOIN pairs p ON p.variant_a = c.variant AND p.variant_b = c.variant
                AND ((p.policy_a = c.x AND p.policy_b = c.y) OR (p.policy_a = c.y AND p.policy_b = c.x))
    WHERE p.deals > 0
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
