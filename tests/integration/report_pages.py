"""Checks an HTML report the way a reader sees it: in headless Chromium.

`check_page(path)` loads the page at two window widths with a probe script
appended, and returns what the probe measured: whether the page overflows the
window sideways, and for each chart whether its legend overlaps the plot area,
whether any text leaves the chart, and whether a tick label is written in
exponent form. It also saves a screenshot next to the page (PNG) and returns
its path. Chromium comes from Debian's package (scripts/bootstrap).
"""
import json
import os
import re
import shutil
import subprocess

PROBE = r"""
<script>
window.addEventListener('load', () => {
  const out = {width: window.innerWidth,
               overflow: document.documentElement.scrollWidth > window.innerWidth + 1,
               charts: []};
  for (const svg of document.querySelectorAll('svg.chart')) {
    const vb = svg.viewBox.baseVal;
    const plot = svg.querySelector('rect.plot').getBBox();
    const legend = svg.querySelector('g.legend').getBBox();
    const overlap = legend.width > 0 &&
        !(legend.y + legend.height <= plot.y || legend.y >= plot.y + plot.height ||
          legend.x + legend.width <= plot.x || legend.x >= plot.x + plot.width);
    // Screen boxes, so that rotated text (the y label) is measured as drawn.
    const box = svg.getBoundingClientRect();
    let outside = [];
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.left < box.left - 0.5 || b.top < box.top - 0.5 || b.right > box.right + 0.5 ||
          b.bottom > box.bottom + 0.5) outside.push(t.textContent);
    }
    const ticks = [...svg.querySelectorAll('g.ticks text')].map(t => t.textContent);
    out.charts.push({title: svg.getAttribute('aria-label'), legend_overlaps_plot: overlap,
                     text_outside: outside, ticks: ticks,
                     rendered_width: svg.getBoundingClientRect().width});
  }
  const pre = document.createElement('pre');
  pre.id = 'probe-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("Chromium is not installed: run scripts/bootstrap (it installs Debian's chromium)")


def _run(args, timeout=90):
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--no-first-run", "--disable-dev-shm-usage", *args],
                          capture_output=True, text=True, timeout=timeout)


def check_page(path, widths=(1280, 800)):
    with open(path) as f:
        html = f.read()
    probed = path + ".probe.html"
    with open(probed, "w") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    results = []
    for w in widths:
        p = _run([f"--window-size={w},1000", "--virtual-time-budget=3000", "--dump-dom",
                  "file://" + os.path.abspath(probed)])
        m = re.search(r'<pre id="probe-result">(.*?)</pre>', p.stdout, re.S)
        assert m, f"no probe result from Chromium (rc {p.returncode}): {p.stderr[-800:]}"
        text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">") \
            .replace("&amp;", "&")
        results.append(json.loads(text))
    png = os.path.splitext(path)[0] + ".png"
    p = _run([f"--window-size={widths[0]},2400", "--screenshot=" + png, "file://" + os.path.abspath(path)])
    assert os.path.exists(png), p.stderr[-800:]
    return results, png


def assert_readable(path, min_charts):
    """The checks every report page must pass; returns the probe results."""
    results, png = check_page(path)
    assert os.path.getsize(png) > 20_000, f"screenshot {png} looks blank"
    for r in results:
        assert not r["overflow"], f"{path} is wider than a {r['width']}px window"
        assert len(r["charts"]) >= min_charts, r
        for c in r["charts"]:
            assert not c["legend_overlaps_plot"], f"legend covers the plot in '{c['title']}'"
            assert not c["text_outside"], f"text outside '{c['title']}': {c['text_outside']}"
            assert c["rendered_width"] <= r["width"], c
            for t in c["ticks"]:
                assert re.fullmatch(r"-?\d+(\.\d+)?[kMGT]?", t), f"tick '{t}' in '{c['title']}'"
    return results
