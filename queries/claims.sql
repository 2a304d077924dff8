-- claims: each published win-rate claim against every measured figure it could be about.
--
-- The sources (shared/RULES.md) give their figures without a method or a sample size, so a
-- claim could be about clairvoyant play (the solver, restricted or not), honest play (any
-- policy), forced or optional discards. Each claim is set against every measured
-- (variant, policy) of its variant preset; `inside` says whether the stated rate lies in the
-- 95% interval of that figure, and `fit_rank` orders a claim's readings from best fit
-- (inside the interval, nearest the point estimate first), then the others by how far, as a
-- factor, the claim misses the interval (odds are multiplicative: 1 in 200 against 1 in 100 is
-- as far off as 1 in 20 against 1 in 10).
--
-- grain:      one row per (claim, variant, policy) with variant_preset(variant) = the claim's preset
-- inputs:     tallies (view of the aggregates); macros wilson_low, wilson_high, one_in, player_kind,
--             solver_restriction, variant_preset, variant_discards
-- parameters: none
-- columns:
--   claim_id, claim, source     the published figure, as RULES.md quotes it, and where from
--   claim_preset                the variant it is about ('standard' or 'strict')
--   stated_rate, stated_one_in  the claim as a rate and as "1 in N"
--   variant, policy, kind       the measured figure (as in win_odds)
--   restriction                 solver restrictions ('none', 'sensible+leftmost+must_fill');
--                               NULL for an honest player
--   discards                    'forced' or 'optional'
--   deals, wins, gave_up, rate, low, high, one_in   as in win_odds
--   inside                      low <= stated_rate <= high
--   ratio                       stated_rate / rate (NULL when rate is 0)
--   off_by                      the factor by which the claim misses the interval: low / stated_rate
--                               below it, stated_rate / high above it, 1 inside
--   fit_rank                    1 = the reading the claim fits best
WITH claim_list(claim_id, claim, source, claim_preset, stated_rate) AS (
    VALUES
        ('one_in_200', 'odds of winning 1 in 200',
         'English encyclopedia infobox, citing a simulation posted on a forum', 'standard', 1.0 / 200),
        ('one_in_35', 'roughly once in 35 attempts',
         'how-to-play page', 'standard', 1.0 / 35),
        ('one_in_10', 'about 1 in 10 games with good play',
         'English encyclopedia text, citing Hoyle', 'standard', 1.0 / 10),
        ('one_in_8', '1 in 8',
         'Polish encyclopedia infobox', 'standard', 1.0 / 8),
        ('strict_one_in_270', 'strict variant: about 1 in 270',
         'English and Polish encyclopedia', 'strict', 1.0 / 270),
        ('restricted_solver_11_57', '11.57% for a restricted solver',
         'published solver figure (RULES.md: a restricted solver)', 'standard', 0.1157)
),
readings AS (
    SELECT
        c.*,
        t.variant,
        t.policy,
        player_kind(t.policy) AS kind,
        solver_restriction(t.policy) AS restriction,
        variant_discards(t.variant) AS discards,
        t.deals,
        t.wins,
        t.gave_up,
        t.wins::DOUBLE / t.deals AS rate,
        wilson_low(t.wins, t.deals) AS low,
        wilson_high(t.wins + t.gave_up, t.deals) AS high
    FROM claim_list c
    JOIN tallies t ON variant_preset(t.variant) = c.claim_preset
),
placed AS (
    SELECT
        *,
        low <= stated_rate AND stated_rate <= high AS inside,
        CASE WHEN stated_rate < low THEN low / stated_rate
             WHEN stated_rate > high THEN stated_rate / high
             ELSE 1.0 END AS off_by
    FROM readings
)
SELECT
    claim_id,
    claim,
    source,
    claim_preset,
    stated_rate,
    1.0 / stated_rate AS stated_one_in,
    variant,
    policy,
    kind,
    restriction,
    discards,
    deals,
    wins,
    gave_up,
    rate,
    low,
    high,
    one_in(wins, deals) AS one_in,
    inside,
    CASE WHEN rate > 0 THEN stated_rate / rate END AS ratio,
    off_by,
    row_number() OVER (PARTITION BY claim_id
                       ORDER BY inside DESC, off_by,
                                CASE WHEN rate > 0 THEN abs(ln(stated_rate / rate)) END NULLS LAST,
                                variant, policy) AS fit_rank
FROM placed
ORDER BY stated_rate, claim_id, fit_rank;
