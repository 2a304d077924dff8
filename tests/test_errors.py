"""The error family: every input error is an AcesUpError; the shells catch only that family.

An input error (bad text, unknown name, number out of range) is the user's to
fix: the command line prints it on one line and exits 2, and the Prefect flows
never retry it. Anything else (a plain ValueError from a bug included) shows
its traceback and is retried.
"""

import importlib
import inspect
import pkgutil
import subprocess
import sys
import textwrap

import pytest

import engine_rs_free
import pipeline
from engine_rs_free.errors import AcesUpError, InputRangeError, PositionParseError
from pipeline.errors import UserError


def _input_error_triggers():
    from engine_rs_free import actions, cards, deals, game, pimc, players, policies, rules, solver

    deck = deals.deal(0, 0)
    state = game.new_game(deck)
    yield "card", cards.CardParseError, lambda: cards.parse_card("ZZ")
    yield "deck", cards.DeckParseError, lambda: cards.parse_deck("AS KS")
    yield "deck ids", cards.DeckParseError, lambda: game.new_game([0] * 52)
    yield "variant", rules.UnknownRulesError, lambda: rules.rules_by_name("klondike")
    yield "action", actions.ActionParseError, lambda: game.Action.from_text("q")
    yield "illegal", game.IllegalActionError, lambda: game.apply(state, "0>1", "standard")
    yield "replay", game.ReplayError, lambda: game.replay(deck, "d 0>0")
    yield "policy", policies.UnknownPolicyError, lambda: policies.parse_policy("greedier")
    yield "pimc", players.UnknownPlayerError, lambda: players.parse_player("pimc:samples=x")
    yield "player", players.UnknownPlayerError, lambda: players.canonical_player("solver:fast")
    yield "seed", InputRangeError, lambda: deals.deal(-5, 0)
    yield "index", InputRangeError, lambda: deals.deal_batch(0, -1, 3)
    yield "node limit", InputRangeError, lambda: solver.solve_batch(deals.deal_batch(0, 0, 1), "standard",
                                                                     node_limit=0)
    yield "position", PositionParseError, lambda: game.parse_position("AS | KS")
    yield "samples", InputRangeError, lambda: pimc.sample_orders([1, 2], 0, seed=0, index=0, decision=0)


@pytest.mark.parametrize("what,cls,trigger", list(_input_error_triggers()), ids=[w for w, _, _ in _input_error_triggers()])
def test_every_engine_input_error_is_an_acesup_error(what, cls, trigger):
    with pytest.raises(cls) as err:
        trigger()
    assert isinstance(err.value, AcesUpError) and isinstance(err.value, ValueError)
    assert str(err.value), f"{what}: an input error needs a message"


def _all_modules(package):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.startswith("pipeline.bench"):
            continue  # benchmarks define no errors and import heavy optional parts
        yield importlib.import_module(info.name)


def test_every_value_error_class_of_the_project_is_in_the_family():
    """A new input error class that derives from ValueError directly would be shown as a bug."""
    import flows
    import queries

    found = []
    for package in (engine_rs_free, pipeline, flows, queries):
        for mod in _all_modules(package):
            for name, obj in vars(mod).items():
                if inspect.isclass(obj) and issubclass(obj, ValueError) and obj.__module__ == mod.__name__:
                    found.append(obj)
                    assert issubclass(obj, AcesUpError), f"{mod.__name__}.{name} is a ValueError outside AcesUpError"
    assert UserError in found and len(found) >= 10


def test_pipeline_input_errors_are_in_the_family(tmp_path):
    from pipeline.manifest import read_manifest, manifest_path
    from pipeline.spec import load_spec
    from pipeline.storage import DataStore

    assert issubclass(UserError, AcesUpError)
    with pytest.raises(UserError, match="spec field 'policies'"):
        load_spec(None, policies="greedier")
    store = DataStore(str(tmp_path))
    store.write_atomic(manifest_path("abc"), b"{not json")
    with pytest.raises(UserError, match="unreadable"):
        read_manifest(store, "abc")


def _cli(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_cli_shows_an_input_error_on_one_line_and_a_bug_with_its_traceback():
    p = _cli("""
        import sys
        from pipeline.cli import main
        sys.exit(main(["deal", "--seed", "-5"]))
    """)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == "acesup deal: error: seed -5 is out of range; use an integer in 0..2**64-1"
    # A plain ValueError from deep inside (a bug, say in the deck dealer) is not the user's mistake.
    p = _cli("""
        import sys
        import engine_rs_free.deals as deals
        def broken(*args, **kwargs):
            raise ValueError("internal: philox counter overflow")
        deals.deal_batch = broken
        from pipeline.cli import main
        sys.exit(main(["deal", "--seed", "1"]))
    """)
    assert p.returncode == 1, p.stderr
    assert "Traceback (most recent call last)" in p.stderr and "in broken" in p.stderr
    assert "ValueError: internal: philox counter overflow" in p.stderr
    assert "acesup deal: error:" not in p.stderr


def test_cli_lets_an_internal_value_error_through(monkeypatch):
    import engine_rs_free.deals as deals
    from pipeline.cli import main

    monkeypatch.setattr(deals, "deal_batch", lambda *a, **k: (_ for _ in ()).throw(ValueError("bug")))
    with pytest.raises(ValueError, match="bug"):
        main(["deal", "--seed", "1"])


def test_flows_retry_internal_failures_and_never_input_errors():
    from prefect.states import Failed

    from engine_rs_free.cards import DeckParseError
    from engine_rs_free.policies import UnknownPolicyError
    from flows.tasks import DatasetInvalid, worth_retrying
    from pipeline.execute import BatchFailedError

    def retried(exc):
        return worth_retrying(None, None, Failed(data=exc))

    assert retried(ValueError("internal: player returned 9 scores for 10 decks"))
    assert retried(BatchFailedError("batch failed after 3 retries: connection reset"))
    assert retried(OSError("s3 timeout"))
    for exc in (UserError("spec field 'deals': ..."), UnknownPolicyError("unknown policy 'greedier'"),
                DeckParseError("52 cards expected"), InputRangeError("seed -1"), DatasetInvalid("2 keys twice")):
        assert not retried(exc), exc
