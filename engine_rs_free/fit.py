"""Fit the value model W (``value.Model``) by fitted value iteration, backwards over the deals.

    python -m engine_rs_free.fit --name w1 [--variant standard] [--games 30000] [--tuples 32] [--seed 19]
                                 [--features 30] [--look8 0] [--look12 0] [--tele12] [--lines 0]
    python -m engine_rs_free.fit --name NAME --ensemble M1,M2,...   (no fit: the ensemble of shipped models)

(the shipped ``w1.npz`` and ``w1-strict.npz`` were made so, ``w3.npz`` with ``--name w3 --look8 32``,
``w4.npz`` with ``--name w4 --look8 32 --look12 32 --features 31``; w9, the same with ``--tele12``, was
measured and not shipped: docs/bracket.md; the refit command of a model is in its ``meta``).

Seed-reproducible: the same arguments give the same file, bit for bit, on the
same NumPy/Numba (the states come from seeded deals and a seeded behaviour
policy, the targets from seeded tuples, the fit from a seeded generator).

1. States. ``--games`` deals of seed ``--seed`` (deal indices from 10**9 on, far
   from the measured ranges) are played by a behaviour policy: at each deal it
   takes, among the positions reachable by moves, the best by discards, then
   Aces at the bottom, then empty piles (the ``lookahead`` policy's value), or
   with probability ``--explore`` a uniformly random one (with ``--from`` a model,
   the best by that model's value instead). The position about to deal is kept
   for each of the 12 deals: the states of stage k (k deals to come). With ``--lines N`` the states
   also hold, for each deal of N (seed ``--seed``, indices from 2 * 10**9) that the clairvoyant solver
   wins under ``sensible+leftmost``, the 12 positions its won line deals from (``line_states``):
   positions a clairvoyant line goes through and the behaviour policy rarely does.
2. Targets, stage k = 2..12 in order: the mean over ``--tuples`` sampled next deals of
   W_{k-1}(position after the deal), where W_1 is exact (``expectimax.v1``) and
   W_{k-1} for k > 2 is the best Q̂_{k-1} over the positions reachable by moves:
   the network just fitted. So Q̂_k approximates E[max Q̂_{k-1}], the Bellman
   equation of honest play. With ``--look8 K`` W_2 is instead the look-ahead over K
   keyed orders on the exact V_1 (``value.look8``; each state's orders keyed by its
   number and stage), so stage 3 is fitted to that W; the network of stage 2 is
   still fitted (W no longer reads it; ``adp:look=0,exact=4`` does). With ``--look12 K`` (and
   ``--features 31``) the network of stage 3 also reads the look-ahead feature
   (``value.look12_feature``: the mean over K keyed deals of the stage-2 network's W), and its targets
   take the feature's own tuples, as the bound's penalty does on a real deal; the later stages are
   fitted to that W. With ``--tele12`` as well, stage 3 has no network: Q̂_3 is the look-ahead feature
   itself (``Model.tele12``), so W at 12 undealt telescopes up to the stage-2 network's error, and the
   later stages are fitted to that W.
3. The network of stage k: the features of ``value.features`` (standardised),
   one tanh hidden layer, a logistic output, fitted to the targets by Adam on the
   cross-entropy with soft targets. 10 % of the states are held out; the fit
   prints their mean squared error against that of a constant.

The same model serves every variant it was fitted for; the shipped one
(``models/w1.npz``) was fitted on ``standard``, and ``reverse`` plays as standard
with the ranks relabelled (RULES.md; the features read strengths), so it serves
both; ``strict`` has its own (``models/w1-strict.npz``, ``--variant strict``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

from .deals import deal_batch
from .errors import AcesUpError, InputRangeError
from .infostate import (POOL_ROWS, ROW_TMP, TOP, bit, copy_row, deal4, mask_cards, new_pool, on_table, reach, resolve,
                        rule_tables)
from .rules import rules_by_name
from .value import MAX_LOOK, N_FEATURES, STREAM_PENALTY, W_MODEL, Model, features_full, q_model, sample_tuples, w_of

HIDDEN = 32
STATE_H = 16  # cards a pile can hold in a game from a fresh deal: 13 at most
GEN_BASE = ROW_TMP + 16  # behaviour policy's reach list: rows of the W_RW region are free during generation


@nb.njit(cache=True)
def _heuristic(P, H, r, st):
    """The lookahead policy's position value: discards first, then Aces at the bottom, then empty piles."""
    aces = 0
    empties = 0
    for p in range(4):
        if H[r, p] == 0:
            empties += 1
        elif st[P[r, p, 0]] == TOP:
            aces += 1
    return -on_table(H, r) * 100 + aces * 10 + empties


