"""The OpenAI SDK's import with its type packages deferred (`providers/openai_sdk.py`).

The deferring is checked on a package written here, whose modules note when they run, and on the
SDK itself in a fresh interpreter: what `sdk()` leaves unloaded, and that every name is still
there and the same object.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_grade.providers.openai_sdk import import_lazily

FILES = {
    "__init__.py": "from . import kinds\nfrom .kinds.alpha import A\n",
    "log.py": "RAN = []\n",
    "kinds/__init__.py": '"""Re-exports."""\nfrom .alpha import A as A\nfrom .beta import B as B\nfrom .nested import N as N\n',
    "kinds/alpha.py": "from lazyroot.log import RAN\nRAN.append('alpha')\nclass A: ...\n",
    "kinds/beta.py": "import time\nfrom lazyroot.log import RAN\ntime.sleep(0.05)\nRAN.append('beta')\nclass B: ...\n",
    "kinds/gamma.py": "from lazyroot.log import RAN\nRAN.append('gamma')\n",
    "kinds/nested/__init__.py": "from .deep import N as N\n",
    "kinds/nested/deep.py": "from lazyroot.log import RAN\nRAN.append('deep')\nclass N: ...\n",
    "kinds/eager/__init__.py": "from lazyroot.log import RAN\nRAN.append('eager')\n",
}


@pytest.fixture
def lazyroot(tmp_path: Path) -> Iterator[Any]:
    """The package above, imported with `lazyroot.kinds` deferred; removed again afterwards."""
    for name, text in FILES.items():
        path = tmp_path / "lazyroot" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    finders = list(sys.meta_path)
    try:
        yield import_lazily("lazyroot", "lazyroot.kinds")
        assert sys.meta_path == finders  # the finder is gone once the import is done
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "lazyroot" or n.startswith("lazyroot.")]:
            del sys.modules[name]


def ran(root: Any) -> list[str]:
    return list(root.log.RAN)


def test_only_the_modules_used_run(lazyroot: Any) -> None:
    assert ran(lazyroot) == ["alpha"]
    from lazyroot.kinds import gamma  # a module of a deferred package: just that module

    assert gamma.__name__ == "lazyroot.kinds.gamma"
    assert ran(lazyroot) == ["alpha", "gamma"]


def test_a_name_the_package_exports_runs_its_init_and_is_the_same_object(lazyroot: Any) -> None:
    kinds = lazyroot.kinds
    assert kinds.B is sys.modules["lazyroot.kinds.beta"].B
    assert ran(lazyroot) == ["alpha", "beta", "deep"]
    assert kinds.A is lazyroot.A and kinds.N is kinds.nested.deep.N
    assert "__getattr__" not in vars(kinds)
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = kinds.missing


def test_a_missing_name_is_an_attribute_error_after_the_init_ran(lazyroot: Any) -> None:
    assert not hasattr(lazyroot.kinds, "missing")
    assert ran(lazyroot) == ["alpha", "beta", "deep"]


def test_a_package_whose_init_does_more_than_import_runs_it_at_once(tmp_path: Path) -> None:
    for name, text in FILES.items():
        path = tmp_path / "lazyroot" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "lazyroot" / "__init__.py").write_text("from . import kinds\nfrom .kinds import eager\n")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        root = import_lazily("lazyroot", "lazyroot.kinds")
        assert ran(root) == ["eager"]  # `kinds` deferred, `kinds.eager` run: its init appends
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "lazyroot" or n.startswith("lazyroot.")]:
            del sys.modules[name]


def test_threads_reading_a_deferred_name_at_once_all_get_it(lazyroot: Any) -> None:
    kinds, found, failed = lazyroot.kinds, [], []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        try:
            found.append(kinds.B)
        except Exception as exc:  # what the test is about: none may fail while the init runs
            failed.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed
    assert len(found) == 8 and len({id(b) for b in found}) == 1
    assert ran(lazyroot).count("beta") == 1


def test_the_sdk_imports_without_its_type_packages_and_keeps_every_name() -> None:
    # the names each package exports (its modules are imported as used, so they are left out)
    names = "sorted(n for p in (openai.types, openai.types.chat) for n, v in vars(p).items() if not n.startswith('_') and type(v) is not type(sys))"
    script = textwrap.dedent(
        f"""
        import json, sys
        from ci_grade.providers.openai_sdk import sdk
        openai = sdk()
        deferred = "__getattr__" in vars(openai.types)
        count = sum(1 for name in sys.modules if name.startswith("openai"))
        from openai.types.chat.chat_completion import ChatCompletion
        from openai.types.completion import Completion
        same = openai.types.chat.ChatCompletion is ChatCompletion and openai.types.Completion is Completion
        client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
        resources = type(client.chat.completions).__name__
        print(json.dumps({{"deferred": deferred, "count": count, "same": same, "resources": resources, "names": {names}}}))
        """
    )
    lazy = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    eager_script = f"import json, sys, openai; print(json.dumps({{'count': sum(1 for n in sys.modules if n.startswith('openai')), 'names': {names}}}))"
    eager = json.loads(subprocess.run([sys.executable, "-c", eager_script], capture_output=True, text=True, check=True).stdout)
    assert lazy["deferred"] and lazy["same"]
    assert lazy["resources"] == "AsyncCompletions"
    assert lazy["count"] < eager["count"] / 2  # most of the SDK's modules are its type packages'
    assert len(eager["names"]) > 100 and lazy["names"] == eager["names"]  # once read, no name is missing


@pytest.mark.parametrize("enabled", [True, False])
def test_the_sdk_import_leaves_the_collector_as_it_was(enabled: bool) -> None:
    """No collection runs during the import (it creates many objects and no garbage; one may run as
    it begins or ends), and the collector is on afterwards only if it was before."""
    script = textwrap.dedent(
        f"""
        import gc
        from ci_grade.providers.openai_sdk import sdk
        {'gc.enable()' if enabled else 'gc.disable()'}
        runs = []
        gc.callbacks.append(lambda phase, info: phase == "start" and runs.append(info["generation"]))
        sdk()
        print(len(runs), gc.isenabled())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    collections, left_enabled = done.stdout.split()
    assert int(collections) <= 2 and left_enabled == str(enabled)  # unpaused, the import runs ~150 collections
