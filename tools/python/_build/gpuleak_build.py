"""The build backend of the pure-Python gpuleak package (PEP 517), in the tree: it needs nothing
beyond the standard library, so `pip install ./tools/python` works offline, in a fresh venv and on
any CPython 3.8+, with or without build isolation and whatever setuptools or `wheel` the
interpreter has (setuptools before 70.1 cannot build a wheel without the `wheel` package).

It reads the few [project] keys that tools/python/pyproject.toml uses (name, version, description,
requires-python, the optional `pytest` extra and the pytest11 entry point) and writes a
py3-none-any wheel holding the gpuleak/ folder, with METADATA, WHEEL, entry_points.txt and RECORD.
"""

import base64
import hashlib
import os
import re
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TAG = "py3-none-any"


def _project():
    """The [project] table of pyproject.toml: the string keys, and the entry points."""
    text = open(os.path.join(_ROOT, "pyproject.toml"), encoding="utf-8").read()
    project, entry_points, extras, table = {}, {}, {}, None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip() if not raw.strip().startswith("#") else ""
        if not line:
            continue
        header = re.fullmatch(r"\[(.+)\]", line)
        if header:
            table = header.group(1).strip()
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip().strip('"'), value.strip()
        if table == "project" and value.startswith('"'):
            project[key] = value.strip('"')
        elif table == "project.entry-points.pytest11":
            entry_points[key] = value.strip('"')
        elif table == "project.optional-dependencies":
            extras[key] = re.findall(r'"([^"]+)"', value)
    return project, entry_points, extras


def _dist_name(project):
    return "%s-%s" % (re.sub(r"[-_.]+", "_", project["name"]), project["version"])


def _metadata(project, extras):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project.get("description", ""), "License: " + "Apache-2.0"]
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    for extra, requirements in sorted(extras.items()):
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s ; extra == "%s"' % (r, extra) for r in requirements]
    readme = os.path.join(_ROOT, "README.md")
    body = open(readme, encoding="utf-8").read() if os.path.isfile(readme) else ""
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + body


def _files():
    """(archive name, path) of every file of the package, __pycache__ left out."""
    base = os.path.join(_ROOT, "gpuleak")
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            yield os.path.relpath(path, _ROOT).replace(os.sep, "/"), path


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_dist_info(project, entry_points, extras):
    info = _dist_name(project) + ".dist-info"
    files = {info + "/METADATA": _metadata(project, extras),
             info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: gpuleak_build\nRoot-Is-Purelib: true\nTag: %s\n" % _TAG}
    if entry_points:
        files[info + "/entry_points.txt"] = "[pytest11]\n" + "".join(
            "%s = %s\n" % item for item in sorted(entry_points.items()))
    return info, {k: v.encode("utf-8") for k, v in files.items()}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info, files = _write_dist_info(*_project())
    for name, data in files.items():
        path = os.path.join(metadata_directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return info


def _build(wheel_directory, payload):
    project, entry_points, extras = _project()
    info, meta = _write_dist_info(project, entry_points, extras)
    wheel_name = "%s-%s.whl" % (_dist_name(project), _TAG)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in list(payload) + sorted(meta.items()):
            z.writestr(name, data)
            records.append(_record_line(name, data))
        records.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(records) + "\n")
    return wheel_name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, ((name, open(path, "rb").read()) for name, path in _files()))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts this folder on sys.path."""
    return _build(wheel_directory, [("gpuleak_editable.pth", (_ROOT + "\n").encode("utf-8"))])
