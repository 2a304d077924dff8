"""Players: one name grammar, one registry, one result.

A *player* is anything that plays a batch of deals: a policy of
``policies.py`` (``greedy``, ``human:sacrifice=3``), the honest sampling
player of ``pimc.py`` (``pimc:samples=8``), the exact clairvoyant solver of
``solver/`` (``solver``, ``solver:sensible+leftmost``), or one end of the
honest bracket (``adp`` of ``adp.py``, ``bound`` of ``bound.py``; docs/bracket.md).
Every player is named in one grammar::

    kind[:item,item,...]     item = key=value, or a bare value for a kind's positional parameter

Parameters are declared as data (``Param``: whole numbers in a range, a set
of options joined by ``+``, or one word of a list); ``parse_player`` fills in
the defaults and returns a ``PlayerSpec`` whose ``name`` is the canonical
spelling, the key the pipeline stores in its ``policy`` column. Canonical
names spell out every parameter in declared order (``human`` ->
``human:sacrifice=3``), except where a kind says otherwise (pimc leaves out
``nodes=0`` and, without a guide, the margin; the solver writes its
restrictions bare). ``parse_player(spec.name) == spec`` always.

``play(decks, rules, player, seed=…, indices=…)`` plays a batch with any
player and returns a ``PlayResult``. Each ``PlayerKind`` entry of
``REGISTRY`` says what its kind is (parameters, its ``role``: honest,
clairvoyant or bound, which optional columns its rows carry, a short display
name and a one-line description, all data) and which function plays it; the
function is imported only when the player plays, so importing this module,
parsing names and describing players compiles nothing and imports no Numba
module. Adding a player is adding one entry.

>>> parse_player("Human").name
'human:sacrifice=3'
>>> parse_player("solver:leftmost+sensible").name
'solver:sensible+leftmost'
>>> display_name("pimc:samples=16")
'PIMC, 16 samples'
>>> parse_player("bound").name
'bound:w=w1,samples=32,exact=4'
>>> parse_player("ADP: samples=4, exact=4").name
'adp:w=w1,look=1,samples=4,exact=4,psamples=32,pexact=4'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from .errors import AcesUpError
from .rules import FILL_ANY, Rules, rules_by_name


class UnknownPlayerError(AcesUpError):
    """A player name, parameter or value that is not known; the message names it and the known forms."""


UnknownPolicyError = UnknownPlayerError  # the name policies.py and pimc.py have always raised


# -- parameters as data ---------------------------------------------------------------------

INT, OPTIONS, CHOICE = "int", "options", "choice"


@dataclass(frozen=True)
class Param:
    """One parameter of a player kind.

    kind:       INT (whole number in lo..hi), OPTIONS (distinct words of ``choices``
                joined by ``+`` in any order, written in declared order; ``none``
                or empty for no option) or CHOICE (one word of ``choices``)
    default:    the value when the name does not give one (int, tuple of options, or a word)
    positional: written bare (``solver:sensible+leftmost``): at most one per kind
    """

    name: str
    kind: str
    default: object
    lo: int = 0
    hi: int = 0
    choices: tuple[str, ...] = ()
    positional: bool = False

    def parse(self, text: str, raw: str, kind: str) -> object:
        """The value of ``text`` (stripped, lower case); UnknownPlayerError naming ``raw`` if it is not one."""
        if self.kind == INT:
            if not text.lstrip("+").isdigit():
                raise UnknownPlayerError(
                    f"parameter {self.name!r} in player {raw!r} needs a whole number, e.g. "
                    f"'{kind}:{self.name}={self.default}'")
            v = int(text)
            if not self.lo <= v <= self.hi:
                raise UnknownPlayerError(
                    f"parameter {self.name}={v} in player {raw!r} is out of range; use {self.lo}..{self.hi}")
            return v
        if self.kind == CHOICE:
            if text not in self.choices:
                raise UnknownPlayerError(
                    f"{self.name}={text!r} in player {raw!r} is not one of {', '.join(self.choices)}")
            return text
        opts = [] if text in ("", "none") else [o.strip() for o in text.split("+")]
        if any(o not in self.choices for o in opts) or len(set(opts)) != len(opts):
            raise UnknownPlayerError(
                f"{self.name}={text!r} in player {raw!r} is not 'none' or distinct options of "
                f"{', '.join(self.choices)} joined by '+' (e.g. {'+'.join(self.choices[:2])})")
        return tuple(o for o in self.choices if o in opts)

    def text(self, value: object) -> str:
        """How a value is written in a canonical name."""
        if self.kind == OPTIONS:
            return "+".join(value) if value else "none"  # type: ignore[arg-type]
        return str(value)

    def help(self) -> str:
        if self.kind == INT:
            return f"{self.name}={self.lo}..{self.hi} (default {self.default})"
        if self.kind == CHOICE:
            return f"{self.name}={'|'.join(self.choices)} (default {self.default})"
        return f"{self.name}={'+'.join(self.choices)} (default {self.text(self.default)})"


@dataclass(frozen=True)
class PlayerSpec:
    """A parsed player: its kind and every parameter (defaults filled in), in declared order.

    Two specs are equal exactly when they name the same player; ``name`` is the canonical spelling.
    """

    kind: str
    params: tuple[tuple[str, object], ...] = ()

    @property
    def entry(self) -> "PlayerKind":
        return REGISTRY[self.kind]

    @property
    def name(self) -> str:
        """The canonical spelling (see the module docstring)."""
        return self.entry.canonical(self)

    def param(self, key: str):
        """The value of one parameter (defaults filled in)."""
        return dict(self.params)[key]

    @property
    def role(self) -> str:
        """HONEST, CLAIRVOYANT or BOUND (see PlayerKind)."""
        return self.entry.role

    @property
    def clairvoyant(self) -> bool:
        """True for a player that reads the order of the stock (the solver)."""
        return self.entry.role == CLAIRVOYANT

    def __str__(self) -> str:
        return self.name


# -- the result ------------------------------------------------------------------------------


@dataclass
class PlayResult:
    """One row per deck, for every player (names as in pipeline.schema).

    score:     int8[N]   discards at the end (the solver: its best score; a lower bound if gave_up)
    won:       bool[N]   score == 48
    moves:     int16[N]  cards moved into empty piles (the solver: in its line)
    decisions: int16[N]  points of the line with more than one choice (bound: -1, not counted)
    nodes:     int64[N]  positions searched (solver, bound), else None
    status:    list[str] 'solved' | 'gave_up' (solver), else None
    line:      list[str | None]  the game line of each deck, or None for none at all
    value:     float64[N] the per-deal penalised value (adp, pimc: 1{won} - z; bound: its upper-bound
                         value; docs/bracket.md), else None

    nodes, status and value are the optional columns (OPTIONAL_COLUMNS): a kind's rows
    carry exactly those its entry declares (``PlayerKind.carries``).
    """

    score: np.ndarray
    won: np.ndarray
    moves: np.ndarray
    decisions: np.ndarray
    nodes: np.ndarray | None = None
    status: list[str] | None = None
    line: list[str | None] | None = None
    value: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.score)

    def columns(self) -> dict[str, object]:
        """The result columns as a dict (``score``, ``won``, …, ``line``, ``value``) for the Parquet writer."""
        return {"score": self.score, "won": self.won, "moves": self.moves, "decisions": self.decisions,
                "nodes": self.nodes, "status": self.status, "line": self.line, "value": self.value}


# -- the registry ----------------------------------------------------------------------------

HONEST, CLAIRVOYANT, BOUND = "honest", "clairvoyant", "bound"
ROLES = (HONEST, CLAIRVOYANT, BOUND)
"""What a kind's rows are: an honest player's games (it never reads the stock order), a
clairvoyant player's (it does: the solver), or an upper bound's per-deal values (a penalised
clairvoyant search whose rows are no player's games: the bracket's upper end)."""

OPTIONAL_COLUMNS = ("nodes", "status", "value")
"""The result columns only some kinds fill (pipeline.schema); ``line`` is optional for all."""


def _all_params(spec: PlayerSpec) -> str:
    entry = spec.entry
    if not spec.params:
        return spec.kind
    return spec.kind + ":" + ",".join(f"{k}={p.text(v)}" for p, (k, v) in zip(entry.params, spec.params))


@dataclass(frozen=True)
class PlayerKind:
    """One entry of the registry: what a player kind is and which function plays it.

    play:        ``"module:function"`` of a function ``f(decks, rules, spec, *, seed, indices,
                 want_lines, node_limit) -> PlayResult`` (imported when first called)
    role:        HONEST, CLAIRVOYANT (reads the stock order; its won rows carry their line) or
                 BOUND (its rows are upper-bound values, no player's games); the SQL macro
                 ``player_kind`` gives it (queries/catalog.py)
    carries:     the OPTIONAL_COLUMNS its rows fill (every row; the others are null), which
                 pipeline.verify checks
    slow:        costs far more per deal than a plain policy (planned first, smaller batches)
    rules_problem: ``f(rules) -> str``, why the kind cannot play a rule set ('' when it can; None:
                 it plays every rule set); the run spec refuses such a pair up front
    summary:     one line on what the player does, shown in the report
    display:     ``f(spec) -> str``, a short name people can read ("PIMC, 8 samples")
    describe:    ``f(spec) -> str``, the summary of one named player (parameters spelled out)
    canonical:   ``f(spec) -> str``, the canonical name (default: every parameter in order)
    """

    kind: str
    play: str
    params: tuple[Param, ...] = ()
    role: str = HONEST
    carries: tuple[str, ...] = ()
    slow: bool = False
    summary: str = ""
    display: Callable[[PlayerSpec], str] = field(default=lambda spec: spec.kind)
    describe: Callable[[PlayerSpec], str] | None = None
    canonical: Callable[[PlayerSpec], str] = _all_params
    finish: Callable[[dict[str, object]], dict[str, object]] | None = None  # normalise parsed values
    rules_problem: Callable[[Rules], str] | None = None  # why the kind cannot play a rule set ('' if it can)

    @property
    def clairvoyant(self) -> bool:
        return self.role == CLAIRVOYANT

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def play_fn(self) -> Callable[..., PlayResult]:
        module, _, fn = self.play.partition(":")
        return getattr(importlib.import_module(module), fn)

    def help(self) -> str:
        """The kind with its parameters, for error messages and ``--help``."""
        if not self.params:
            return self.kind
        if len(self.params) == 1 and self.params[0].positional:
            return f"{self.kind}[:{'+'.join(self.params[0].choices)}]"
        return self.kind + ":" + ",".join(p.help() for p in self.params)

    def description(self, spec: PlayerSpec) -> str:
        return self.describe(spec) if self.describe else self.summary


REGISTRY: dict[str, PlayerKind] = {}


def register(entry: PlayerKind) -> PlayerKind:
    """Add a kind to the registry (its name must be new)."""
    if entry.kind in REGISTRY:
        raise ValueError(f"player kind {entry.kind!r} is registered twice")
    if sum(p.positional for p in entry.params) > 1:
        raise ValueError(f"player kind {entry.kind!r} has more than one positional parameter")
    if entry.role not in ROLES:
        raise ValueError(f"player kind {entry.kind!r} has role {entry.role!r}; roles: {', '.join(ROLES)}")
    if not set(entry.carries) <= set(OPTIONAL_COLUMNS):
        raise ValueError(f"player kind {entry.kind!r} carries {entry.carries!r}; optional columns: "
                         f"{', '.join(OPTIONAL_COLUMNS)}")
    REGISTRY[entry.kind] = entry
    return entry


def known_players_text() -> str:
    return ", ".join(e.help() for e in REGISTRY.values())


def parse_player(name: str | PlayerSpec, *, kinds: tuple[str, ...] | None = None,
                 noun: str = "player") -> PlayerSpec:
    """Parse a player's name (see the module docstring) into a PlayerSpec with every parameter filled in.

    ``kinds`` limits the kinds accepted, which the error messages call ``noun``s
    (``policies.parse_policy`` accepts the policies only). Raises
    UnknownPlayerError naming the input, what is wrong and the known forms.
    """
    if isinstance(name, PlayerSpec):
        if kinds is not None and name.kind not in kinds:
            raise UnknownPlayerError(f"{name.name!r} is not a {noun}; {noun} kinds: {', '.join(kinds)}")
        return name
    raw = name
    text = str(name).strip().lower()
    kind, colon, rest = (part.strip() for part in text.partition(":"))
    allowed = REGISTRY if kinds is None else {k: REGISTRY[k] for k in kinds}
    if kind not in allowed:
        known = ", ".join(e.help() for e in allowed.values())
        plural = "policies" if noun == "policy" else noun + "s"
        raise UnknownPlayerError(f"unknown {noun} {raw!r}; known {plural}: {known}")
    entry = allowed[kind]
    if colon and not rest:
        raise UnknownPlayerError(f"player {raw!r} ends with ':'; write '{kind}' or '{entry.help()}'")
    by_name = {p.name: p for p in entry.params}
    positional = next((p for p in entry.params if p.positional), None)
    given: dict[str, object] = {}
    for item in rest.split(",") if rest else []:
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq and positional is not None:
            key, value = positional.name, key
        elif key not in by_name:
            known = ", ".join(by_name) if by_name else "none"
            raise UnknownPlayerError(f"unknown parameter {key!r} in player {raw!r}; parameters of {kind}: {known} "
                                     f"(write {entry.help()})")
        elif not eq or not value:
            raise UnknownPlayerError(f"parameter {key!r} in player {raw!r} needs a value; write {entry.help()}")
        if key in given:
            raise UnknownPlayerError(f"parameter {key!r} is given twice in player {raw!r}")
        given[key] = by_name[key].parse(value, raw, kind)
    values = {p.name: given.get(p.name, p.default) for p in entry.params}
    if entry.finish is not None:
        values = entry.finish(values)
    return PlayerSpec(kind, tuple(values.items()))


def canonical_player(name: str | PlayerSpec) -> str:
    """The canonical spelling of a player name (stable across runs and files)."""
    return parse_player(name).name


def display_name(name: str | PlayerSpec) -> str:
    """A short name people can read (``PIMC, 8 samples``); the canonical name stays the key."""
    spec = parse_player(name)
    return spec.entry.display(spec)


def describe_player(name: str | PlayerSpec) -> str:
    """One line on what the named player does."""
    spec = parse_player(name)
    return spec.entry.description(spec)


def play(decks: np.ndarray, rules: Rules | str, player: str | PlayerSpec, *, seed: int, indices: np.ndarray,
         want_lines: bool = False, node_limit: int | None = None) -> PlayResult:
    """Play (or solve) every deck (``uint8[N, 52]``) with ``player`` under ``rules``: one row per deck.

    ``seed`` and ``indices`` (the deal index of each deck) key every random
    choice a player makes, so a row depends only on (seed, deal, variant,
    player). ``want_lines``: the game line of every row (the solver gives the
    lines of won deals always). ``node_limit`` caps the solver's search per deck.
    """
    spec = parse_player(player)
    rules = rules_by_name(rules)
    decks = np.ascontiguousarray(decks, dtype=np.uint8)
    indices = np.asarray(indices, dtype=np.int64)
    return spec.entry.play_fn()(decks, rules, spec, seed=seed, indices=indices, want_lines=want_lines,
                                node_limit=node_limit)


# -- the entries -----------------------------------------------------------------------------
# The honest policies of policies.py (played by batch.py), the honest sampling player of pimc.py and
# the clairvoyant solver. Their rules are in those modules' docstrings; the text here is for people.

POLICY_KINDS = ("nomove", "random", "greedy", "aces", "human", "lookahead")
PLAY_POLICY = "engine_rs_free.batch:play_policy"

register(PlayerKind(
    "nomove", PLAY_POLICY,
    summary="never moves a card: deals whenever it can and lets the discards happen (the floor)",
    display=lambda s: "never moves"))
register(PlayerKind(
    "random", PLAY_POLICY,
    summary="picks uniformly at random among its legal choices at every point with a choice",
    display=lambda s: "random play"))
register(PlayerKind(
    "greedy", PLAY_POLICY,
    summary="fills an empty pile with the move that discards the most cards at once; deals when none discards",
    display=lambda s: "greedy"))
register(PlayerKind(
    "aces", PLAY_POLICY,
    summary="moves an Ace into an empty pile whenever it can, otherwise plays greedy",
    display=lambda s: "Aces first"))
register(PlayerKind(
    "human", PLAY_POLICY,
    params=(Param("sacrifice", INT, 3, 0, 48),),
    summary="a published rule of thumb: an Ace into an empty pile unless that gives up too many discards",
    display=lambda s: f"rule of thumb (Ace unless {s.param('sacrifice')} discards lost)",
    describe=lambda s: (f"a published rule of thumb: moves an Ace into an empty pile unless that gives up more "
                        f"than {s.param('sacrifice')} immediate discards, otherwise plays greedy")))
register(PlayerKind(
    "lookahead", PLAY_POLICY,
    params=(Param("depth", INT, 1, 1, 4),),
    summary="tries every choice and plays on until the next deal, then takes the one that leads to the best position",
    display=lambda s: "lookahead" if s.param("depth") == 1 else f"lookahead, {s.param('depth')} moves",
    describe=lambda s: (f"tries every choice now and plays on until the next deal (the next {s.param('depth') - 1} "
                        f"moves in every way, then greedy), and takes the choice that reaches the best position "
                        f"(most discards, then Aces at the bottom of a pile, then empty piles)"
                        if s.param("depth") > 1 else
                        "tries every choice now and plays greedy until the next deal, and takes the choice that "
                        "reaches the best position (most discards, then Aces at the bottom of a pile, then empty piles)")))

# pimc (pimc.py): its defaults are chosen there by measurement; they live here as data.
PIMC_INNER_OPTIONS = ("sensible", "leftmost", "must_fill")
PIMC_GUIDES = ("none", *(k for k in POLICY_KINDS if k != "random"))
PIMC_MAX_SAMPLES = 4096
PIMC_MAX_NODES = 10**12


def pimc_default_margin(samples: int) -> int:
    """The default override margin of guided pimc: ceil(3K/8) sampled orders (docs/pimc.md)."""
    return max(1, -(-3 * samples // 8))


def _pimc_finish(values: dict[str, object]) -> dict[str, object]:
    # margin 0 stands for the default; without a guide there is nothing to override
    if values["guide"] == "none":
        values["margin"] = 0
    elif not values["margin"]:
        values["margin"] = pimc_default_margin(int(values["samples"]))  # type: ignore[arg-type]
    return values


def _pimc_canonical(spec: PlayerSpec) -> str:
    """``pimc:samples=K,inner=R,guide=G,margin=M`` (+ ``,nodes=L`` when limited); no margin without a guide.

    The margin is spelled out (default included) whenever there is a guide, so a
    change of the default never gives old results the new name.
    """
    inner = "+".join(spec.param("inner")) or "none"
    text = f"pimc:samples={spec.param('samples')},inner={inner},guide={spec.param('guide')}"
    if spec.param("guide") != "none":
        text += f",margin={spec.param('margin')}"
    return text + (f",nodes={spec.param('nodes')}" if spec.param("nodes") else "")


def _pimc_describe(spec: PlayerSpec) -> str:
    text = ("honest sampling player (perfect-information Monte Carlo): at each decision it samples "
            f"{spec.param('samples')} orders of the unseen stock, solves each sample clairvoyantly and ")
    if spec.param("guide") == "none":
        return text + "takes the choice that wins most samples"
    return text + (f"plays as the {spec.param('guide')} policy does, unless another choice wins at least "
                   f"{spec.param('margin')} samples more")


register(PlayerKind(
    "pimc", "engine_rs_free.pimc:play_pimc_batch",
    params=(Param("samples", INT, 8, 1, PIMC_MAX_SAMPLES),
            Param("inner", OPTIONS, PIMC_INNER_OPTIONS, choices=PIMC_INNER_OPTIONS),
            Param("guide", CHOICE, "lookahead", choices=PIMC_GUIDES),
            Param("margin", INT, 0, 1, PIMC_MAX_SAMPLES),
            Param("nodes", INT, 0, 0, PIMC_MAX_NODES)),
    carries=("value",), slow=True,
    summary="honest sampling player: solves sampled orders of the unseen stock at each decision",
    display=lambda s: (f"PIMC, {s.param('samples')} samples" + ("" if s.param("guide") != "none" else ", unguided")
                       + (f", {s.param('nodes')} nodes" if s.param("nodes") else "")),
    describe=_pimc_describe, canonical=_pimc_canonical, finish=_pimc_finish))

SOLVER_RESTRICTIONS = ("sensible", "leftmost", "must_fill")
_RESTRICTION_WORDS = {"sensible": "no lone-card moves", "leftmost": "leftmost empty pile only",
                      "must_fill": "fills before dealing"}
RESTRICTION_TEXT = {
    "sensible": "never move the only card of a pile into an empty pile",
    "leftmost": "a move may only go into the lowest-numbered empty pile",
    "must_fill": "no deal while a card of a pile of two or more may be moved into an empty pile (a lone card never blocks a deal)",
}
"""What each solver restriction of RULES.md forbids, in words."""


def _solver_canonical(spec: PlayerSpec) -> str:
    r = spec.param("restrictions")
    return "solver:" + "+".join(r) if r else "solver"


def _solver_describe(spec: PlayerSpec) -> str:
    r = spec.param("restrictions")
    if not r:
        return "the exact clairvoyant solver (knows the stock order); its best score and whether it wins"
    return "the exact solver restricted to: " + "; ".join(f"{o} ({RESTRICTION_TEXT[o]})" for o in r)


def solver_rules(spec: PlayerSpec, rules: Rules) -> Rules:
    """The rule set a solver player searches: the game's rules with its restrictions switched on."""
    return rules.with_options(*spec.param("restrictions"))


register(PlayerKind(
    "solver", "engine_rs_free.solver:play_solver",
    params=(Param("restrictions", OPTIONS, (), choices=SOLVER_RESTRICTIONS, positional=True),),
    role=CLAIRVOYANT, carries=("nodes", "status"), slow=True,
    summary="the exact clairvoyant solver: the best score a player who knows the stock order can reach",
    display=lambda s: ("solver" if not s.param("restrictions") else
                       "solver, all three restrictions" if len(s.param("restrictions")) == len(SOLVER_RESTRICTIONS) else
                       "solver, " + ", ".join(_RESTRICTION_WORDS[o] for o in s.param("restrictions"))),
    describe=_solver_describe, canonical=_solver_canonical))

# The honest bracket (issue 19, docs/bracket.md): adp (adp.py), the lower end, and bound (bound.py),
# the upper end. Their defaults are chosen there by measurement; they live here as data, with the
# list of shipped value models (the package's models/ folder, read without importing value.py).
DEFAULT_MODEL = "w1"
MAX_TUPLES = 4095  # sampled 4-tuples per expectation


def bracket_rules_problem(rules: Rules) -> str:
    """Why the honest bracket's code (adp, bound) cannot play ``rules``, or '' (engine_rs_free.infostate)."""
    if rules.fill == FILL_ANY:
        return "it covers standard, strict and reverse, not easy (any card may move)"
    if rules.optional_discards:
        return "it plays forced discards only, not discards=optional"
    if rules.must_fill:
        return "must_fill is not allowed (sensible and leftmost are implied)"
    return ""


def play_problem(player: str | PlayerSpec, rules: Rules | str) -> str:
    """Why ``player`` cannot play ``rules`` ('' when it can), from its entry's ``rules_problem``."""
    entry = parse_player(player).entry
    return entry.rules_problem(rules_by_name(rules)) if entry.rules_problem else ""


def shipped_models() -> tuple[str, ...]:
    """The value models shipped in ``engine_rs_free/models/`` (``<name>.npz``; ``<name>-strict.npz``
    is the same model's strict file), sorted."""
    folder = resources.files("engine_rs_free").joinpath("models")
    return tuple(sorted({p.name[:-4] for p in folder.iterdir()
                         if p.name.endswith(".npz") and not p.name.endswith("-strict.npz")}))


MODELS = shipped_models()

register(PlayerKind(
    "adp", "engine_rs_free.adp:play_player",
    params=(Param("w", CHOICE, DEFAULT_MODEL, choices=MODELS), Param("look", INT, 1, 0, 1),
            Param("samples", INT, 16, 1, MAX_TUPLES), Param("exact", CHOICE, "8", choices=("4", "8")),
            Param("psamples", INT, 32, 1, MAX_TUPLES), Param("pexact", CHOICE, "4", choices=("0", "4", "8"))),
    carries=("value",), slow=True, rules_problem=bracket_rules_problem,
    summary="the honest bracket's lower end: before each deal, the moves whose position has the highest "
            "expected value W (a fitted model) after the next deal; exact with 8 cards or fewer undealt",
    display=lambda s: "ADP (value model)"))
register(PlayerKind(
    "bound", "engine_rs_free.bound:play_player",
    params=(Param("w", CHOICE, DEFAULT_MODEL, choices=("zero", *MODELS)),
            Param("samples", INT, 32, 1, MAX_TUPLES), Param("exact", CHOICE, "4", choices=("0", "4", "8"))),
    role=BOUND, carries=("nodes", "value"), slow=True, rules_problem=bracket_rules_problem,
    summary="the honest bracket's upper end: a clairvoyant search that pays a penalty for what it sees "
            "(information relaxation); its mean value bounds every honest player's win rate",
    display=lambda s: "upper bound"))
