"""How a stdio server is started: from its configuration to an argv and an environment.

With `WORKBENCH_SANDBOX=bwrap` (the default) every stdio server runs in a bubblewrap
sandbox of its own, built in two layers because the gateway usually runs as root:

1. an outer `bwrap`, started as root: new PID, IPC, UTS and network namespaces (a server
   whose network is on is given a filtered one before it runs: sandbox_start,
   sandbox_network); a fresh root holding only the host's system directories,
   the command's own files and the server's mounts, all read-only unless a mount says
   otherwise; `/proc` of the sandbox's own processes; a minimal `/dev`;
2. `prlimit` sets the server's limits, `setpriv` drops to the tenant's own unprivileged
   uid (`uid_base + tenant id`), so that the process-count limit binds (it does not bind
   root) and no two tenants share a uid;
3. an inner `bwrap`, started as that uid: a new user namespace, a private writable HOME
   and `/tmp` (tmpfs, owned by the server, each bounded by WORKBENCH_SANDBOX_TMP_MB),
   the tenant's package cache at `~/.npm` and `~/.cache` (sandbox_cache), the working
   directory, then the command.

The server's memory as a whole (heap, shared memory, its tmpfs pages) is bounded by a
cgroup of its own (sandbox_memory), which sandbox_start sets up before the server runs.

Nothing here starts anything except `probe`: `launch` is a pure function, unit-tested,
but for making the tenant's package cache ready (sandbox_cache.prepare).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio

from mcp_gateway import sandbox_cache, sandbox_network, sandbox_paths
from mcp_gateway.failures import ClassifiedFailure

logger = logging.getLogger("workbench.sandbox")

MODES = ("bwrap", "none")
HOME = "/home/server"
SUPPORT_DIR = "/run/workbench"  # inside the outer sandbox: files the gateway provides
# The host's system directories, read-only (symlinks such as /bin -> usr/bin are copied).
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
SCRIPT_SUFFIXES = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".sh", ".jar")
# git refuses a repository owned by another uid (all host files are, inside the sandbox).
GITCONFIG = "[safe]\n\tdirectory = *\n"
FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) on a kernel that allows "
    "user namespaces, or set WORKBENCH_SANDBOX=none to run stdio servers unsandboxed"
)


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-server limits; None: not set here (the gateway's default, or no limit)."""

    memory_mb: int | None = None
    processes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None

    def over(self, defaults: Limits) -> Limits:
        """These values, each unset one taken from `defaults`."""
        return Limits(
            *(
                mine if mine is not None else theirs
                for mine, theirs in zip(self.as_tuple(), defaults.as_tuple(), strict=True)
            )
        )

    def as_tuple(self) -> tuple[int | None, ...]:
        return (self.memory_mb, self.processes, self.cpu_seconds, self.open_files)


@dataclass(frozen=True, slots=True)
class Mount:
    path: str
    writable: bool = False


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What one server's configuration says about its sandbox."""

    owner: int = 0  # the tenant: its uid is uid_base + owner
    mounts: tuple[Mount, ...] = ()
    network: bool = True
    limits: Limits = field(default_factory=Limits)
    # Networks and host names this server may reach beyond public addresses (an
    # operator's allowance, added to WORKBENCH_EGRESS_ALLOW's).
    egress_allow: tuple[str, ...] = ()
    # The host directories its tenant's admins may name (sandbox_paths.tenant_roots).
    roots: tuple[str, ...] = ()

    def mounts_bound(self) -> list[tuple[str, bool]]:
        return [(mount.path, mount.writable) for mount in self.mounts]

    def material(self) -> list[object]:
        """What the connection fingerprint includes."""
        mounts = [[mount.path, mount.writable] for mount in self.mounts]
        return [mounts, self.network, list(self.limits.as_tuple()), list(self.egress_allow)]


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The gateway-wide rules (from the WORKBENCH_SANDBOX* settings)."""

    mode: str = "bwrap"
    limits: Limits = field(default_factory=lambda: Limits(1024, 512, 3600, 1024))
    uid_base: int = 200_000
    tmp_mb: int = 64  # each of the tmpfs /tmp and HOME, at the most
    # Never bound, and masked where a system directory would show them: the project
    # directory, the database's directory, the env file, ...
    protected: tuple[str, ...] = ()
    bwrap: str = "bwrap"

    @property
    def enabled(self) -> bool:
        return self.mode == "bwrap"

    @classmethod
    def from_settings(cls) -> SandboxPolicy:
        """From Django's WORKBENCH_SANDBOX* settings (workbench_site/settings.py)."""
        from django.conf import settings

        return cls(
            mode=settings.WORKBENCH_SANDBOX,
            limits=Limits(
                settings.WORKBENCH_SANDBOX_MEMORY_MB or None,
                settings.WORKBENCH_SANDBOX_PROCESSES or None,
                settings.WORKBENCH_SANDBOX_CPU_SECONDS or None,
                settings.WORKBENCH_SANDBOX_OPEN_FILES or None,
            ),
            uid_base=settings.WORKBENCH_SANDBOX_UID_BASE,
            tmp_mb=settings.WORKBENCH_SANDBOX_TMP_MB,
            protected=tuple(settings.WORKBENCH_SANDBOX_PROTECTED_PATHS),
        )


