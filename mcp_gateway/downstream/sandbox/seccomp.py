"""The sandbox's seccomp filter: the system calls no MCP server needs, refused.

A sandboxed server runs in user namespaces of its own, and a user namespace opens kernel
code that is otherwise root's: a server that makes a nested one (`unshare -U -r`) is root
there and may mount, load BPF, and so on. The filter takes that surface away: namespaces
(unshare, clone with a CLONE_NEW* flag, setns), kernel keyrings, ptrace and reading
another process's memory, BPF and perf events, io_uring and userfaultfd (the usual
exploit primitives), mounts of every kind, and what only an administrator of the host
does (modules, kexec, reboot, swap, clocks, accounting, quotas). Each is refused with
EPERM, as a kernel that does not allow it would; everything else is allowed.

clone3 passes its flags in memory, where a filter cannot read them: it gets ENOSYS, and
the C library (glibc since 2.34, for threads and posix_spawn) falls back to clone, whose
flags the filter reads. Compatibility system calls (i386 and x32 on x86_64) get the same
rules; any other architecture's are killed.

The filter is built with libseccomp (through `pyseccomp`, ctypes over Debian's
libseccomp2), once per process, and handed to the inner bubblewrap with `--seccomp FD`
(`argv`): bubblewrap installs it last, just before it runs the server, so its own setup
(the user namespace, the mounts) is not filtered and everything the server starts is.
"""

from __future__ import annotations

import errno
import functools
import logging
import tempfile

from kernel.classified import ClassifiedFailure

logger = logging.getLogger("workbench.sandbox")
UNKNOWN = -1  # libseccomp's __NR_SCMP_ERROR: a name this libseccomp does not know

# Refused with EPERM whatever their arguments.
REFUSED = (
    # namespaces (unshare and clone: below, by their flags)
    "setns",
    # kernel keyrings
    "add_key",
    "keyctl",
    "request_key",
    # another process's memory; the kernel's own tracing and BPF
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "perf_event_open",
    # exploit primitives no server needs
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # mounts
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    # the host administrator's
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "open_by_handle_at",
    "fanotify_init",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "sethostname",
    "setdomainname",
    "vhangup",
    "uselib",
)
# The CLONE_NEW* flags: unshare and clone with any of them are refused (CLONE_NEWTIME,
# 0x80, is unshare's only: in clone's flags those bits are the exit signal).
CLONE_NEW = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
CLONE_NEWTIME = 0x00000080
FIX = (
    "install libseccomp (Debian/Ubuntu: apt-get install libseccomp2) for the sandbox's "
    "seccomp filter, or set WORKBENCH_SANDBOX=none to run stdio servers unsandboxed"
)


@functools.cache
def program() -> bytes:
    """The filter as a BPF program (what `bwrap --seccomp FD` reads); ClassifiedFailure
    when libseccomp is missing."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:  # no libseccomp.so.2
        raise ClassifiedFailure(f"the sandbox could not start; {FIX}", repr(exc)) from None
    refuse, absent = seccomp.ERRNO(errno.EPERM), seccomp.ERRNO(errno.ENOSYS)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    if seccomp.system_arch() == seccomp.Arch.X86_64:
        rules.add_arch(seccomp.Arch.X86)
        rules.add_arch(seccomp.Arch.X32)
    unknown = [n for n in REFUSED if seccomp.resolve_syscall(seccomp.Arch.NATIVE, n) == UNKNOWN]
    if unknown:  # an older libseccomp than Debian 12's 2.5.4
        logger.warning("sandbox seccomp: libseccomp does not know %s", ", ".join(unknown))
    for name in REFUSED:
        if name not in unknown:
            rules.add_rule(refuse, name)
    for flag in (*CLONE_NEW.values(), CLONE_NEWTIME):
        rules.add_rule(refuse, "unshare", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for flag in CLONE_NEW.values():
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(absent, "clone3")
    with tempfile.TemporaryFile() as exported:
        rules.export_bpf(exported)
        exported.seek(0)
        return exported.read()
