-- nights: the figures night by night: each player's running tally after every night.
--
-- A night is one step of the aggregates (queries/aggregates.py: each night adds its rows as a
-- generation; `acesup report` adds a step too when it finds rows no step included). Nights are
-- numbered 1, 2, ... in generation order (a rebuild keeps the generations it replays). Each row
-- is a running total: what every night up to this one added.
--
-- grain:      one row per (night, variant, policy) for every night from the first one that added
--             rows of the pair (a night that adds nothing to a pair repeats its running tally)
-- inputs:     nights (view: per generation and pair, what it added); macros wilson_low,
--             wilson_high, one_in, player_kind
-- parameters: none
-- columns:
--   night                  1, 2, ... in the order the nights happened
--   nights                 how many nights there are in all (the same on every row)
--   variant, policy, kind  as in win_odds
--   added                  deals of this pair that this night added
--   deals, wins, gave_up   running totals after this night
--   rate, low, high, one_in   as in win_odds, on the running totals
WITH steps AS (
    SELECT DISTINCT generation FROM nights
),
numbered AS (
    SELECT generation, row_number() OVER (ORDER BY generation) AS night FROM steps
),
added AS (
    SELECT n.night, s.variant, s.policy, s.deals AS added, s.wins, s.gave_up
    FROM nights s JOIN numbered n USING (generation)
),
pairs AS (
    SELECT variant, policy, min(night) AS first_night FROM added GROUP BY variant, policy
),
grid AS (
    SELECT n.night, p.variant, p.policy
    FROM pairs p JOIN numbered n ON n.night >= p.first_night
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
    (SELECT count(*) FROM numbered)::INTEGER AS nights,
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
