"""acesup report: build the odds report of a data folder."""

from __future__ import annotations

NAME = "report"
HELP = "build the odds report (HTML, Markdown, JSON) from the results"
DESCRIPTION = """\
Add the rows no report has counted yet to the aggregate tables of the data
folder (DATA/aggregates/: a few small tables, so the report costs the same
whatever the number of rows), rebuild the DuckDB catalog, and write the odds
report into DATA/report/: index.html (one self-contained page, charts inline,
no network needed), report.md, report.json (every number of the report) and
build.json (build time, git commit, library versions). Rebuilding from the
same data gives byte-identical report.json and report.md. Prints the headline
odds. --rebuild recomputes the aggregates from every per-deal row first (the
same numbers; use it after changing rows by hand, or to check them).

example:
  acesup run --deals 2000 && acesup report
  acesup report --data ./acesup-data && xdg-open acesup-data/report/index.html
  acesup report --rebuild
"""


def add_arguments(p):
    from pipeline.spec import DEFAULT_DATA

    p.add_argument("--data", default=DEFAULT_DATA, help=f"data folder (default {DEFAULT_DATA})")
    p.add_argument("--quiet", action="store_true", help="print only the path of index.html")
    p.add_argument("--rebuild", action="store_true",
                   help="recompute the aggregate tables from every per-deal row (slow: reads every file)")


def run(args) -> int:
    from queries.report import build_report, one_in_text, pct, pct_range

    result = build_report(args.data, rebuild=args.rebuild)
    if not args.quiet:
        if not result["headline"]:
            print("no results yet: the report is empty (run 'acesup run' first)")
        for r in result["headline"]:
            print(f"{r['variant']:<20} {r['kind']:<12} {r['player']:<36} {r['deals']:>9,} deals  "
                  f"{pct(r['rate']):>7} [{pct_range(r['low'], r['high'])}]  {one_in_text(r['one_in'])}")
        print(f"report.md:   {result['report_md']}")
        print(f"report.json: {result['report_json']}")
    print(f"index.html:  {result['index_html']}")
    return 0
