-- win_odds: how often each player wins each variant, with a 95% Wilson interval.
--
-- grain:      one row per (variant, policy)
-- inputs:     tallies (view of the aggregates: one row per variant x policy);
--             macros wilson_low, wilson_high, one_in, player_kind
-- parameters: none
-- columns:
--   variant       rule set of the game played ('standard', 'strict+optional')
--   policy        player name ('greedy', 'solver', 'solver:sensible+leftmost+must_fill')
--   kind          'clairvoyant' (solver: knows the stock order) or 'honest' (does not)
--   deals         deals played (all seeds pooled)
--   wins          deals won (score 48)
--   gave_up       solver deals whose search hit its node limit (not won; 0 for others)
--   rate          wins / deals (gave_up counted as lost)
--   low, high     95% Wilson interval (z = 1.96); gave_up deals count as lost for
--                 low and as won for high (Solvitaire's convention)
--   one_in        deals / wins: "1 in N" (NULL without a win)
--   one_in_low    1 / high: the most pessimistic "1 in N" in the interval
--   one_in_high   1 / low (NULL when low is 0)
--   score_sum     sum of final scores (exact, for recomputation)
--   mean_score    score_sum / deals (solver: max score; a lower bound when gave_up)
--   mean_moves    mean cards moved into empty piles
SELECT
    variant,
    policy,
    player_kind(policy) AS kind,
    deals,
    wins,
    gave_up,
    wins::DOUBLE / deals AS rate,
    wilson_low(wins, deals) AS low,
    wilson_high(wins + gave_up, deals) AS high,
    one_in(wins, deals) AS one_in,
    CASE WHEN wilson_high(wins + gave_up, deals) > 0 THEN 1.0 / wilson_high(wins + gave_up, deals) END AS one_in_low,
    CASE WHEN wilson_low(wins, deals) > 0 THEN 1.0 / wilson_low(wins, deals) END AS one_in_high,
    score_sum,
    score_sum::DOUBLE / deals AS mean_score,
    moves_sum::DOUBLE / deals AS mean_moves
FROM tallies
ORDER BY variant, kind, policy;
