"""Writes the sandbox's seccomp program (classic BPF) to stdout: run by :mod:`engine.formats.seccomp`, never imported.

It runs under the system's Python (``/usr/bin/python3``) because it needs libseccomp's own Python binding,
Debian's ``python3-seccomp``, which is built for that interpreter. libseccomp resolves the syscall numbers of
the native architecture, refuses the other ABIs (x32, i386 through ``int 0x80``) and writes the program that
bubblewrap loads with ``--seccomp FD`` just before it starts the user's command.

The filter allows everything except the calls a sandboxed program has no business making (each fails with
EPERM, so a well-behaved program sees an ordinary error): debugging and reading other processes, mounting,
namespaces, the kernel keyring, BPF, kernel modules and the like; ``clone`` with a namespace flag; ``clone3``
fails with ENOSYS so that the C library falls back to ``clone``, whose flags the filter can read; ``ioctl``
``TIOCSTI``/``TIOCLINUX`` (typing into a terminal). Uses the standard library and ``seccomp`` only.
"""

from __future__ import annotations

import errno
import sys

import seccomp  # type: ignore[import-not-found]  # Debian's python3-seccomp, in the system Python only

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "personality",
)
#: CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
TIOCSTI, TIOCLINUX = 0x5412, 0x541C


def build() -> seccomp.SyscallFilter:
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            rules.add_rule(refuse, name)
        except (RuntimeError, ValueError):  # a call this architecture does not have
            continue
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for request in (TIOCSTI, TIOCLINUX):
        rules.add_rule(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    return rules


if __name__ == "__main__":
    sys.stdout.flush()
    build().export_bpf(sys.stdout)