@dataclass(frozen=True, slots=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None  # for the spawn itself (None inside a sandbox: it sets its own)


_policy: SandboxPolicy | None = None


def configure(policy: SandboxPolicy) -> None:
    """Set this process's policy (at start); `none` is logged as a warning."""
    global _policy
    if policy.mode not in MODES:
        raise ValueError(f"WORKBENCH_SANDBOX must be one of {', '.join(MODES)}")
    _policy = policy
    if not policy.enabled:
        logger.warning(
            "WORKBENCH_SANDBOX=none: stdio servers run unsandboxed, as the gateway's own user, "
            "and can read its files, environment and other tenants' processes"
        )


def active_policy() -> SandboxPolicy:
    """The configured policy, else the settings' (read once)."""
    global _policy
    if _policy is None:
        _policy = SandboxPolicy.from_settings()
    return _policy


# Paths


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def is_protected(path: str, protected: Iterable[str]) -> bool:
    """True when binding `path` would show one of the gateway's own paths."""
    return any(_inside(path, item) or _inside(item, path) for item in protected)


def _parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def _environment_root(path: Path) -> Path | None:
    """The virtualenv or node_modules tree a file belongs to, if any."""
    for parent in path.parents:
        if parent.name == "node_modules":
            top = parent
            for above in parent.parents:  # nested node_modules: bind the outermost
                if above.name == "node_modules":
                    top = above
            return top
        if (parent / "pyvenv.cfg").is_file():
            return parent
    return None


def _python_home(venv: Path) -> Path | None:
    """The prefix of the interpreter a virtualenv runs (pyvenv.cfg's `home` is its bin)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(value.strip())
            return home.parent if home.name == "bin" else home
    return None


def _prefix_of(executable: Path) -> Path:
    """A program's installation prefix (`<prefix>/bin/<name>`), or the file itself."""
    if executable.parent.name == "bin" and str(executable.parent.parent) != "/":
        return executable.parent.parent
    return executable


def _shebang(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return words[0] if words and words[0].startswith("/") else None


def _check_mount(path: str, protected: Sequence[str]) -> None:
    """Refuse a mount that now resolves elsewhere than it was validated (a directory
    swapped for a symlink), shows a protected path, or lies below a directory other users
    cannot enter: checked at every spawn, as validation did (toolboxes.validators)."""
    try:
        sandbox_paths.check(path, None, protected)
    except sandbox_paths.PathRefused as exc:
        raise ClassifiedFailure(sandbox_paths.REFUSED, f"mount not bound: {exc}") from None


def named_paths(
    args: Sequence[str],
    cwd: str | None,
    protected: Sequence[str],
    *,
    roots: Sequence[str] = (),
    mounts: Sequence[str] = (),
) -> list[str]:
    """What to bind for the absolute paths named in args and cwd; raises PathRefused for
    one that may not be shown.

    A path under the tenant's directories (`roots`: what its admins may name) is checked
    (sandbox_paths) and bound as it is; one the server's mounts show needs nothing. Any
    other is bound only as the command's own files: a virtualenv or node_modules tree, a
    script or executable (a package's module: its package); the gateway's own files are
    skipped. Anything else is refused: an operator mounts it instead.
    """
    found: list[str] = []
    for text in [*(arg for arg in args if arg.startswith("/")), *([cwd] if cwd else [])]:
        found += [path for path in _named(text, protected, roots, mounts) if path not in found]
    return found


def _named(
    text: str, protected: Sequence[str], roots: Sequence[str], mounts: Sequence[str]
) -> list[str]:
    """What one named path binds (named_paths' rules); a missing one binds nothing."""
    path = os.path.normpath(text)
    if not os.path.exists(path):
        return []
    real = os.path.realpath(path)
    if any(_inside(path, root) for root in roots):
        sandbox_paths.check(text, roots, protected)  # resolves to itself, checked
        return [real]
    if any(_inside(real, root) for root in roots):
        sandbox_paths.check(real, roots, protected)
        return [real]
    if real == "/" or any(_inside(real, mount) for mount in mounts):
        return []  # never the root whole; a mount shows it (checked as a mount)
    environment = _environment_root(Path(real))
    if environment is not None and not _contains_protected(str(environment), protected):
        home = _python_home(environment) if (environment / "pyvenv.cfg").is_file() else None
        return [str(environment), *([str(home)] if home else [])]
    is_file = os.path.isfile(real)
    script = is_file and (Path(real).suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK))
    if is_protected(real, protected) and not script:
        return []  # e.g. the gateway's .env or database named as an argument
    if any(_inside(real, item) for item in SYSTEM_DIRS):
        return []  # shown to every sandbox already
    if is_file:
        if Path(real).name == "__main__.py" or (Path(real).parent / "__init__.py").is_file():
            package = Path(real).parent
            while (package.parent / "__init__.py").is_file():
                package = package.parent
            if not is_protected(str(package), protected):
                return [str(package)]
        if script:
            return [real]
    raise sandbox_paths.PathRefused(sandbox_paths.outside(text, roots))


def command_files(
    executable: str,
    args: Sequence[str],
    cwd: str | None,
    protected: Sequence[str],
    *,
    roots: Sequence[str] = (),
    mounts: Sequence[str] = (),
) -> list[str]:
    """The host paths a command needs, to bind read-only (never a protected one whole);
    a named path that may not be shown (named_paths) is a ClassifiedFailure naming it."""
    found: list[str] = []

    def add(path: Path) -> None:
        text = str(path)
        system = any(_inside(text, item) for item in SYSTEM_DIRS if item != "/etc")
        if text not in found and not system:
            found.append(text)

    def add_program(path: Path, depth: int = 0) -> None:
        """An executable: every hop of its symlinks, its environment and interpreter."""
        hops = [path]
        while hops[-1].is_symlink() and len(hops) < 40:
            hops.append(hops[-1].parent / os.readlink(hops[-1]))
        for hop in hops:
            root = _environment_root(Path(os.path.normpath(hop)))
            if root is not None:
                add(root)
                if (root / "pyvenv.cfg").is_file() and (home := _python_home(root)):
                    add(home)
        real = path.resolve()
        if _environment_root(real) is None:
            prefix = _prefix_of(real)
            if prefix != real and _contains_protected(str(prefix), protected):
                prefix = real  # never a protected directory whole: the program alone
            if prefix.is_dir() or real.suffix in SCRIPT_SUFFIXES or os.access(real, os.X_OK):
                add(prefix)
        interpreter = _shebang(real)
        if interpreter and depth < 4:
            add_program(Path(interpreter), depth + 1)

    add_program(Path(executable))
    try:
        named = named_paths(args, cwd, protected, roots=roots, mounts=mounts)
    except sandbox_paths.PathRefused as exc:
        raise ClassifiedFailure(sandbox_paths.REFUSED, f"not bound: {exc}") from None
    for path in named:
        add(Path(path))
    return [path for path in found if path != "/"]


def _contains_protected(path: str, protected: Iterable[str]) -> bool:
    return any(_inside(item, path) for item in protected)


# The command line


def _support_file(name: str = "gitconfig", content: str = GITCONFIG) -> str:
    """A host file holding `content`, readable by the outer (root) sandbox only."""
    directory = Path(tempfile.gettempdir()) / f"workbench-sandbox-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    stat = directory.lstat()
    if directory.is_symlink() or stat.st_uid != os.getuid():
        raise ClassifiedFailure(
            "the sandbox could not start: its support directory is not the gateway's own",
            f"{directory} is a symlink or owned by uid {stat.st_uid}",
        )
    path = directory / name
    if not path.exists() or path.read_text() != content:
        path.write_text(content)
        path.chmod(0o644)
    return str(path)


def _prlimit(limits: Limits) -> list[str]:
    argv = ["prlimit"]
    if limits.memory_mb:
        size = limits.memory_mb * 1024 * 1024
        argv.append(f"--data={size}:{size}")
    if limits.processes:
        argv.append(f"--nproc={limits.processes}:{limits.processes}")
    if limits.cpu_seconds:
        # The soft limit sends SIGXCPU (reported as this limit); the hard one SIGKILL.
        argv.append(f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}")
    if limits.open_files:
        argv.append(f"--nofile={limits.open_files}:{limits.open_files}")
    return argv


def _dir_chain(path: str, made: set[str]) -> list[str]:
    """`--dir` for each missing parent, mode 0755 (bwrap would make them 0700, root's)."""
    argv: list[str] = []
    for parent in _parents(path):
        if parent not in made:
            made.add(parent)
            argv += ["--perms", "0755", "--dir", parent]
    return argv


def uid_for(spec: SandboxSpec, policy: SandboxPolicy) -> int:
    return policy.uid_base + spec.owner


def sandbox_argv(
    executable: str,
    args: Sequence[str],
    cwd: str | None,
    spec: SandboxSpec,
    policy: SandboxPolicy,
    *,
    binds: Sequence[str] | None = None,
    gitconfig: str | None = None,
    resolv_conf: str | None = None,
    unset: Sequence[str] = (),
    cache: str | None = None,
) -> list[str]:
    """The whole command line: outer bwrap, limits, uid, inner bwrap, the command."""
    if binds is None:
        binds = command_files(
            executable,
            args,
            cwd,
            policy.protected,
            roots=spec.roots,
            mounts=[mount.path for mount in spec.mounts],
        )
    outer = [
        policy.bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        # Always a network namespace of its own: a server whose network is on is given
        # a filtered one before it runs (sandbox_start, sandbox_network).
        "--unshare-net",
    ]
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            outer += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            outer += ["--ro-bind", directory, directory]
    outer += ["--proc", "/proc", "--dev", "/dev"]
    made: set[str] = set()
    outer += ["--perms", "0755", "--dir", "/tmp", "--perms", "0755", "--dir", HOME]
    made.update({"/tmp", "/home", HOME})
    outer += sandbox_cache.outer_binds(cache, HOME)  # the tenant's package cache
    for path in binds:
        outer += [*_dir_chain(path, made), "--ro-bind", path, path]
    for mount in spec.mounts:
        _check_mount(mount.path, policy.protected)
        flag = "--bind" if mount.writable else "--ro-bind"
        outer += [*_dir_chain(mount.path, made), flag, mount.path, mount.path]
    # Protected paths that a bound directory would show are hidden again.
    for path in policy.protected:
        if any(_inside(path, bound) and path != bound for bound in [*SYSTEM_DIRS, *binds]):
            if os.path.isdir(path):
                outer += ["--tmpfs", path]
            elif os.path.exists(path):
                outer += ["--ro-bind", "/dev/null", path]
    if gitconfig:
        outer += ["--perms", "0755", "--dir", SUPPORT_DIR]
        outer += ["--ro-bind", gitconfig, f"{SUPPORT_DIR}/gitconfig"]
    if resolv_conf and spec.network:
        target = sandbox_network.resolv_conf_target()
        outer += [*_dir_chain(target, made), "--ro-bind", resolv_conf, target]
    uid = uid_for(spec, policy)
    # stdin/stdout/stderr are the gateway's pipes (root's, mode 0600): handed to the
    # server's uid, or opening /dev/stdin in the server fails.
    handover = [
        "/bin/sh",
        "-c",
        f'chown -f {uid}:{uid} /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2; exec "$@"',
        "sh",
    ]
    drop = [
        *handover,
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
    ]
    inner = [
        "bwrap",
        "--unshare-user",
        "--die-with-parent",
        "--dev-bind",  # a plain bind would be nodev: /dev/null must stay openable
        "/",
        "/",
        # Bounded: tmpfs pages are memory that no rlimit counts (the cgroup does).
        "--size",
        str(policy.tmp_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
        "--perms",
        "0700",
        "--size",
        str(policy.tmp_mb * 1024 * 1024),
        "--tmpfs",
        HOME,
    ]
    inner += sandbox_cache.inner_binds(cache, HOME)
    # The private /tmp hides what the outer layer bound under it: bind those again.
    for path, writable in [*((bind, False) for bind in binds), *spec.mounts_bound()]:
        if _inside(path, "/tmp") or _inside(path, HOME):
            inner += ["--bind" if writable else "--ro-bind", path, path]
    if gitconfig:
        inner += ["--ro-bind", f"{SUPPORT_DIR}/gitconfig", f"{HOME}/.gitconfig"]
    inner += ["--chdir", cwd or HOME]
    command = [executable, *args]
    if unset:
        command = ["/usr/bin/env", *(part for name in unset for part in ("-u", name)), *command]
    return [*outer, "--", *_prlimit(spec.limits), "--", *drop, "--", *inner, "--", *command]


def launch(
    executable: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    spec: SandboxSpec,
    policy: SandboxPolicy,
    *,
    unset: Sequence[str] = (),
) -> Launch:
    """What to spawn for this server. `env` is already the server's env plus the base;
    `unset` names variables the spawn adds that the server must not see."""
    if not policy.enabled:
        return Launch([executable, *args], dict(env), cwd)
    limited = replace(spec, limits=spec.limits.over(policy.limits))
    sandboxed_env = dict(env) | {"HOME": HOME}
    argv = sandbox_argv(
        executable,
        args,
        cwd,
        limited,
        policy,
        gitconfig=_support_file(),
        resolv_conf=_support_file("resolv.conf", sandbox_network.RESOLV_CONF),
        unset=unset,
        cache=sandbox_cache.prepare(uid_for(limited, policy)),
    )
    return Launch(argv, sandboxed_env, None)


def effective_limits(spec: SandboxSpec, policy: SandboxPolicy) -> Limits:
    return spec.limits.over(policy.limits)


# What runtimes print when an allocation fails past RLIMIT_DATA (Python, Node, C/C++, Go).
OUT_OF_MEMORY_MARKERS = (
    "MemoryError",
    "Cannot allocate memory",
    "heap out of memory",
    "std::bad_alloc",
    "out of memory",
)


def exit_reason(
    returncode: int | None,
    limits: Limits,
    last_words: Iterable[str] = (),
    oom_killed: bool = False,
) -> str | None:
    """The limit a sandboxed server's exit shows it was stopped by, if any: the CPU limit
    by its signal, the memory limit by its cgroup's OOM kill or by what the runtime
    printed as it died (an allocation past RLIMIT_DATA fails; the runtime then exits or
    aborts)."""
    if returncode is None or returncode == 0:
        return None
    signo = returncode - 128 if returncode > 128 else -returncode
    if signo == signal.SIGXCPU and limits.cpu_seconds:
        return f"the server was stopped by its CPU time limit ({limits.cpu_seconds} s)"
    if limits.memory_mb and oom_killed:
        return f"the server was stopped by its memory limit ({limits.memory_mb} MiB)"
    if limits.memory_mb and any(
        marker in line for line in last_words for marker in OUT_OF_MEMORY_MARKERS
    ):
        return f"the server was stopped by its memory limit ({limits.memory_mb} MiB)"
    return None


# Is it there?

_probed: set[tuple[str, int]] = set()


async def probe(policy: SandboxPolicy, owner: int = 0) -> None:
    """Start an empty sandbox once (per uid); raise ClassifiedFailure when it cannot."""
    uid = policy.uid_base + owner
    if (policy.bwrap, uid) in _probed:
        return
    if shutil.which(policy.bwrap) is None:
        raise ClassifiedFailure(
            f"the sandbox could not start: bubblewrap ({policy.bwrap}) is not installed; {FIX}",
            f"{policy.bwrap} not found on PATH",
        )
    spec = SandboxSpec(owner=owner)
    argv = sandbox_argv("/bin/true", [], None, spec, policy, binds=[])
    try:
        with anyio.fail_after(10):
            result = await anyio.run_process(argv, check=False, env={"PATH": "/usr/bin:/bin"})
    except (OSError, TimeoutError) as exc:
        raise ClassifiedFailure(f"the sandbox could not start; {FIX}", repr(exc)) from None
    if result.returncode != 0:
        said = result.stderr.decode(errors="replace").strip().splitlines()
        detail = said[-1] if said else f"exit status {result.returncode}"
        raise ClassifiedFailure(f"the sandbox could not start ({detail[:200]}); {FIX}", detail)
    _probed.add((policy.bwrap, uid))