@nb.njit(cache=True)
def _generate(decks, explore, seed, use_model, st, su, fill, W1, b1, w2, b2, mu, sd, P, H, KM, KF, fx, lk,
              out_p, out_h, out_und):
    """Play every deck with the behaviour policy; keep the position about to deal of every deal."""
    np.random.seed(seed)
    base = 64  # the R4 region: free here (no exact values are worked out during generation)
    for g in range(decks.shape[0]):
        r = POOL_ROWS - 1
        for p in range(4):
            H[r, p] = 1
            P[r, p, 0] = decks[g, p]
        resolve(P, H, r, st, su)
        und = np.uint64(0)
        for i in range(4, 52):
            und |= bit(decks[g, i])
        for d in range(12):
            copy_row(P, H, r, base)
            m = reach(P, H, KM, KF, base, st, su, fill)
            if m < 0:
                m = 1
            pick = 0
            if np.random.random() < explore:
                pick = np.random.randint(0, m)
            else:
                best = -1e18
                for i in range(m):
                    if use_model and d < 11:
                        v = q_model(P, H, KM, KF, base + i, und, 12 - d, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
                    else:
                        v = _heuristic(P, H, base + i, st)
                    if v > best:
                        best = v
                        pick = i
            u = base + pick
            for p in range(4):
                out_h[g, d, p] = H[u, p]
                for i in range(H[u, p]):
                    out_p[g, d, p, i] = P[u, p, i]
            out_und[g, d] = und
            copy_row(P, H, u, r)
            c0 = decks[g, 4 + 4 * d]
            c1 = decks[g, 5 + 4 * d]
            c2 = decks[g, 6 + 4 * d]
            c3 = decks[g, 7 + 4 * d]
            deal4(P, H, r, c0, c1, c2, c3, st, su)
            und &= ~(bit(c0) | bit(c1) | bit(c2) | bit(c3))


@nb.njit(cache=True)
def _targets(sp, sh, sund, tuples, st, su, fill, W1, b1, w2, b2, mu, sd, P, H, KM, KF, fx, lk, y, X):
    """y[j] = mean W after the sampled deals tuples[j] of state j; X[j] = its features.

    ``lk``: the look-ahead key (value.look_key); its deal index words are set to j here, so the
    look-ahead orders (and the look-ahead feature's tuples) of each state are its own."""
    r = POOL_ROWS - 1
    child = POOL_ROWS - 2
    for j in range(sp.shape[0]):
        for p in range(4):
            H[r, p] = sh[j, p]
            for i in range(sh[j, p]):
                P[r, p, i] = sp[j, p, i]
        lk[3] = np.uint32(j)
        if not features_full(P, H, KM, KF, r, sund[j], st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk):
            y[j] = -1.0
            return
        for f in range(X.shape[1]):
            X[j, f] = fx[f]
        tot = 0.0
        for t in range(tuples.shape[1]):
            copy_row(P, H, r, child)
            c0, c1, c2, c3 = tuples[j, t, 0], tuples[j, t, 1], tuples[j, t, 2], tuples[j, t, 3]
            deal4(P, H, child, c0, c1, c2, c3, st, su)
            after = sund[j] & ~(bit(c0) | bit(c1) | bit(c2) | bit(c3))
            w = w_of(P, H, KM, KF, child, after, W_MODEL, st, su, fill, W1, b1, w2, b2, mu, sd, fx, lk)
            if w < 0:
                y[j] = -1.0
                return
            tot += w
        y[j] = tot / tuples.shape[1]


def line_states(variant: str, seed: int, deals: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions about to deal on the won lines of the clairvoyant solver (``variant+sensible+leftmost``)
    over ``deals`` deals of ``seed`` from index 2 * 10**9: int8[N, 12, 4, STATE_H] piles, int8[N, 12, 4]
    heights, uint64[N, 12] undealt masks, one row per won line, in the layout of the behaviour states.

    A clairvoyant line goes through them and the behaviour policy rarely does (docs/bracket.md,
    "On-policy states": w4 under-rates them; a fit with them, w8, still left the bound where it was).
    """
    from .game import replay_states
    from .solver import solve_batch

    rules = rules_by_name(variant)
    decks = deal_batch(seed, 2 * 10**9, deals)
    res = solve_batch(decks, rules_by_name(f"{variant}+sensible+leftmost"), want_lines=True)
    won = [(deck, line) for deck, w, line in zip(decks, res.won, res.lines) if w]
    sp = np.zeros((len(won), 12, 4, STATE_H), np.int8)
    sh = np.zeros((len(won), 12, 4), np.int8)
    sund = np.zeros((len(won), 12), np.uint64)
    for g, (deck, line) in enumerate(won):
        for s in replay_states([int(c) for c in deck], line, rules):
            if s.stock and len(s.stock) % 4 == 0:
                d = 12 - len(s.stock) // 4  # the last state with this stock is the position about to deal
                for p, pile in enumerate(s.piles):
                    sh[g, d, p] = len(pile)
                    sp[g, d, p, :len(pile)] = pile
                sund[g, d] = np.uint64(sum(1 << int(c) for c in s.stock))
    return sp, sh, sund


def _sample_state_tuples(und: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """int8[N, m, 4]: m ordered 4-tuples drawn uniformly from each state's undealt cards."""
    out = np.empty((len(und), m, 4), np.int8)
    bits = ((und[:, None] >> np.arange(52, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)
    for j in range(len(und)):
        cards = np.flatnonzero(bits[j]).astype(np.int8)
        keys = rng.random((m, len(cards)))
        out[j] = cards[np.argsort(keys, axis=1)[:, :4]]
    return out


def fit_network(X, y, *, hidden: int, rng: np.random.Generator, epochs: int = 60, batch: int = 512,
                lr: float = 3e-3):
    """One tanh hidden layer, logistic output, Adam on the cross-entropy with soft targets y in [0, 1].

    Returns (W1 [F, hidden], b1, w2, b2, mu, sd)."""
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd < 1e-9] = 1.0
    Z = (X - mu) / sd
    n, f = Z.shape
    W1 = rng.normal(0, 1 / np.sqrt(f), (f, hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(0, 1 / np.sqrt(hidden), hidden)
    p0 = float(np.clip(y.mean(), 1e-4, 1 - 1e-4))
    b2 = np.log(p0 / (1 - p0))
    params = [W1, b1, w2, np.array([b2])]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    step = 0
    for _ in range(epochs):
        order = rng.permutation(n)
        for s in range(0, n, batch):
            idx = order[s:s + batch]
            zb, yb = Z[idx], y[idx]
            a = zb @ params[0] + params[1]
            hdn = np.tanh(a)
            out = 1 / (1 + np.exp(-(hdn @ params[2] + params[3][0])))
            g_out = (out - yb) / len(idx)  # d(cross-entropy)/d(logit)
            g_w2 = hdn.T @ g_out
            g_b2 = np.array([g_out.sum()])
            g_h = np.outer(g_out, params[2]) * (1 - hdn ** 2)
            g_W1 = zb.T @ g_h
            g_b1 = g_h.sum(axis=0)
            step += 1
            for p, g, a1, a2 in zip(params, (g_W1, g_b1, g_w2, g_b2), m1, m2):
                a1 *= 0.9
                a1 += 0.1 * g
                a2 *= 0.999
                a2 += 0.001 * g * g
                p -= lr * (a1 / (1 - 0.9 ** step)) / (np.sqrt(a2 / (1 - 0.999 ** step)) + 1e-8)
    return params[0], params[1], params[2], float(params[3][0]), mu, sd


def predict(net, X):
    W1, b1, w2, b2, mu, sd = net
    return 1 / (1 + np.exp(-(np.tanh(((X - mu) / sd) @ W1 + b1) @ w2 + b2)))


def fit(variant: str, *, games: int, tuples: int, seed: int, explore: float, hidden: int = HIDDEN,
        start_model: Model | None = None, name: str = "w1", n_features: int = 30, look8: int = 0,
        look12: int = 0, tele12: bool = False, lines: int = 0, log=print) -> Model:
    """Fit a model (module docstring); ``log`` gets one progress line per stage."""
    if lines < 0:
        raise InputRangeError(f"--lines {lines} is negative; give the number of deals to solve (0: none)")
    rules = rules_by_name(variant)
    st, su, fill = rule_tables(rules)
    rng = np.random.default_rng(seed)
    decks = deal_batch(seed, 10**9, games)
    P, H, KM, KF = new_pool(4)
    fx = np.zeros(64)
    sp = np.zeros((games, 12, 4, STATE_H), np.int8)
    sh = np.zeros((games, 12, 4), np.int8)
    sund = np.zeros((games, 12), np.uint64)
    behaviour = start_model if start_model is not None else Model.zero()
    t0 = time.time()
    _generate(decks, explore, seed, start_model is not None, st, su, fill, *behaviour.arrays, P, H, KM, KF, fx,
              behaviour.key(seed, 0), sp, sh, sund)
    log(f"states: {games} games x 12 deals in {time.time() - t0:.0f}s")
    is_line = np.zeros(games, bool)
    if lines:
        t0 = time.time()
        lp, lh, lund = line_states(variant, seed, lines)
        # one order for both kinds, so the held-out tenth holds both (a generator of its own: with
        # --lines 0 every draw below is the one w1..w4 were fitted with)
        order = np.random.default_rng(seed + 1).permutation(games + len(lund))
        sp = np.concatenate([sp, lp])[order]
        sh = np.concatenate([sh, lh])[order]
        sund = np.concatenate([sund, lund])[order]
        is_line = np.concatenate([is_line, np.ones(len(lund), bool)])[order]
        log(f"states: {len(lund)} won clairvoyant lines of {lines} deals x 12 deals in {time.time() - t0:.0f}s")
        games = len(sund)
    if not 1 <= n_features <= N_FEATURES:
        raise InputRangeError(f"--features {n_features} is out of range; use 30 (w1) or {N_FEATURES} (with the probe)")
    if look12 and (n_features != N_FEATURES or look12 != tuples):
        raise InputRangeError(f"--look12 {look12} needs --features {N_FEATURES} (feature 30 is the look-ahead "
                              f"feature) and --tuples {look12} (stage 3's targets share its tuples)")
    if tele12 and not look12:
        raise InputRangeError("--tele12 makes Q̂_3 the look-ahead feature: it needs --look12 K (and --features "
                              f"{N_FEATURES} --tuples K)")
    model = Model(name, np.zeros((13, n_features, hidden)), np.zeros((13, hidden)), np.zeros((13, hidden)),
                  np.zeros(13), np.zeros((13, n_features)), np.ones((13, n_features)), look8=look8, look12=look12,
                  tele12=tele12)
    lk = model.key(seed, 0)
    n_hold = max(games // 10, 1)
    for k in range(2, 13):
        d = 12 - k  # the deal index of stage k
        t0 = time.time()
        tup = _sample_state_tuples(sund[:, d], tuples, rng)  # drawn in every case: later stages follow in rng
        if tele12 and k == 3:
            log("stage  3: no network: Q̂_3 is the look-ahead feature (--tele12)")
            continue
        if look12 and k == 3:
            # the targets of stage 3 take the look-ahead feature's own tuples (value.look12_feature: the
            # state's number and stage as the deal index, the stock position 48 - 4k as the counter), as
            # the bound's penalty does on a real deal
            tup = np.stack([sample_tuples(mask_cards(m), look12, seed=seed, index=j | (k << 32), counter=48 - 4 * k,
                                          stream=STREAM_PENALTY) for j, m in enumerate(sund[:, d])])
        y = np.zeros(games)
        X = np.zeros((games, n_features))
        lk[4] = k
        _targets(sp[:, d], sh[:, d].astype(np.int64), sund[:, d], tup, st, su, fill, *model.arrays, P, H, KM, KF,
                 fx, lk, y, X)
        if y.min() < 0:
            raise RuntimeError(f"stage {k}: a reach list overflowed while making the targets")
        net = fit_network(X[n_hold:], y[n_hold:], hidden=hidden, rng=rng)
        model.W1[k], model.b1[k], model.w2[k], model.b2[k], model.mu[k], model.sd[k] = net
        pred = predict(net, X[:n_hold])
        mse = float(np.mean((pred - y[:n_hold]) ** 2))
        base = float(np.mean((y[:n_hold] - y[n_hold:].mean()) ** 2))
        lines_note = ""
        if lines:
            held = is_line[:n_hold]
            lines_note = (f"; on the held-out line states {np.sqrt(np.mean((pred[held] - y[:n_hold][held]) ** 2)):.4f} "
                          f"rms, the others {np.sqrt(np.mean((pred[~held] - y[:n_hold][~held]) ** 2)):.4f}")
        log(f"stage {k:2d}: mean target {y.mean():.4f}, held-out MSE {mse:.3e} vs constant {base:.3e} "
            f"(R2 {1 - mse / base if base > 0 else float('nan'):.3f}){lines_note}, {time.time() - t0:.0f}s")
    return model


def ensemble(models: list[Model], name: str) -> Model:
    """One model whose network at each stage k >= 3 is the mean of ``models``' logits (the logistic of the
    mean of their log-odds), and at stage 2 the first model's network alone.

    Stage 2 stays one model's because a look-ahead feature at 12 undealt (``look12``) reads it. The models
    must agree on the look-ahead at 8 undealt (``look8``), and those that read feature 30 on what it is
    (``look12``). The members' feature scaling is folded into their first layers, and their hidden units
    sit side by side.
    """
    if not models:
        raise InputRangeError("an ensemble needs at least one model")
    tele = [m.name for m in models if m.tele12]
    if tele:
        raise InputRangeError(f"an ensemble averages stage networks, and a telescoping model ({', '.join(tele)}) "
                              "has none at stage 3; leave it out")
    # feature 30 means what look12 says (the look-ahead feature, or the probe when 0), so the members that
    # read it must agree on it; a member with 30 features reads none, whatever its look12
    look12s = {m.look12 for m in models if m.W1.shape[1] > 30}
    if len({m.look8 for m in models}) > 1 or len(look12s) > 1:
        raise InputRangeError(f"the models of an ensemble must share look8, and look12 where they read feature 30; "
                              f"got (look8, look12) {sorted((m.look8, m.look12) for m in models)}")
    look8, look12 = models[0].look8, max(look12s, default=0)
    nf = max(m.W1.shape[1] for m in models)
    weight = 1.0 / len(models)
    w1s, b1s = [], []
    for m in models:
        f = m.W1.shape[1]
        w1 = np.zeros((13, nf, m.W1.shape[2]))
        w1[:, :f, :] = m.W1 / m.sd[:, :, None]  # (x - mu) / sd . W1 = x . (W1 / sd) - (mu / sd) . W1
        w1s.append(w1)
        b1s.append(m.b1 - np.einsum("kf,kfh->kh", m.mu / m.sd, m.W1))
    w2 = np.concatenate([weight * m.w2 for m in models], axis=1)
    b2 = weight * sum(m.b2 for m in models)
    first = models[0].W1.shape[2]
    for k in range(3):
        w2[k] = 0.0
        w2[k, :first] = models[0].w2[k]
        b2[k] = models[0].b2[k]
    return Model(name, np.concatenate(w1s, axis=2), np.concatenate(b1s, axis=1), w2, b2, np.zeros((13, nf)),
                 np.ones((13, nf)), look8=look8, look12=look12)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engine_rs_free.fit", description=__doc__.split("\n\n")[0],
                                 epilog="example: python -m engine_rs_free.fit --name w1 --games 30000")
    ap.add_argument("--name", default="w1",
                    help="model name: writes engine_rs_free/models/NAME.npz (NAME-strict.npz for strict)")
    ap.add_argument("--variant", default="standard", help="rule set the states are played under")
    ap.add_argument("--games", type=int, default=30000)
    ap.add_argument("--tuples", type=int, default=32, help="sampled next deals per target")
    ap.add_argument("--explore", type=float, default=0.3, help="chance of a random choice in the behaviour policy")
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--features", type=int, default=30,
                    help=f"features read: 30 (the shipped w1) or {N_FEATURES} (adds the clairvoyant probe)")
    ap.add_argument("--look8", type=int, default=0,
                    help=f"W at 8 undealt cards: 0 = the network of stage 2 (w1), K = the look-ahead over K keyed "
                         f"orders on the exact V_1 (w3: 32; at most {MAX_LOOK})")
    ap.add_argument("--look12", type=int, default=0,
                    help="feature 30 of stage 3: K = the look-ahead feature over K sampled deals on the stage-2 "
                         f"network (w4: 32, with --features {N_FEATURES} --tuples 32); 0 = none")
    ap.add_argument("--tele12", action="store_true",
                    help="stage 3 without a network: Q̂_3 is the look-ahead feature of --look12 itself, so W at 12 "
                         "undealt telescopes up to the stage-2 network's error (w9, not shipped: docs/bracket.md)")
    ap.add_argument("--lines", type=int, default=0,
                    help="also fit on the positions of the clairvoyant solver's won lines over this many deals "
                         "of --seed (from index 2*10**9), where clairvoyant lines go; 0 = none")
    ap.add_argument("--from", dest="start", default=None, help="behaviour: the greedy player of this model")
    ap.add_argument("--out", default=None, help="output file (default: the package's models folder)")
    ap.add_argument("--ensemble", default=None, metavar="M1,M2,...",
                    help="fit nothing: write the ensemble of these shipped models (the mean of their log-odds at "
                         "stages 3..12, the first one's network at stage 2)")
    a = ap.parse_args(argv)
    from .value import load_model, model_file

    strict = rules_by_name(a.variant).fill == 1
    out = Path(a.out) if a.out else Path(__file__).parent / "models" / model_file(a.name, strict)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if a.ensemble:
            members = [m.strip() for m in a.ensemble.split(",") if m.strip()]
            model = ensemble([load_model(m, strict) for m in members], a.name)
            model.meta = (f"python -m engine_rs_free.fit --name {a.name} --variant {a.variant} "
                          f"--ensemble {','.join(members)}")
        else:
            start = load_model(a.start, strict) if a.start else None
            model = fit(a.variant, games=a.games, tuples=a.tuples, seed=a.seed, explore=a.explore, hidden=a.hidden,
                        start_model=start, name=a.name, n_features=a.features, look8=a.look8, look12=a.look12,
                        tele12=a.tele12, lines=a.lines, log=lambda s: print(s, flush=True))
            model.meta = (f"python -m engine_rs_free.fit --name {a.name} --variant {a.variant} --games {a.games} "
                          f"--tuples {a.tuples} --explore {a.explore} --hidden {a.hidden} --seed {a.seed} "
                          f"--features {a.features}"
                          + (f" --look8 {a.look8}" if a.look8 else "")
                          + (f" --look12 {a.look12}" if a.look12 else "")
                          + (" --tele12" if a.tele12 else "")
                          + (f" --lines {a.lines}" if a.lines else "")
                          + (f" --from {a.start}" if a.start else ""))
    except AcesUpError as exc:
        print(f"python -m engine_rs_free.fit: {exc}", file=sys.stderr)
        return 2
    model.save(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
