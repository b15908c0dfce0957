"""Where things are: the repository and the test servers."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
FIXTURE_SERVER = str(SERVERS / "fixture_server.py")
HOSTILE_SERVER = str(SERVERS / "hostile_server.py")  # a server that tries to escape
SHIFTING_SERVER = str(SERVERS / "shifting_server.py")
KERNEL_SERVER = str(SERVERS / "kernel_server.py")  # a server that reaches for the kernel
RELAY_PROBE = str(SERVERS / "relay_probe.py")  # a server exercising what a gateway relays
UNLISTED_SERVER = str(SERVERS / "unlisted_server.py")  # tools work, other lists fail
TASK_PROBE = str(SERVERS / "task_probe.py")  # a server showing what it gets of a task (1.x)
