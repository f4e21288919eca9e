"""The build backend of the leat package (PEP 517 and PEP 660), standard
library only.

pyproject.toml names it with an empty build-system.requires, so
`pip install ./sdk/python` needs nothing from a package index: pip's
isolated build environment has nothing to install, which makes the install
work offline as well as online. It builds a pure-Python wheel of src/leat,
an editable wheel (a .pth file pointing at src) and an sdist, with the
metadata of pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

__all__ = [
    "build_wheel",
    "build_editable",
    "build_sdist",
    "get_requires_for_build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "leat"
# Zip entries get this time (1980-01-01, the earliest a zip holds) unless
# SOURCE_DATE_EPOCH says otherwise: the same sources build the same wheel.
_EPOCH = 315532800


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _project():
    """The [project] table of pyproject.toml: with tomllib (Python 3.11+),
    else with a reader of the subset that file uses (strings and arrays of
    strings on one line, in [project] and [project.urls])."""
    path = os.path.join(ROOT, "pyproject.toml")
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    project, table = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.fullmatch(r"\[([^\]]+)\]", line)
            if m:
                table = m.group(1).strip()
                continue
            if table not in ("project", "project.urls"):
                continue
            m = re.fullmatch(r'([A-Za-z0-9_.-]+|"[^"]+")\s*=\s*(.+)', line)
            if not m:
                raise ValueError("pyproject.toml: cannot read %r without tomllib" % line)
            key, value = m.group(1).strip('"'), m.group(2)
            if value.startswith("["):
                value = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
            elif value.startswith('"') and value.endswith('"'):
                value = value[1:-1]
            else:
                raise ValueError("pyproject.toml: cannot read %r without tomllib" % line)
            if table == "project":
                project[key] = value
            else:
                project.setdefault("urls", {})[key] = value
    return project


def _version():
    """__version__ of src/leat/_version.py, the one place it is written."""
    with open(os.path.join(ROOT, "src", PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise ValueError("src/leat/_version.py: no __version__ = \"...\" line")
    return m.group(1)


def _project_with_version():
    p = _project()
    if "version" in p.get("dynamic", []):
        p["version"] = _version()
    return p


def _metadata(p):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
    ]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict):
        lic = lic.get("text")
    if lic:
        lines.append("License: %s" % lic)
    for c in p.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    for label, url in p.get("urls", {}).items():
        lines.append("Project-URL: %s, %s" % (label, url))
    readme = p.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _sources():
    """(path in the wheel, file) of every file of the package."""
    src = os.path.join(ROOT, "src")
    out = []
    for d, dirs, files in os.walk(os.path.join(src, PACKAGE)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(d, name)
            out.append((os.path.relpath(full, src).replace(os.sep, "/"), full))
    return out


def _date():
    import time

    t = max(int(os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)), _EPOCH)
    return time.gmtime(t)[:6]


class _Wheel:
    """A wheel being written, with its RECORD."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.record = []
        self.date = _date()

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        info = zipfile.ZipInfo(name, self.date)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append("%s,sha256=%s,%d" % (name, digest, len(data)))

    def close(self, dist_info):
        name = dist_info + "/RECORD"
        self.record.append(name + ",,")
        info = zipfile.ZipInfo(name, self.date)
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def _build(wheel_directory, editable):
    p = _project_with_version()
    dist = "%s-%s" % (p["name"].replace("-", "_"), p["version"])
    filename = dist + "-py3-none-any.whl"
    w = _Wheel(os.path.join(wheel_directory, filename))
    try:
        if editable:
            w.add("__editable__.%s.pth" % dist, os.path.join(ROOT, "src") + "\n")
        else:
            for name, full in _sources():
                with open(full, "rb") as f:
                    w.add(name, f.read())
        dist_info = dist + ".dist-info"
        w.add(dist_info + "/METADATA", _metadata(p))
        w.add(dist_info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: leat_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        w.close(dist_info)
    except BaseException:
        w.zip.close()
        os.remove(os.path.join(wheel_directory, filename))
        raise
    return filename


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project_with_version()
    dist = "%s-%s" % (p["name"].replace("-", "_"), p["version"])
    filename = dist + ".tar.gz"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml"))]
    if p.get("readme"):
        files.append((p["readme"], os.path.join(ROOT, p["readme"])))
    files.append(("build_backend/leat_build.py", os.path.abspath(__file__)))
    files += [("src/" + name, full) for name, full in _sources()]
    mtime = max(int(os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)), _EPOCH)
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:

        def add(name, data):
            info = tarfile.TarInfo(dist + "/" + name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))

        add("PKG-INFO", _metadata(p).encode("utf-8"))
        for name, full in files:
            with open(full, "rb") as f:
                add(name, f.read())
    return filename
