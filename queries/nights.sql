-- nights: the figures night by night: each player's running tally after every night.
--
-- A night is one sitting of the pipeline: the batches of every run's manifest, in the order
-- they finished, with a new night starting after a pause of at least $pause_minutes minutes in
-- which no batch finished (nights of `acesup nightly` are a day apart; the batches of one night
-- finish minutes apart). Each result row belongs to the night of the batch that wrote it
-- (matched on run, variant, policy and deal range). This reads the per-deal rows and the batch
-- records; it stands in until the report's per-night aggregates exist (issue "Nightly at
-- scale"), which will record each night as it is added.
--
-- grain:      one row per (night, variant, policy) for every night from the first one in
--             which the pair has rows (a night that adds nothing to a pair repeats its tally)
-- inputs:     results (view), run_batches (view); macros wilson_low, wilson_high, one_in, player_kind
-- parameters:
-- param pause_minutes = '60'
--             a pause this long (minutes) with no batch finishing starts a new night
-- columns:
--   night                  1, 2, ... in the order the nights happened
--   nights                 how many nights there are in all (the same on every row)
--   variant, policy, kind  as in win_odds
--   added                  deals of this pair that this night added
--   deals, wins, gave_up   running totals after this night
--   rate, low, high, one_in   as in win_odds, on the running totals
WITH batches AS (
    SELECT run_id, variant, policy, first, last, finished::TIMESTAMPTZ AS finished
    FROM run_batches
    WHERE state = 'done' AND finished IS NOT NULL
),
starts AS (
    SELECT
        *,
        CASE WHEN lag(finished) OVER (ORDER BY finished) IS NULL
                  OR finished - lag(finished) OVER (ORDER BY finished) >= to_minutes($pause_minutes::BIGINT)
             THEN 1 ELSE 0 END AS starts_night
    FROM batches
),
numbered AS (
    -- ties in `finished` never start a night (their gap is 0), so the numbering does not
    -- depend on how ties are ordered
    SELECT *, sum(starts_night) OVER (ORDER BY finished ROWS UNBOUNDED PRECEDING) AS night
    FROM starts
),
added AS (
    SELECT
        b.night,
        r.variant,
        r.policy,
        count(*) AS added,
        count(*) FILTER (WHERE r.won) AS wins,
        count(*) FILTER (WHERE r.status = 'gave_up') AS gave_up
    FROM results r
    JOIN numbered b
      ON b.run_id = r.run_id AND b.variant = r.variant AND b.policy = r.policy
     AND r.deal BETWEEN b.first AND b.last
    GROUP BY b.night, r.variant, r.policy
),
all_nights AS (
    SELECT DISTINCT night FROM numbered
),
pairs AS (
    SELECT variant, policy, min(night) AS first_night FROM added GROUP BY variant, policy
),
grid AS (
    SELECT n.night, p.variant, p.policy
    FROM pairs p JOIN all_nights n ON n.night >= p.first_night
),
running AS (
    SELECT
        g.night,
        g.variant,
        g.policy,
        coalesce(a.added, 0) AS added,
        sum(coalesce(a.added, 0)) OVER w AS deals,
        sum(coalesce(a.wins, 0)) OVER w AS wins,
        sum(coalesce(a.gave_up, 0)) OVER w AS gave_up
    FROM grid g
    LEFT JOIN added a ON a.night = g.night AND a.variant = g.variant AND a.policy = g.policy
    WINDOW w AS (PARTITION BY g.variant, g.policy ORDER BY g.night ROWS UNBOUNDED PRECEDING)
)
SELECT
    night::INTEGER AS night,
    (SELECT count(*) FROM all_nights)::INTEGER AS nights,
    variant,
    policy,
    player_kind(policy) AS kind,
    added::BIGINT AS added,
    deals::BIGINT AS deals,
    wins::BIGINT AS wins,
    gave_up::BIGINT AS gave_up,
    wins::DOUBLE / deals AS rate,
    wilson_low(wins, deals) AS low,
    wilson_high(wins + gave_up, deals) AS high,
    one_in(wins, deals) AS one_in
FROM running
ORDER BY variant, policy, night;
