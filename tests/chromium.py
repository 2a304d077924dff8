"""Real headless Chromium for the report's tests: screenshots and measurements of a page.

``view(page, width, height, tmp, png=...)`` opens a copy of the page with a
small test-only script added at the end of its body (the page itself has
none), lets Chromium lay it out at a window of ``width`` x ``height`` and
returns what the script measured, read back from ``--dump-dom``: the window's
inner width, the document's scroll width, the rectangle and text of chosen
elements and the rectangle of every chart; the same run writes a screenshot
of what a reader sees in that window (the probe's output is appended below
the page, out of the first screen). Headless Chromium opens no window
narrower than about 500 px: a 390 px phone is measured at that width.

Chromium runs with a fresh profile and no network services, as .ci/run's
CI does; ``browser()`` finds it, or returns None where it is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--hide-scrollbars")

_PROBE = """
<script>
(function () {
  function rect(el) {
    var r = el.getBoundingClientRect();
    return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, left: r.left, right: r.right,
            width: r.width, height: r.height};
  }
  var out = {innerWidth: window.innerWidth, innerHeight: window.innerHeight,
             scrollWidth: document.documentElement.scrollWidth,
             bodyScrollWidth: document.body.scrollWidth, elements: {}, svgs: []};
  var wanted = %s;
  for (var i = 0; i < wanted.length; i++) {
    var el = document.querySelector(wanted[i]);
    out.elements[wanted[i]] = el ? {rect: rect(el), text: el.textContent} : null;
  }
  var svgs = document.querySelectorAll('svg');
  for (var j = 0; j < svgs.length; j++) {
    var t = svgs[j].querySelector('title');
    var vb = svgs[j].viewBox && svgs[j].viewBox.baseVal;
    out.svgs.push({title: t ? t.textContent : null, rect: rect(svgs[j]), viewWidth: vb ? vb.width : null});
  }
  var pre = document.createElement('pre');
  pre.id = 'acesup-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def browser() -> str | None:
    """The Chromium executable, or None where none is installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], tmp: Path, timeout: int = 180) -> subprocess.CompletedProcess:
    exe = browser()
    if exe is None:
        raise RuntimeError("chromium is not installed; .ci/run installs it (apt-get install chromium)")
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = ["nice", "-n", "15", exe, *FLAGS, f"--user-data-dir={profile}", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"chromium failed ({res.returncode}): {res.stderr[-2000:]}")
    return res


def view(page: Path, width: int, height: int, tmp: Path, selectors: tuple[str, ...] = (),
         png: Path | None = None) -> dict:
    """Lay ``page`` out in a ``width`` x ``height`` window and measure it (see the module docstring);
    with ``png``, the same Chromium run also writes what a reader sees in that window (one
    browser start per page and window: the tests share it)."""
    html = Path(page).read_text(encoding="utf-8")
    probe = _PROBE % json.dumps(list(selectors))
    assert "</body>" in html
    copy = Path(tmp) / f"probe-{Path(page).stem}-{width}x{height}.html"
    copy.write_text(html.replace("</body>", probe + "</body>", 1), encoding="utf-8")
    args = [f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom"]
    if png is not None:
        png = Path(png)
        if png.exists():
            os.unlink(png)
        args.append(f"--screenshot={png}")
    res = _run([*args, copy.as_uri()], Path(tmp))
    m = re.search(r'<pre id="acesup-probe">(.*?)</pre>', res.stdout, flags=re.S)
    if m is None:
        raise RuntimeError("the probe script left no measurement in the dumped DOM")
    import html as html_lib

    out = json.loads(html_lib.unescape(m.group(1)))
    if png is not None:
        out["png"] = str(png)
    return out
