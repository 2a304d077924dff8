-- headline: the odds of winning each variant, clairvoyant and honest.
--
-- For each variant: the clairvoyant figure (the unrestricted exact solver $reference, which
-- knows the order of the stock) and the honest figure (the best player that does not: the
-- honest policy whose 95% Wilson interval starts highest, so that a player measured on a few
-- hundred deals does not beat one measured on thousands by luck; ties go to the higher rate,
-- the higher mean score, then the name). Picking the best of several honest players by a
-- measured figure still favours a lucky one slightly; the honest row says how many it was
-- picked from.
--
-- grain:      one row per (variant, kind) for kind in ('clairvoyant', 'honest') present
-- inputs:     tallies (view of the aggregates); macros wilson_low, wilson_high, one_in, player_kind
-- parameters:
-- param reference = 'solver'
--             the clairvoyant player of the headline
-- columns:
--   variant, kind
--   player                    the policy name of the row
--   chosen_from               how many players of this kind were candidates (1 for clairvoyant)
--   deals, wins, gave_up, rate, low, high, one_in, one_in_low, one_in_high, mean_score
--                             as in win_odds (gave_up: lost for low, won for high)
WITH candidates AS (
    SELECT
        *,
        CASE WHEN policy = $reference THEN 'clairvoyant' ELSE 'honest' END AS kind
    FROM tallies
    WHERE policy = $reference OR player_kind(policy) = 'honest'
),
ranked AS (
    SELECT
        *,
        row_number() OVER (PARTITION BY variant, kind
                           ORDER BY wilson_low(wins, deals) DESC, wins::DOUBLE / deals DESC,
                                    score_sum::DOUBLE / deals DESC, policy) AS place,
        count(*) OVER (PARTITION BY variant, kind) AS chosen_from
    FROM candidates
)
SELECT
    variant,
    kind,
    policy AS player,
    chosen_from,
    deals,
    wins,
    gave_up,
    wins::DOUBLE / deals AS rate,
    wilson_low(wins, deals) AS low,
    wilson_high(wins + gave_up, deals) AS high,
    one_in(wins, deals) AS one_in,
    CASE WHEN wilson_high(wins + gave_up, deals) > 0 THEN 1.0 / wilson_high(wins + gave_up, deals) END AS one_in_low,
    CASE WHEN wilson_low(wins, deals) > 0 THEN 1.0 / wilson_low(wins, deals) END AS one_in_high,
    score_sum::DOUBLE / deals AS mean_score
FROM ranked
WHERE place = 1
ORDER BY variant, kind;
