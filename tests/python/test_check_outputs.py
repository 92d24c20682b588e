"""What `gpuleak check` writes for CI, re-read by real parsers: JUnit XML by ElementTree, GitHub
workflow commands by their documented escaping, with hostile strings in the report."""
import json
import os
import subprocess
import xml.etree.ElementTree as ElementTree

HOSTILE = "f<T>(\"a\" & 'b') ]]> \x01 </script> 50%\r\nnext: a,b"


def hostile_report():
    return {
        "schema": "gpuleak.report/1", "run": {"program": "tr<ain>&", "pid": 7}, "verdict": "leak",
        "iteration_source": "api",
        "devices": [{"index": 0, "peak_live_bytes": 10, "live_at_exit_bytes": 10, "verdict": "leak"}],
        "leaks": [{"site_id": "aa", "device": 0, "bytes_per_iteration": 1048576, "live_bytes": 5, "live_count": 1,
                   "first_iteration": 0,
                   "stack": [{"kind": "native", "function": HOSTILE, "file": "/ws/src/a,b:c.cpp", "line": 3,
                              "module": "m"}]}],
    }


def run_check(build, tmp_path, *args, env=None):
    path = tmp_path / "hostile.report.json"
    path.write_text(json.dumps(hostile_report()))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    full_env.update(env or {})
    return subprocess.run([str(build.cli), "check", *args, str(path)], env=full_env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


def test_junit_reparses_and_keeps_the_text(build, tmp_path):
    junit = tmp_path / "gpuleak.xml"
    proc = run_check(build, tmp_path, "--junit", str(junit))
    assert proc.returncode == 1, proc.stderr
    root = ElementTree.parse(str(junit)).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1"
    (case,) = root.iter("testcase")
    assert case.get("name") == "tr<ain>&"  # no pid: one test identity from run to run
    failure = case.find("failure")
    assert failure.get("type") == "leak"
    message = failure.get("message")
    assert message.startswith("leak: f<T>(\"a\" & 'b') ]]> \ufffd </script> 50%\r\nnext: a,b")
    assert "\x01" not in failure.text


def test_github_annotations_and_summary(build, tmp_path):
    summary = tmp_path / "summary.md"
    proc = run_check(build, tmp_path, env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": "/ws",
                                           "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 1
    head, message = annotations[0][2:].split("::", 1)
    command, props = head.split(" ", 1)
    assert command == "error"
    fields = dict(p.split("=", 1) for p in props.split(","))
    assert fields["file"] == "src/a%2Cb%3Ac.cpp" and fields["line"] == "3"

    def unescape(s):
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")

    assert unescape(fields["file"]) == "src/a,b:c.cpp"
    assert unescape(message).startswith("f<T>(\"a\" & 'b') ]]> \ufffd </script> 50%\r\nnext: a,b (")
    text = summary.read_text()
    assert text.startswith("## gpuleak check:")
    assert "<script" not in text and "</script>" not in text
