"""Every ```python block of README.md and docs/*.md runs as written, against a real broker.

Each page runs in its own temporary directory, its blocks in page order, each block in its own
``python`` process with ``KSEM_BOOTSTRAP_SERVERS`` pointing at the shared test broker (the way
getting-started.md tells a user to point at ``python -m sdk.testing.cluster up``). A block must
exit 0 without a traceback. An HTML comment right above a block says how else to treat it:

- ``<!-- service: ... -->``: it runs until Ctrl-C (``run()`` of a consumer, processor, queue or
  sink). It starts in the background while the page's later blocks run; when the page is done
  the test lets it run (``service: waits for "TEXT"``: until it printed TEXT, what it consumed
  from an earlier block; else until it idles in its poll loop), sends SIGINT, and wants exit 0
  and no traceback.
- ``<!-- postgres: ... -->``: it needs PostgreSQL; ``DATABASE_URL`` names a fresh database.
- ``<!-- registry: ... -->``: it needs a schema registry; ``KSEM_SCHEMA_REGISTRY_URL`` names the
  session's (``sdk.testing.registry``).
- ``<!-- spark: ... -->``: it needs pyspark and Java 17; it runs only under the ``spark`` marker.
- ``<!-- fragment: needs ... -->``: deliberately not a program (a Protocol, a signature, lines
  that live inside some other code); it is not run, and the note says what it needs.

A ```yaml block whose first line is ``# NAME`` is written to the page's directory as NAME (the
getting-started ``profiles.yaml``), for the blocks after it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*(fragment|service|postgres|registry|spark)\b:?\s*(.*?)\s*-->")
BLOCK_TIMEOUT_S = 120.0
SERVICE_OUTPUT_WAIT_S = 45.0
SERVICE_SETTLE_S = 4.0
SERVICE_STOP_WAIT_S = 45.0


@dataclass
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name
        return f"{page}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The ```python and ```yaml blocks of ``page``, with the markers above each."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(python|yaml)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        marks: dict[str, str] = {}
        j = i - 1
        while j >= 0 and (not lines[j].strip() or MARKER.fullmatch(lines[j].strip())):
            m = MARKER.fullmatch(lines[j].strip())
            if m:
                marks[m.group(1)] = m.group(2)
            elif marks:  # a blank line ends the markers that belong to this block
                break
            j -= 1
        end = i + 1
        while not lines[end].startswith("```"):
            end += 1
        code = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(page, i + 1, fence.group(1), code, marks))
        i = end + 1
    return found


def python_blocks(page: Path) -> list[Block]:
    return [b for b in blocks_of(page) if b.lang == "python"]


def _page_param(page: Path) -> object:
    blocks = python_blocks(page)
    marks = [pytest.mark.broker]
    if any("postgres" in b.marks for b in blocks):
        marks.append(pytest.mark.postgres)
    if any("registry" in b.marks for b in blocks):
        marks.append(pytest.mark.registry)
    if any("LocalCluster(nodes=3" in b.code for b in blocks):  # starts 3-node clusters itself
        marks.append(pytest.mark.cluster)
    return pytest.param(page, marks=marks, id=str(page.relative_to(ROOT)))


def _runs(block: Block, *, spark: bool) -> bool:
    return "fragment" not in block.marks and ("spark" in block.marks) == spark


RUN_PAGES = [p for p in PAGES if any(_runs(b, spark=False) for b in python_blocks(p))]
SPARK_PAGES = [p for p in PAGES if any(_runs(b, spark=True) for b in python_blocks(p))]


def _report(block: Block, what: str, out: str, err: str) -> str:
    # the traceback, not the noise before it (a tool's usage text, librdkafka's log)
    tail = err[err.rfind("Traceback") :] if "Traceback" in err else err
    return (
        f"{block.where} {what}\n--- block ---\n{block.code}--- stdout ---\n{out[-4000:]}"
        f"--- stderr ---\n{tail[-8000:]}"
    )


def _log(block: Block, kind: str, started: float, out: str) -> None:
    first = out.strip().splitlines()[0][:100] if out.strip() else ""
    print(f"{block.where}: {kind} {time.monotonic() - started:.1f}s {first}")


@dataclass
class Service:
    block: Block
    process: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float


def _start(block: Block, cwd: Path, env: dict[str, str], n: int) -> Service:
    script = cwd / f"block{n}.py"
    script.write_text(block.code)
    out, err = cwd / f"block{n}.out", cwd / f"block{n}.err"
    with out.open("wb") as o, err.open("wb") as e:
        process = subprocess.Popen(
            [sys.executable, script.name], cwd=cwd, env=env, stdout=o, stderr=e
        )
    return Service(block, process, out, err, time.monotonic())


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _idle(pid: int) -> bool:
    """Has the process settled into its poll loop (imports and start-up done)?

    A fixed sleep would send Ctrl-C into the imports on a busy machine; a service waiting for
    records uses almost no CPU: under 5% of a core for one second.
    """
    try:
        before = _cpu_s(pid)
        time.sleep(1.0)
        return _cpu_s(pid) - before < 0.05
    except (OSError, IndexError, ValueError):
        return True  # not on Linux, or gone: the caller's poll() decides


def _stop(service: Service) -> None:
    """Let the service consume, Ctrl-C it, and want a clean exit.

    With ``waits for "TEXT"`` in its marker the service must print TEXT first (what it consumed
    from an earlier block); else it runs until it is idle, polling (at least SERVICE_SETTLE_S).
    """
    wanted = re.search(r'waits for "([^"]+)"', service.block.marks["service"])
    deadline = time.monotonic() + SERVICE_OUTPUT_WAIT_S
    while time.monotonic() < deadline and service.process.poll() is None:
        if wanted and wanted.group(1) in service.out.read_text():
            break
        settled = time.monotonic() - service.started > SERVICE_SETTLE_S
        if not wanted and settled and _idle(service.process.pid):
            break
        time.sleep(0.2)
    ended_early = service.process.poll() is not None
    if not ended_early:
        service.process.send_signal(signal.SIGINT)
    try:
        rc = service.process.wait(SERVICE_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        service.process.kill()
        service.process.wait()
        rc = None
    out, err = service.out.read_text(), service.err.read_text()
    _log(service.block, f"service (exit {rc})", service.started, out)
    if ended_early:
        pytest.fail(_report(service.block, f"ended before Ctrl-C (exit {rc})", out, err))
    if rc != 0 or "Traceback" in err:
        pytest.fail(_report(service.block, f"did not stop cleanly on Ctrl-C (exit {rc})", out, err))
    if wanted and wanted.group(1) not in out:
        pytest.fail(_report(service.block, f"never printed {wanted.group(1)!r}", out, err))


def run_page(page: Path, cwd: Path, env: dict[str, str], *, spark: bool = False) -> int:
    """Run the page's blocks as the module docstring says; return how many ran."""
    services: list[Service] = []
    ran = 0
    try:
        for n, block in enumerate(blocks_of(page)):
            if block.lang == "yaml":
                first = block.code.splitlines()[0] if block.code.strip() else ""
                name = re.fullmatch(r"#\s*(\S+\.ya?ml)\s*", first)
                if name:
                    (cwd / name.group(1)).write_text(block.code)
                continue
            if not _runs(block, spark=spark):
                continue
            ran += 1
            if "service" in block.marks:
                services.append(_start(block, cwd, env, n))
                continue
            script = cwd / f"block{n}.py"
            script.write_text(block.code)
            started = time.monotonic()
            try:
                done = subprocess.run(
                    [sys.executable, script.name],
                    cwd=cwd,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=BLOCK_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
                err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
                pytest.fail(_report(block, f"did not end in {BLOCK_TIMEOUT_S:.0f}s", out, err))
            if done.returncode != 0 or "Traceback" in done.stderr:
                pytest.fail(
                    _report(block, f"failed (exit {done.returncode})", done.stdout, done.stderr)
                )
            _log(block, "ran", started, done.stdout)
        for service in services:
            _stop(service)
    finally:
        for service in services:
            if service.process.poll() is None:
                service.process.kill()
                service.process.wait()
    return ran


def _env(bootstrap_servers: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSEM_")}
    # the checkout under test first, even if another copy of the SDK is installed
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(
        KSEM_BOOTSTRAP_SERVERS=bootstrap_servers, PYTHONPATH=path, PYTHONUNBUFFERED="1", **extra
    )
    return env


@pytest.mark.parametrize("page", [_page_param(p) for p in RUN_PAGES])
def test_page_runs(page: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Every block of the page that is not a fragment runs as written."""
    cluster = request.getfixturevalue("kafka_cluster")
    extra: dict[str, str] = {}
    if any("postgres" in b.marks for b in python_blocks(page)):
        extra["DATABASE_URL"] = request.getfixturevalue("postgres_uri")
    if any("registry" in b.marks for b in python_blocks(page)):
        extra["KSEM_SCHEMA_REGISTRY_URL"] = request.getfixturevalue("schema_registry")
    run_page(page, tmp_path, _env(cluster.bootstrap_servers, **extra))


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.parametrize("page", SPARK_PAGES, ids=[p.name for p in SPARK_PAGES])
def test_spark_blocks_run(page: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The blocks marked ``spark`` (pyspark, Java 17) run as written too."""
    pytest.importorskip("pyspark")
    cluster = request.getfixturevalue("kafka_cluster")
    run_page(page, tmp_path, _env(cluster.bootstrap_servers), spark=True)


def test_fragments_say_what_they_need() -> None:
    """A fragment is the exception: it says why it does not run, and the count is printed."""
    blocks = [b for p in PAGES for b in python_blocks(p)]
    fragments = [b for b in blocks if "fragment" in b.marks]
    assert all(b.marks["fragment"] for b in fragments), [
        b.where for b in fragments if not b.marks["fragment"]
    ]
    print(f"\n{len(blocks)} python blocks, {len(fragments)} fragments:")
    for b in fragments:
        print(f"  {b.where}: {b.marks['fragment']}")


def test_a_broken_block_fails(tmp_path: Path) -> None:
    """The runner reports a failing block with its page and line (no broker needed)."""
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nprint('ok')\n```\n\n```python\nraise SystemExit(3)\n```\n")
    with pytest.raises(pytest.fail.Exception, match=r"page\.md:7 failed \(exit 3\)"):
        run_page(page, tmp_path, _env("127.0.0.1:1"))
