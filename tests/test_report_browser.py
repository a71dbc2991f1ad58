"""report.html in a real browser: headless Chromium (Debian's package, driven by Playwright without any
browser download) opens the report of the end-to-end synthetic experiment from disk, runs its scripts
without a console error, and its screenshot and rendered DOM show the summary table and an expanded
drill-down. Skipped where no browser is installed; in CI (CI=true) a missing browser fails instead
(tests/prerequisites.py)."""

from __future__ import annotations

import pytest
from prerequisites import chromium_path, requires
from test_experiment_e2e import _experiment, script, synthetic  # noqa: F401  (synthetic is a fixture)

from takeover.experiments import load_experiment, run_experiment
from takeover.testing.scripted_server import ScriptedServer

#: Flags for Chromium in containers and CI: no sandbox (runs as root), no GPU, nothing fetched at start.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"]


@pytest.mark.slow
@requires("chromium", "playwright")
def test_report_html_in_headless_chromium(synthetic):  # noqa: F811
    chromium = chromium_path()
    from playwright.sync_api import sync_playwright

    with ScriptedServer(script) as srv:
        config = load_experiment(_experiment(synthetic, "runa", srv.base_url))
        summary = run_experiment(config, progress=False)
    assert summary.problems == [], summary.problems_by_reason()
    html = config.out / "report.html"
    assert html.exists()

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.goto(html.as_uri())
            page.wait_for_function("window.takeoverPageReady !== undefined")

            # The summary table: one row per view of the single successor, with solved rates and intervals.
            rows = page.locator("#summary table.summary tbody tr")
            assert rows.count() == 4
            assert rows.nth(0).inner_text().split("\t")[:4] == ["scripted", "repo_only", "2", "50.0%"]
            assert "+50.0 pp (p=1)" in rows.nth(1).inner_text()
            assert page.locator("#summary svg.chart").count() == 5
            # Beside solved, events and tokens: the claims of each model-written view's notes (the scripted notes
            # say repro.py was created and raised an AssertionError; the predecessor's printf failed, so neither
            # happened: docs/protocol.md section 7.6).
            notes_row = rows.nth(2).inner_text().split("\t")
            assert notes_row[1] == "summary_notes" and notes_row[10:13] == ["8", "25%", "12%"]
            assert rows.nth(0).inner_text().split("\t")[10:13] == ["", "", ""]
            assert page.locator("#claims tbody tr").count() == 2
            page.screenshot(path=str(config.out / "report-summary.png"))

            # Filters and sorting of the run table, client-side.
            assert page.locator("#run-table tbody tr:visible").count() == 8
            page.select_option("#filter-view", "raw_trace")
            assert page.locator("#run-table tbody tr:visible").count() == 2
            assert page.inner_text("#run-count") == "showing 2 of 8 runs"
            page.click("#filter-reset")
            page.click("#run-table th:has-text('events')")
            page.click("#run-table th:has-text('events')")  # descending: the notes views (6 events) first
            first = page.locator("#run-table tbody tr").first.inner_text()
            assert "notes" in first

            # A summary cell leads to the runs behind it; a run leads to its column in the drill-down.
            page.click("#summary table.summary tbody tr:nth-child(2) td:nth-child(3) a")
            assert page.input_value("#filter-view") == "raw_trace"
            assert page.locator("#run-table tbody tr:visible").count() == 2
            page.click("#filter-reset")
            point = page.locator("details.point").first
            point.locator("summary").click()
            columns = point.locator(".run-col")
            columns.first.wait_for()
            assert columns.count() == 4
            texts = [columns.nth(i).inner_text() for i in range(4)]
            assert [t.split("\n")[0].split()[0] for t in texts] == ["repo_only", "raw_trace", "summary_notes",
                                                                    "structured_notes"]
            assert all("steps (" in t and "prompt the successor received" in t for t in texts)
            assert "git diff" in texts[0] and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in texts[0]
            body = point.inner_text()
            assert "Handoff state" in body and "checkpoint diff" in body and "FAIL_TO_PASS" in body
            # An observation unfolds; the prompt unfolds to the exact text the successor received.
            columns.nth(1).locator("details.fold summary:has-text('observation')").first.click()
            columns.nth(1).locator("details.fold summary:has-text('prompt the successor')").click()
            assert '<previous_agent view="raw_trace">' in columns.nth(1).locator("pre.prompt").inner_text()

            point.screenshot(path=str(config.out / "report-drilldown.png"))

            # Each note's claims, marked in the note and linked to the predecessor events they cite.
            notes_col = columns.nth(2)
            notes_col.locator("details.fold summary:has-text('claims of the note')").click()
            box = notes_col.locator(".claims-box")
            box.locator("mark.claim-contradicted").first.wait_for()  # the page renders the box on opening
            assert box.locator("mark.claim-contradicted").count() >= 1
            assert box.locator("mark.claim-supported").count() >= 1
            assert "no event edited it and the checkpoint leaves it unchanged" in box.inner_text()
            box.locator("mark.claim-supported[data-claim-event]").first.click()
            highlighted = box.locator("pre.cited-event.highlight")
            highlighted.wait_for()
            assert highlighted.inner_text().startswith("[step ")
            notes_col.screenshot(path=str(config.out / "report-claims.png"))
            dom = page.content()
            (config.out / "report.dom.html").write_text(dom, encoding="utf-8")
            assert 'class="summary"' in dom and 'class="run-col' in dom and 'class="steps"' in dom

            # Opening a link to a run from outside the page opens its point and marks its column.
            key = page.locator("#run-table tbody tr").nth(3).get_attribute("id").removeprefix("row-")
            page.goto(html.as_uri() + f"#run-{key}")
            page.wait_for_selector(f"#run-{key}.highlight")
        finally:
            browser.close()
    assert errors == []
    assert (config.out / "report-summary.png").stat().st_size > 10_000
    assert (config.out / "report-claims.png").stat().st_size > 5_000
