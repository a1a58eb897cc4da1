"""The shipped Prometheus alerting and recording rules (deploy/prometheus/) are valid and do
what their names say: `promtool check rules`, then `promtool test rules` with
series that must fire each alert (and some that must not); a mutated rule fails
the same test."""
import os
import shutil
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(ROOT, "deploy", "prometheus")


def promtool(*args, cwd=RULES):
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_rules_are_valid_and_their_unit_tests_pass():
    p = promtool("check", "rules", "outpost-alerts.yml")
    assert p.returncode == 0 and "SUCCESS: 12 rules found" in p.stdout, p.stdout + p.stderr
    p = promtool("test", "rules", "outpost-alerts_test.yml")
    assert p.returncode == 0, p.stdout + p.stderr


def test_recording_rules_compute_energy_per_token_and_tokens_per_watt():
    p = promtool("check", "rules", "outpost-recording.yml")
    assert p.returncode == 0 and "SUCCESS: 3 rules found" in p.stdout, p.stdout + p.stderr
    p = promtool("test", "rules", "outpost-recording_test.yml")
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_broken_rule_fails_its_test(tmp_path):
    # Counting successes as errors must be caught by the error-rate test.
    with open(os.path.join(RULES, "outpost-alerts.yml")) as f:
        rules = f.read()
    assert 'error_type!~"|cancelled"' in rules
    (tmp_path / "outpost-alerts.yml").write_text(rules.replace('error_type!~"|cancelled"',
                                                               'error_type!~"cancelled"'))
    shutil.copy(os.path.join(RULES, "outpost-alerts_test.yml"), tmp_path)
    p = promtool("test", "rules", "outpost-alerts_test.yml", cwd=tmp_path)
    assert p.returncode != 0 and "OutpostErrors" in p.stdout + p.stderr, p.stdout + p.stderr
