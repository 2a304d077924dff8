-- solver_ladder: the clairvoyant win rate under each solver restriction and discard rule.
--
-- How much of the clairvoyant figure comes from routing future cards: each restriction of
-- RULES.md (sensible, leftmost, must_fill, or several) removes choices that are worth
-- something only to a player who knows the stock order; discards=optional adds choices.
-- Each rung is compared with the unrestricted solver with forced discards of the same preset
-- on the deals both solved (paired).
--
-- grain:      one row per (preset, discards, restriction) present in results
-- inputs:     tallies, pairs (views of the aggregates); macros wilson_low, wilson_high, solver_restriction,
--             variant_preset, variant_discards
-- parameters: none
-- columns:
--   preset                 variant preset ('standard', 'strict', 'easy', 'reverse')
--   discards               'forced' or 'optional'
--   restriction            'none', 'sensible', 'leftmost', 'must_fill', or several joined by '+'
--   variant, policy        the rows this rung reads
--   rung                   sort key: forced before optional, then fewer restrictions first
--   deals, wins, gave_up, rate, low, high   as in win_odds (gave_up: lost for low, won for high)
--   base_deals             deals this rung shares with the unrestricted forced-discard solver
--   base_wins              of those, deals the unrestricted solver wins
--   rung_wins              of those, deals this rung wins
--   share_of_base          rung_wins / base_wins: the part of the clairvoyant wins that survive
--                          the restriction (above 1 for optional discards); NULL without base wins
WITH tallies AS (
    SELECT
        variant_preset(variant) AS preset,
        variant_discards(variant) AS discards,
        solver_restriction(policy) AS restriction,
        variant,
        policy,
        deals,
        wins,
        gave_up
    FROM tallies
    WHERE solver_restriction(policy) IS NOT NULL
),
-- Each rung with the unrestricted forced-discard solver of its preset (the base): the pair of
-- the two, either way round, or the base itself.
base_pairs AS (
    SELECT t.variant, t.policy, p.deals AS base_deals,
           CASE WHEN p.variant_a = t.preset AND p.policy_a = 'solver' THEN p.a_wins ELSE p.b_wins END AS base_wins,
           CASE WHEN p.variant_a = t.preset AND p.policy_a = 'solver' THEN p.b_wins ELSE p.a_wins END AS rung_wins
    FROM tallies t
    JOIN pairs p
      ON (p.variant_a = t.preset AND p.policy_a = 'solver' AND p.variant_b = t.variant AND p.policy_b = t.policy)
      OR (p.variant_b = t.preset AND p.policy_b = 'solver' AND p.variant_a = t.variant AND p.policy_a = t.policy)
    UNION ALL
    SELECT variant, policy, deals, wins, wins FROM tallies WHERE variant = preset AND policy = 'solver'
)
SELECT
    t.preset,
    t.discards,
    t.restriction,
    t.variant,
    t.policy,
    (CASE t.discards WHEN 'forced' THEN 0 ELSE 100 END)
      + (CASE WHEN t.restriction = 'none' THEN 0
              ELSE len(string_split(t.restriction, '+')) * 10
                   + (CASE string_split(t.restriction, '+')[1]
                      WHEN 'sensible' THEN 1 WHEN 'leftmost' THEN 2 ELSE 3 END) END) AS rung,
    t.deals,
    t.wins,
    t.gave_up,
    t.wins::DOUBLE / t.deals AS rate,
    wilson_low(t.wins, t.deals) AS low,
    wilson_high(t.wins + t.gave_up, t.deals) AS high,
    coalesce(p.base_deals, 0) AS base_deals,
    coalesce(p.base_wins, 0) AS base_wins,
    coalesce(p.rung_wins, 0) AS rung_wins,
    CASE WHEN p.base_wins > 0 THEN p.rung_wins::DOUBLE / p.base_wins END AS share_of_base
FROM tallies t
LEFT JOIN base_pairs p ON p.variant = t.variant AND p.policy = t.policy
ORDER BY t.preset, rung, t.restriction;
