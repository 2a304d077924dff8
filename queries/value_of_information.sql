-- value_of_information: what knowing the stock order is worth, per variant.
--
-- The clairvoyant solver ($reference) against the best honest player of the variant
-- (the highest low end of the 95% Wilson interval, as in headline.sql; ties go to the higher
-- rate, the higher mean score, then the name), compared on the deals both played (paired).
-- Choosing the best of several honest players by a measured figure favours a lucky one
-- slightly (winner's curse); the intervals do not account for it.
--
-- grain:      one row per variant that has both the reference and at least one honest player
-- inputs:     tallies, pairs (views of the aggregates); macros wilson_low, wilson_high, player_kind,
--             paired_half
-- parameters:
-- param reference = 'solver'
--             the clairvoyant reference player
-- columns:
--   variant
--   reference, reference_deals, reference_wins, reference_gave_up, reference_rate,
--   reference_low, reference_high      the reference over all its deals (as in win_odds)
--   honest_policy, honest_deals, honest_wins, honest_rate, honest_low, honest_high
--                                      the best honest player over all its deals
--   honest_players                     how many honest players the best was chosen from
--   paired_deals                       deals both played
--   paired_reference_wins, paired_honest_wins
--   value                              (paired_reference_wins - paired_honest_wins) / paired_deals:
--                                      win rate bought by seeing the stock
--   value_low, value_high              normal 95% interval on the per-deal differences (high
--                                      adds the deals the reference gave up on / paired_deals)
--   ratio                              paired_reference_wins / paired_honest_wins (NULL without
--                                      an honest win)
--   honest_share                       paired_honest_wins / paired_reference_wins: the share of
--                                      the clairvoyantly winnable deals an honest player wins
WITH honest_ranked AS (
    SELECT
        *,
        row_number() OVER (PARTITION BY variant
                           ORDER BY wilson_low(wins, deals) DESC, wins::DOUBLE / deals DESC,
                                    score_sum::DOUBLE / deals DESC, policy) AS place,
        count(*) OVER (PARTITION BY variant) AS honest_players
    FROM tallies
    WHERE player_kind(policy) = 'honest'
),
best AS (
    SELECT * FROM honest_ranked WHERE place = 1
),
reference AS (
    SELECT * FROM tallies WHERE policy = $reference
),
-- The pair (reference, best honest player) of the variant, seen from the reference's side.
oriented AS (
    SELECT variant_a AS variant, policy_a AS reference, policy_b AS honest, deals, a_wins AS reference_wins,
           b_wins AS honest_wins, a_only AS reference_only, b_only AS honest_only, a_undecided AS undecided
    FROM pairs WHERE variant_a = variant_b
    UNION ALL
    SELECT variant_a, policy_b, policy_a, deals, b_wins, a_wins, b_only, a_only, b_undecided
    FROM pairs WHERE variant_a = variant_b
),
paired AS (
    SELECT
        b.variant,
        o.deals AS paired_deals,
        o.reference_wins AS paired_reference_wins,
        o.honest_wins AS paired_honest_wins,
        o.reference_only,
        o.honest_only,
        o.undecided
    FROM best b
    JOIN oriented o ON o.variant = b.variant AND o.honest = b.policy AND o.reference = $reference
),
moments AS (
    SELECT
        *,
        (reference_only - honest_only)::DOUBLE / paired_deals AS value,
        paired_half(reference_only, honest_only, paired_deals) AS half
    FROM paired
)
SELECT
    b.variant,
    r.policy AS reference,
    r.deals AS reference_deals,
    r.wins AS reference_wins,
    r.gave_up AS reference_gave_up,
    r.wins::DOUBLE / r.deals AS reference_rate,
    wilson_low(r.wins, r.deals) AS reference_low,
    wilson_high(r.wins + r.gave_up, r.deals) AS reference_high,
    b.policy AS honest_policy,
    b.deals AS honest_deals,
    b.wins AS honest_wins,
    b.wins::DOUBLE / b.deals AS honest_rate,
    wilson_low(b.wins, b.deals) AS honest_low,
    wilson_high(b.wins, b.deals) AS honest_high,
    b.honest_players,
    m.paired_deals,
    m.paired_reference_wins,
    m.paired_honest_wins,
    m.value,
    m.value - m.half AS value_low,
    m.value + m.half + m.undecided::DOUBLE / m.paired_deals AS value_high,
    CASE WHEN m.paired_honest_wins > 0 THEN m.paired_reference_wins::DOUBLE / m.paired_honest_wins END AS ratio,
    CASE WHEN m.paired_reference_wins > 0 THEN m.paired_honest_wins::DOUBLE / m.paired_reference_wins END AS honest_share
FROM best b
JOIN reference r ON r.variant = b.variant
JOIN moments m ON m.variant = b.variant
ORDER BY b.variant;
