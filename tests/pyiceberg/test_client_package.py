"""The Python client as a package: every operation the server documents has a method (sync
and async alike), the wheel builds and installs into a fresh virtualenv and works there, and
the examples of docs/python.md run as written."""

import inspect
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import pangolin_client
from pangolin_client import AsyncPangolinClient, PangolinClient, _api

ROOT = pathlib.Path(__file__).resolve().parents[2]


def documented_operations():
    spec = json.loads((ROOT / "docs" / "openapi.json").read_text())
    return {
        f"{method.upper()} {path}"
        for path, operations in spec["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }


def client_operations():
    found = {}
    for _, cls in inspect.getmembers(_api, inspect.isclass):
        for attribute, function in inspect.getmembers(cls, inspect.isfunction):
            spec = getattr(function, "__pangolin_operation__", None)
            if spec:
                found.setdefault(spec, f"{cls.__name__}.{attribute}")
    return found


def test_every_documented_operation_has_a_client_method():
    documented = documented_operations()
    covered = client_operations()
    missing = sorted(documented - covered.keys())
    assert not missing, f"operations of docs/openapi.json without a client method: {missing}"
    stale = sorted(covered.keys() - documented)
    assert not stale, f"client methods of operations the server does not document: {stale}"


def test_the_sync_and_async_clients_offer_the_same_resources():
    sync = PangolinClient("http://127.0.0.1:9")
    asynchronous = AsyncPangolinClient("http://127.0.0.1:9")
    resources = {k: type(v) for k, v in vars(sync).items() if isinstance(v, _api._Resource)}
    assert len(resources) == 9, resources
    assert resources == {k: type(v) for k, v in vars(asynchronous).items() if isinstance(v, _api._Resource)}
    assert isinstance(sync, _api.Versioning) and isinstance(asynchronous, _api.Versioning)
    public = {n for n in dir(PangolinClient) if not n.startswith("_")}
    assert public - {"close"} == {n for n in dir(AsyncPangolinClient) if not n.startswith("_")} - {"aclose"}


def test_the_wheel_installs_into_a_fresh_virtualenv_and_talks_to_the_server(secure_server, tmp_path):
    # Built from a copy: a build leaves build/ and egg-info behind in the tree it reads.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "clients" / "python", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
        check=True,
    )
    (wheel,) = wheels.glob("pangolin_client-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([oldest_python(), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True)
    script = textwrap.dedent(
        f"""
        import sys
        import pangolin_client
        client = pangolin_client.PangolinClient({secure_server.url!r}, username="root", password={secure_server.root_password!r})
        assert "main" in [ref.name for ref in client.list_refs()]
        assert next(iter(client.log("main"))).time.year >= 2026
        try:
            client.on("nowhere").get_ref("main")
            raise SystemExit("a catalog that does not exist was found")
        except pangolin_client.NotFoundError as error:
            assert error.type == "NoSuchCatalogException", error.body
        print(client.whoami().principal, pangolin_client.__file__, sys.version_info[1])
        """
    )
    out = subprocess.run([str(python), "-c", script], check=True, capture_output=True, text=True).stdout
    principal, location, minor = out.split()
    print(f"the wheel ran on Python 3.{minor}")
    assert principal == "user:~/root"
    assert location.startswith(str(venv)), location
    # Typed: the marker file ships.
    assert (pathlib.Path(location).parent / "py.typed").exists()


def oldest_python():
    """The oldest Python the package supports (3.9) where this machine has it, so the wheel
    is tried there; this interpreter otherwise."""
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    candidates = [shutil.which("python3.9"), *sorted(str(p) for p in pyenv.glob("versions/3.9*/bin/python3"))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "import venv"], capture_output=True).returncode == 0:
            return candidate
    return sys.executable


def examples():
    """The Python blocks of docs/python.md, in order."""
    text = (ROOT / "docs" / "python.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_documented_examples_run_against_the_server(secure_server, tmp_path):
    blocks = examples()
    assert len(blocks) >= 5
    # The examples are written for a server with root's password in PANGOLIN_PASSWORD.
    env = {"PANGOLIN_URL": secure_server.url, "PANGOLIN_PASSWORD": secure_server.root_password, "PANGOLIN_WAREHOUSE": str(tmp_path)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        scope = {"__name__": "docs_python_md"}
        for number, block in enumerate(blocks, 1):
            try:
                exec(compile(block, f"docs/python.md block {number}", "exec"), scope)
            except Exception as error:  # noqa: BLE001 - name the block that failed
                pytest.fail(f"docs/python.md block {number} failed: {error!r}\n{block}")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_the_package_says_what_it_exports():
    for name in pangolin_client.__all__:
        assert hasattr(pangolin_client, name), name
