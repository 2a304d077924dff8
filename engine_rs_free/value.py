"""The value function W of honest information states, and its expectation over the next deal.

W is what both ends of the honest bracket are built from (docs/bracket.md):
the ``adp`` player takes the moves whose position has the highest expected
W after the next deal, and the ``bound`` charges every deal of a clairvoyant
line the penalty W(after) - E[W(after) | before].

W of a position s just after a deal, with n undealt cards (``w_of``):

- n = 0: 1 if some line of moves wins, else 0 (exact);
- n = 4: the exact honest value V_1 (``expectimax.v1``);
- n >= 8: the best model value Q̂_{n/4}(u) over the positions u reachable from s
  by moves (``kind=W_MODEL``); ``W_EXACT`` gives V_2 at n = 8 (tests only);
- n = 8 with a look-ahead model (``Model.look8`` = K > 0, e.g. w3): instead of Q̂_2,
  the best over u of the mean of V_1 after K keyed orders of the 8 undealt cards
  (``look8``); the bound's penalty of the next deal uses the same orders, so that
  term of the penalty telescopes exactly (docs/bracket.md);
  ``W_ZERO`` is 0 everywhere (the bound is then the clairvoyant solver's);
- n = 12 with a look-ahead feature (``Model.look12`` = K > 0, e.g. w4): Q̂_3 reads, as its feature
  30, the mean over K keyed sampled deals of the stage-2 network's W after the deal
  (``look12_feature``); on the real undealt set those are the bound's own penalty tuples, so the
  feature and the expectation it is compared with share their sampling noise (docs/bracket.md).
  With ``Model.tele12`` (w9, measured and not shipped) Q̂_3 *is* that feature, with no network: W at
  12 undealt is the best look-ahead over the reachable positions, so the bound's stage-3 penalty
  term telescopes up to the stage-2 network's error (docs/bracket.md, "A stage-3 W that telescopes").

Q̂_k (k = 2..12 deals to come) is a small neural network of hand-made features
of the position about to deal (``features``, invariant under relabelling piles
and suits): one hidden layer of tanh units and a logistic output, one per k,
fitted by ``engine_rs_free.fit`` and shipped as ``models/<name>.npz``.

Expectations over the next deal (``expected_w``) are exact (the mean over every
ordered 4-tuple of the undealt cards) or the mean over sampled 4-tuples.
Sampled tuples (``sample_tuples``) are Fisher-Yates draws of the undealt cards
in ascending order with Philox words (deals.philox_shuffle): they depend on the
set of undealt cards and the key (seed, deal index, counter), never on the
order of the stock.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numba as nb
import numpy as np

from .deals import mix64, philox_shuffle
from .errors import AcesUpError, InputRangeError, PositionParseError
from .expectimax import TMP_Q2, v0, v1, v2
from .infostate import (
    ROW_CL,
    ROW_RL,
    ROW_RW,
    ROW_TMP,
    TOP,
    bit,
    can_move,
    copy_row,
    deal4,
    endgame_min,
    first_empty,
    move,
    on_table,
    popcount,
    reach,
    undealt_mask,
)
from .players import DEFAULT_MODEL


class UnknownModelError(AcesUpError):
    """A value model that is not shipped (``engine_rs_free/models/<name>.npz``); the message names the refit command."""


W_ZERO = 0
W_MODEL = 1
W_EXACT = 2
N_FEATURES = 31  # models with 30 read the first 30 (feature 30, the clairvoyant probe, came later)
PROBE_ORDERS = 8  # stock orders of the clairvoyant probe (feature 30, 8 undealt cards only)
PROBE_STREAM = 0xC1A12
MAX_STAGE = 12  # deals to come from the first decision: 48 undealt cards
TMP_EW = ROW_TMP + 2
STREAM_PENALTY = 0x9E4A1  # Philox counter word 1: the tuples of the bound's penalties
STREAM_CHOICE = 0xC401C  # Philox counter word 1: the tuples the adp player decides with
STREAM_LOOK = 0x100C8  # Philox counter word 1: the orders of a look-ahead model's W at 8 undealt cards
MAX_LOOK = 256  # look-ahead orders at most


@nb.njit(cache=True, inline="always")
def _sort4(a, b, c, d):
    """Four values in ascending order (a sorting network)."""
    if a > b:
        a, b = b, a
    if c > d:
        c, d = d, c
    if a > c:
        a, c = c, a
    if b > d:
        b, d = d, b
    if b > c:
        b, c = c, b
    return a, b, c, d


@nb.njit(cache=True)
def _probe_order_wins(P, H, r, order, n, st, su, fill):
    """1 when a clairvoyant who knows ``order`` (the n undealt cards) can win from row r, dealing first."""
    base = ROW_CL
    copy_row(P, H, r, base)
    deal4(P, H, base, order[0], order[1], order[2], order[3], st, su)
    sp = np.zeros(64, np.int64)
    nxt = np.zeros(64, np.int64)
    sp[0] = 4
    d = 0
    while d >= 0:
        row = base + d
        if sp[d] == n:
            if endgame_min(P, H, row, st, su, fill) <= 4:
                return 1
            d -= 1
            continue
        c = nxt[d]
        nxt[d] = c + 1
        if d + 1 >= 64 or c > 4:
            d -= 1
            continue
        if c == 0:
            copy_row(P, H, row, row + 1)
            k = sp[d]
            deal4(P, H, row + 1, order[k], order[k + 1], order[k + 2], order[k + 3], st, su)
            sp[d + 1] = k + 4
        else:
            e = first_empty(H, row)
            if e < 0 or not can_move(P, H, row, c - 1, st, fill):
                continue
            copy_row(P, H, row, row + 1)
            move(P, H, row + 1, c - 1, e, st, su)
            sp[d + 1] = sp[d]
        d += 1
        nxt[d] = 0
    return 0


@nb.njit(cache=True)
def clairvoyant_probe(P, H, r, und, st, su, fill):
    """The share of PROBE_ORDERS stock orders from which a clairvoyant wins row r (about to deal; 8 undealt).

    The orders are Fisher-Yates shuffles of the undealt cards keyed by the undealt *set* (Philox,
    key = the mask's two words, counter = the order's number): a function of the honest
    information state, so W stays one. 0 for any other number of undealt cards.
    """
    n = popcount(und)
    if n != 8:
        return 0.0
    cards = np.empty(8, np.int8)
    k = 0
    for c in range(52):
        if (und >> np.uint64(c)) & np.uint64(1):
            cards[k] = c
            k += 1
    order = np.empty(8, np.int8)
    lo = np.uint32(und & np.uint64(0xFFFFFFFF))
    hi = np.uint32(und >> np.uint64(32))
    wins = 0
    for j in range(PROBE_ORDERS):
        for i in range(8):
            order[i] = cards[i]
        philox_shuffle(order, 8, np.uint32(j << 8), np.uint32(PROBE_STREAM), lo, hi, lo, hi, 256)
        wins += _probe_order_wins(P, H, r, order, 8, st, su, fill)
    return wins / PROBE_ORDERS


@nb.njit(cache=True)
def features(P, H, r, und, st, su, out):
    """Write the N_FEATURES features of row r (a position about to deal) with undealt mask ``und`` to out.

    Card sets are bit masks: ``stronger[x]`` (the cards of x's suit that beat x) is built once per
    call from the strength table, so every count below is a popcount.
    """
    n = popcount(und)
    inv = np.empty(52, np.int64)  # inv[suit * 13 + strength] = card
    for c in range(52):
        inv[su[c] * 13 + st[c]] = c
    stronger = np.empty(52, np.uint64)
    suit_mask = np.zeros(4, np.uint64)
    ace_mask = np.uint64(0)
    for s in range(4):
        acc = np.uint64(0)
        for t in range(12, -1, -1):
            c = inv[s * 13 + t]
            stronger[c] = acc
            acc |= bit(c)
        suit_mask[s] = acc
        ace_mask |= bit(inv[s * 13 + TOP])
    tab_mask = np.uint64(0)
    pm0 = np.uint64(0)
    pm1 = np.uint64(0)
    pm2 = np.uint64(0)
    pm3 = np.uint64(0)
    for p in range(4):
        m = np.uint64(0)
        for i in range(H[r, p]):
            m |= bit(P[r, p, i])
        tab_mask |= m
        if p == 0:
            pm0 = m
        elif p == 1:
            pm1 = m
        elif p == 2:
            pm2 = m
        else:
            pm3 = m
    live = und | tab_mask
    tab = on_table(H, r)
    empties = 0
    ace_bottom = 0
    ace_table = 0
    ace_top = 0
    extra_aces = 0
    blocked = 0
    dead = 0
    under_ace = 0
    pairs = 0
    blocked_depth = 0
    above_ace = 0
    threat = 0.0
    stuck_tops = 0
    top_strength = 0.0
    for p in range(4):
        hp = H[r, p]
        if hp == 0:
            empties += 1
            continue
        pm = pm0 if p == 0 else (pm1 if p == 1 else (pm2 if p == 2 else pm3))
        aces_here = popcount(pm & ace_mask)
        ace_table += aces_here
        if aces_here > 1:
            extra_aces += aces_here - 1
        if st[P[r, p, 0]] == TOP:
            ace_bottom += 1
        top = P[r, p, hp - 1]
        if st[top] == TOP:
            ace_top += 1
        top_strength += st[top] / 12.0
        # from the top down: cards under an Ace, and the cards above the lowest Ace
        ace_seen = False
        first_ace = -1
        for i in range(hp - 1, -1, -1):
            x = P[r, p, i]
            if st[x] == TOP:
                ace_seen = True
                first_ace = i
            elif ace_seen:
                under_ace += 1
        if first_ace >= 0:
            above_ace += hp - 1 - first_ace
        below = np.uint64(0)
        for i in range(hp):
            x = P[r, p, i]
            if st[x] != TOP:
                sx = stronger[x]
                below_stronger = popcount(sx & below)
                if below_stronger > 0:
                    blocked += 1
                    pairs += below_stronger
                    blocked_depth += i
                if popcount(sx & live) == below_stronger:
                    dead += 1
                if i == hp - 1:
                    und_stronger = popcount(sx & und)
                    threat += und_stronger
                    if und_stronger == 0 and (sx & tab_mask & ~pm) == 0:
                        stuck_tops += 1
            below |= bit(x)
    h0, h1, h2, h3 = _sort4(H[r, 0], H[r, 1], H[r, 2], H[r, 3])
    s0, s1, s2, s3 = _sort4(popcount(und & suit_mask[0]), popcount(und & suit_mask[1]),
                            popcount(und & suit_mask[2]), popcount(und & suit_mask[3]))
    ace_und = popcount(und & ace_mask)
    score = 52 - tab - n
    out[0] = n / 48.0
    out[1] = tab / 20.0
    out[2] = empties
    out[3] = ace_bottom
    out[4] = ace_table - ace_bottom
    out[5] = ace_und
    out[6] = extra_aces
    out[7] = blocked
    out[8] = dead
    out[9] = under_ace
    out[10] = tab - (4 - empties)
    out[11] = h3 / 13.0
    out[12] = h2 / 13.0
    out[13] = h1 / 13.0
    out[14] = h0 / 13.0
    out[15] = ace_top
    out[16] = threat / max(n, 1)
    out[17] = stuck_tops
    out[18] = pairs
    out[19] = score / 48.0
    out[20] = s3 / 13.0
    out[21] = s2 / 13.0
    out[22] = s1 / 13.0
    out[23] = s0 / 13.0
    out[24] = blocked_depth / 13.0
    out[25] = above_ace
    out[26] = top_strength
    out[27] = 1.0 if dead > 0 else 0.0
    out[28] = (4 - ace_bottom) * (1.0 if empties == 0 else 0.0)
    out[29] = empties * (ace_table - ace_bottom)
    out[30] = 0.0  # the clairvoyant probe: filled by features_full (only models that read it pay for it)


@nb.njit(cache=True)
def _network(k, fx, W1, b1, w2, b2, mu, sd):
    """The network of stage k on the features in fx (its first W1.shape[1] entries)."""
    nf = W1.shape[1]
    nh = b1.shape[1]
    z = b2[k]
    for j in range(nh):
        a = b1[k, j]
        for f in range(nf):
            a += W1[k, f, j] * ((fx[f] - mu[k, f]) / sd[k, f])
        z += w2[k, j] * np.tanh(a)
    return 1.0 / (1.0 + np.exp(-z))


@nb.njit(cache=True)
def look12_feature(P, H, KM, KF, r, und, st, su, fill, W1, b1, w2, b2, mu, sd, lk):
    """Feature 30 of a model with a look-ahead feature (``Model.look12`` = lk[5] = K > 0) at 12 undealt:
    the mean, over K sampled next deals, of the stage-2 network's W after the deal (the best Q̂_2 over
    the positions reachable by moves, its feature 30 read as 0). -1.0 on overflow.

    The K tuples are ``sample_tuples(undealt, K, seed, index, counter=36, stream=STREAM_PENALTY)``
    with the seed and deal index of lk: a function of the undealt *set* and the deal's key, never of
    the stock's order, so W stays a function of the honest state. On the real undealt set they are
    the very tuples the bound charges the deal from 12 undealt with (``bound.deal_tuples``, counter
    48 - 12), so the feature and the penalty it is compared with share their sampling noise
    (docs/bracket.md).
    """
    n = popcount(und)
    cards = np.empty(n, np.int8)
    mask_to_cards(und, cards)
    m_t = lk[5]
    tup = np.empty((m_t, 4), np.int8)
    if not _sample_tuples(cards, m_t, 48 - n, STREAM_PENALTY, np.uint32(lk[1]), np.uint32(lk[2]),
                          np.uint32(lk[3]), np.uint32(lk[4]), tup):
        return -1.0
    fx2 = np.zeros(64)
    tot = 0.0
    for t in range(m_t):
        c0, c1, c2, c3 = tup[t, 0], tup[t, 1], tup[t, 2], tup[t, 3]
        copy_row(P, H, r, ROW_RL)
        deal4(P, H, ROW_RL, c0, c1, c2, c3, st, su)
        after = und & ~(bit(c0) | bit(c1) | bit(c2) | bit(c3))
        m = reach(P, H, KM, KF, ROW_RL, st, su, fill)
        if m < 0:
            return -1.0
        best = 0.0
        for i in range(m):
            features(P, H, ROW_RL + i, after, st, su, fx2)
            v = _network(2, fx2, W1, b1, w2, b2, mu, sd)
            if v > best:
                best = v
        tot += best
    return tot / m_t


@nb.njit(cache=True)
def features_full(P, H, KM, KF, r, und, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
    """``features`` into fx, plus feature 30 when the model reads it (W1.shape[1] > 30): the
    look-ahead feature at 12 undealt for a model with one (lk[5] > 0; 0 elsewhere), else the
    clairvoyant probe. False on overflow."""
    features(P, H, r, und, st, su, fx)
    if W1.shape[1] > 30:
        if lk[5] > 0:
            if popcount(und) == 12:
                v = look12_feature(P, H, KM, KF, r, und, st, su, fill, W1, b1, w2, b2, mu, sd, lk)
                if v < 0:
                    return False
                fx[30] = v
        else:
            fx[30] = clairvoyant_probe(P, H, r, und, st, su, fill)
    return True


@nb.njit(cache=True)
def q_model(P, H, KM, KF, r, und, k, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
    """Q̂_k of row r (about to deal, ``und`` undealt, k deals to come): the network of stage k, or at
    stage 3 of a telescoping model (lk[6] != 0) the look-ahead feature itself; -1.0 on overflow (of the
    look-ahead feature's reach list)."""
    if k == 3 and lk[6] != 0:
        return look12_feature(P, H, KM, KF, r, und, st, su, fill, W1, b1, w2, b2, mu, sd, lk)
    if not features_full(P, H, KM, KF, r, und, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
        return -1.0
    return _network(k, fx, W1, b1, w2, b2, mu, sd)


@nb.njit(cache=True)
def mask_to_cards(und, out):
    """Write the cards of mask ``und`` to out in ascending order; returns how many."""
    n = 0
    for c in range(52):
        if (und >> np.uint64(c)) & np.uint64(1):
            out[n] = c
            n += 1
    return n


@nb.njit(cache=True)
def look_orders(und, lk, out):
    """out[s] (s < lk[0]) = an order of the 8 undealt cards of ``und``: deal out[s, 0:4], then out[s, 4:8].

    Fisher-Yates of the sorted cards with Philox counter ``(s << 8 | block, STREAM_LOOK, h)``
    keyed by the seed (lk[1], lk[2]), h = mix64(deal index ^ mix64(und)) (the index is lk[3], lk[4]):
    a function of the undealt *set* and the key, never of the stock's order. False if blocks ran out.
    """
    cards = np.empty(8, np.int8)
    mask_to_cards(und, cards)
    index = (np.uint64(lk[4]) << np.uint64(32)) | np.uint64(lk[3])
    h = mix64(index ^ mix64(und))
    h_lo = np.uint32(h & np.uint64(0xFFFFFFFF))
    h_hi = np.uint32(h >> np.uint64(32))
    row = np.empty(8, np.int8)
    for s in range(lk[0]):
        for i in range(8):
            row[i] = cards[i]
        if not philox_shuffle(row, 8, np.uint32(s) << np.uint32(8), np.uint32(STREAM_LOOK), h_lo, h_hi,
                              np.uint32(lk[1]), np.uint32(lk[2]), 256):
            return False
        for i in range(8):
            out[s, i] = row[i]
    return True


@nb.njit(cache=True)
def look8(P, H, KM, KF, r, und, lk, st, su, fill):
    """W of a look-ahead model at 8 undealt cards: the best, over the positions u reachable from row r,
    of the mean of V_1 after the first four cards of each of the lk[0] orders of ``look_orders``.

    The bound's penalty of the deal from 8 undealt uses the same orders (``look_tuples``), so on every
    line the deal's expected W from u is at most this W: that term of the penalty telescopes
    (docs/bracket.md). -1.0 on overflow.
    """
    m_ord = lk[0]
    orders = np.empty((m_ord, 8), np.int8)
    if not look_orders(und, lk, orders):
        return -1.0
    copy_row(P, H, r, ROW_RW)
    m = reach(P, H, KM, KF, ROW_RW, st, su, fill)
    if m < 0:
        return -1.0
    best = 0.0
    rest = np.empty(4, np.int64)
    for i in range(m):
        tot = 0.0
        for s in range(m_ord):
            copy_row(P, H, ROW_RW + i, TMP_Q2)
            deal4(P, H, TMP_Q2, orders[s, 0], orders[s, 1], orders[s, 2], orders[s, 3], st, su)
            for j in range(4):
                rest[j] = orders[s, 4 + j]
            v = v1(P, H, KM, KF, TMP_Q2, rest, st, su, fill)
            if v < 0:
                return -1.0
            tot += v
        v = tot / m_ord
        if v > best:
            best = v
    return best


def look_key(look: int, seed: int, index: int, look12: int = 0, tele12: bool = False) -> np.ndarray:
    """The ``lk`` argument of ``w_of``: uint32[7] = look-ahead orders at 8 undealt (0: none), seed and
    deal index words, tuples of the look-ahead feature at 12 undealt (0: none), and 1 when Q̂_3 is that
    feature itself (``Model.tele12``; ``Model.key``)."""
    for what, k in (("look-ahead", look), ("look-ahead feature", look12)):
        if not 0 <= k <= MAX_LOOK:
            raise InputRangeError(f"a {what} of {k} orders is out of range; use 0..{MAX_LOOK}")
    if tele12 and not look12:
        raise InputRangeError("a telescoping stage 3 (tele12) needs the look-ahead feature: give look12 > 0")
    seed, index = int(seed), int(index)
    return np.array([look, seed & 0xFFFFFFFF, seed >> 32, index & 0xFFFFFFFF, index >> 32, look12, int(tele12)],
                    np.uint32)


def look_tuples(cards, look: int, *, seed: int, index: int) -> np.ndarray:
    """``int8[look, 4]``: the first deals of the look-ahead orders of the 8 undealt ``cards`` (the tuples
    the bound's penalty uses for the deal from 8 undealt with a look-ahead model)."""
    cards = [int(c) for c in cards]
    if len(cards) != 8:
        raise PositionParseError(f"a look-ahead needs 8 undealt cards; got {len(cards)}")
    out = np.empty((look, 8), np.int8)
    if not look_orders(undealt_mask(cards), look_key(look, seed, index), out):
        raise RuntimeError(f"look-ahead orders ran out of random blocks (seed {seed}, deal {index})")
    return np.ascontiguousarray(out[:, :4])


@nb.njit(cache=True)
def w_of(P, H, KM, KF, r, und, kind, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
    """W of row r (just after a deal) with undealt mask ``und`` (module docstring); -1.0 on overflow.

    ``lk`` is the key of the model's look-ahead at 8 undealt cards (``look_key``; lk[0] = 0: none)."""
    if kind == W_ZERO:
        return 0.0
    n = popcount(und)
    if n == 0:
        return v0(P, H, r, st, su, fill)
    if n == 8 and kind == W_MODEL and lk[0] > 0:
        return look8(P, H, KM, KF, r, und, lk, st, su, fill)
    if n <= 8 and (n == 4 or kind == W_EXACT):
        cards = np.empty(8, np.int64)
        mask_to_cards(und, cards)
        if n == 4:
            return v1(P, H, KM, KF, r, cards, st, su, fill)
        return v2(P, H, KM, KF, r, cards, st, su, fill)
    if kind == W_EXACT:
        return -2.0  # no exact value this far from the end
    copy_row(P, H, r, ROW_RW)
    m = reach(P, H, KM, KF, ROW_RW, st, su, fill)
    if m < 0:
        return -1.0
    k = n // 4
    best = 0.0
    for i in range(m):
        v = q_model(P, H, KM, KF, ROW_RW + i, und, k, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
        if v < 0:
            return -1.0
        if v > best:
            best = v
    return best


@nb.njit(cache=True)
def expected_w(P, H, KM, KF, r, und, tuples, t0, t1, kind, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
    """The mean of W after dealing tuples[t0:t1] (ordered 4-tuples of undealt cards) onto row r."""
    tot = 0.0
    for t in range(t0, t1):
        copy_row(P, H, r, TMP_EW)
        c0, c1, c2, c3 = tuples[t, 0], tuples[t, 1], tuples[t, 2], tuples[t, 3]
        deal4(P, H, TMP_EW, c0, c1, c2, c3, st, su)
        after = und & ~(bit(c0) | bit(c1) | bit(c2) | bit(c3))
        v = w_of(P, H, KM, KF, TMP_EW, after, kind, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
        if v < 0:
            return v
        tot += v
    return tot / max(t1 - t0, 1)


@nb.njit(cache=True)
def _sample_tuples(cards, k, c_hi, stream, seed_lo, seed_hi, idx_lo, idx_hi, out):
    """out[0:k] = ordered 4-tuples drawn from ``cards`` (ascending); False if Philox blocks ran out."""
    n = cards.shape[0]
    row = np.empty(n, np.int8)
    for s in range(k):
        for i in range(n):
            row[i] = cards[i]
        base = (np.uint32(c_hi) << np.uint32(20)) | (np.uint32(s) << np.uint32(8))
        if not philox_shuffle(row, n, base, np.uint32(stream), idx_lo, idx_hi, seed_lo, seed_hi, 256):
            return False
        # Fisher-Yates fixes positions n-1, n-2, n-3, n-4 first: a uniform ordered 4-tuple
        for j in range(4):
            out[s, j] = row[n - 1 - j]
    return True


def sample_tuples(cards, k: int, *, seed: int, index: int, counter: int, stream: int) -> np.ndarray:
    """``int8[k, 4]``: k ordered 4-tuples drawn uniformly from the set ``cards`` (sorted first).

    Key: (seed, deal ``index``, ``counter`` < 4096, ``stream``). Tuple s is the last four cards,
    last first, of a Fisher-Yates shuffle of the sorted cards with the Philox words of counter
    ``(counter << 20 | s << 8 | block, stream, index)``.
    """
    if not 1 <= k < 4096:
        raise InputRangeError(f"{k} sampled tuples is out of range; use 1..4095")
    if not 0 <= counter < 4096:
        raise InputRangeError(f"counter {counter} is out of range 0..4095")
    arr = np.array(sorted(int(c) for c in cards), dtype=np.int8)
    if len(arr) < 4:
        raise PositionParseError(f"a deal needs 4 undealt cards; got {len(arr)}")
    out = np.empty((k, 4), np.int8)
    seed, index = int(seed), int(index)
    ok = _sample_tuples(arr, k, counter, stream, np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32),
                        np.uint32(index & 0xFFFFFFFF), np.uint32(index >> 32), out)
    if not ok:
        raise RuntimeError(f"sampled tuples ran out of random blocks (seed {seed}, deal {index})")
    return out


@nb.njit(cache=True)
def _all_tuples(cards, out):
    n = cards.shape[0]
    t = 0
    for a in range(n):
        for b in range(n):
            if b == a:
                continue
            for c in range(n):
                if c == a or c == b:
                    continue
                for d in range(n):
                    if d == a or d == b or d == c:
                        continue
                    out[t, 0] = cards[a]
                    out[t, 1] = cards[b]
                    out[t, 2] = cards[c]
                    out[t, 3] = cards[d]
                    t += 1


def all_tuples(cards) -> np.ndarray:
    """``int8[n(n-1)(n-2)(n-3), 4]``: every ordered 4-tuple of the set ``cards`` (sorted first)."""
    arr = np.array(sorted(int(c) for c in cards), dtype=np.int8)
    n = len(arr)
    out = np.empty((n * (n - 1) * (n - 2) * (n - 3), 4), np.int8)
    _all_tuples(arr, out)
    return out


# ----------------------------------------------------------------------------------------------
# The model artifact.


class Model:
    """A fitted W: the stage networks as arrays (see the module docstring) and how they were made.

    W1 float64[13, F, HID], b1 float64[13, HID], w2 float64[13, HID], b2 float64[13],
    mu, sd float64[13, F] (feature scaling); row k is stage k (k deals to come), rows 0 and 1 unused.
    """

    def __init__(self, name: str, W1, b1, w2, b2, mu, sd, meta: str = "", look8: int = 0, look12: int = 0,
                 tele12: bool = False):
        self.name = name
        self.look8 = int(look8)  # W at 8 undealt: 0 = the best Q̂_2, K = the look-ahead over K orders
        self.look12 = int(look12)  # feature 30 of stage 3: 0 = none (or the probe), K = the look-ahead feature
        self.tele12 = bool(tele12)  # Q̂_3 is the look-ahead feature itself (stage 3's network unused)
        self.W1, self.b1, self.w2, self.b2, self.mu, self.sd = (np.ascontiguousarray(a, dtype=np.float64)
                                                               for a in (W1, b1, w2, b2, mu, sd))
        self.meta = meta

    @property
    def arrays(self):
        return self.W1, self.b1, self.w2, self.b2, self.mu, self.sd

    def key(self, seed: int, index: int) -> np.ndarray:
        """The ``lk`` argument of ``w_of`` for deal ``index`` of ``seed`` (``look_key``)."""
        return look_key(self.look8, seed, index, self.look12, self.tele12)

    def save(self, path) -> None:
        np.savez_compressed(path, W1=self.W1, b1=self.b1, w2=self.w2, b2=self.b2, mu=self.mu, sd=self.sd,
                            meta=np.array(self.meta), look8=np.array(self.look8), look12=np.array(self.look12),
                            tele12=np.array(int(self.tele12)))

    @staticmethod
    def load(path, name: str) -> "Model":
        with np.load(path) as z:
            look8 = int(z["look8"]) if "look8" in z.files else 0
            look12 = int(z["look12"]) if "look12" in z.files else 0
            tele12 = bool(int(z["tele12"])) if "tele12" in z.files else False
            return Model(name, z["W1"], z["b1"], z["w2"], z["b2"], z["mu"], z["sd"], str(z["meta"]), look8, look12,
                         tele12)

    @staticmethod
    def zero() -> "Model":
        """Placeholder arrays for W_ZERO and W_EXACT (never read)."""
        f, hid = N_FEATURES, 1
        return Model("zero", np.zeros((13, f, hid)), np.zeros((13, hid)), np.zeros((13, hid)), np.zeros(13),
                     np.zeros((13, f)), np.ones((13, f)))


def model_file(name: str, strict: bool = False) -> str:
    """The file name of a model: ``<name>.npz`` (standard, and reverse, which plays as standard with the
    ranks relabelled: every feature reads strengths, not ranks), ``<name>-strict.npz`` for strict."""
    return f"{name}-strict.npz" if strict else f"{name}.npz"


def model_path(name: str, strict: bool = False):
    """The file of a shipped model (``engine_rs_free/models/``)."""
    return resources.files("engine_rs_free").joinpath("models", model_file(name, strict))


@lru_cache(maxsize=8)
def load_model(name: str = DEFAULT_MODEL, strict: bool = False) -> Model:
    """A shipped model by name (the strict one with ``strict``); UnknownModelError naming the file and the
    refit command when it is missing."""
    path = model_path(name, strict)
    if not path.is_file():
        variant = " --variant strict" if strict else ""
        raise UnknownModelError(f"no value model {name!r}{' for strict' if strict else ''} (looked for {path}); "
                         f"fit one with 'python -m engine_rs_free.fit --name {name}{variant}'")
    return Model.load(path, name)
