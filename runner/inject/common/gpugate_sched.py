"""Measures how long the job's own threads waited for a CPU, and ran on one.

The kernel's scheduler statistics (/proc/PID/task/TID/schedstat: time on a
CPU, time runnable but waiting in a run queue, timeslices; nanoseconds,
CONFIG_SCHED_INFO, on in every distribution kernel) count, per thread, the
wait that other work on the host causes: beside CPU hogs a CPU-bound loop's
threads wait for as long as the hogs run in their place. docs/verdicts.md
§5c judges a busy host's runs by it.

Which threads: this process's and those of every process below it (the
DataLoader workers), found through /proc/PID/task/TID/children, whose pids
are in the namespace of the /proc that is mounted (the job's own, in a PID
namespace), so the walk starts at /proc/self, never at os.getpid(). A
thread that exits between two readings keeps its last value: what it
waited after that reading is not counted (at most one step's worth). A
thread first seen at a reading was started after the one before (the
descendants are walked at every reading), so all of its time counts.

Reading never raises: a thread gone between the listing and the read is
skipped; totals() returns None where /proc has no schedstat.
"""

import os


class JobSched:
    """Cumulative CPU and run-queue wait of a process tree's threads."""

    def __init__(self):
        self.last = {}  # (pid, tid) -> (cpu_ns, wait_ns), the last reading
        self.ok = os.path.exists("/proc/self/schedstat")

    def _read(self, path):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            return os.read(fd, 256)
        except OSError:
            return None
        finally:
            os.close(fd)

    def totals(self):
        """(cpu_ns, wait_ns) summed over every thread seen so far, each at
        its latest reading; None without schedstat."""
        if not self.ok:
            return None
        todo, walked = ["self"], set()
        while todo:
            pid = todo.pop()
            if pid in walked:
                continue
            walked.add(pid)
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            if pid == "self":
                real = self._read("/proc/self/stat")  # this process's pid in /proc's namespace
                if real is None:
                    continue
                pid = real.split(b" ", 1)[0].decode()
                walked.add(pid)
            for tid in tids:
                base = f"/proc/{pid}/task/{tid}/"
                st = self._read(base + "schedstat")
                if st:
                    f = st.split()
                    if len(f) >= 2:
                        self.last[(pid, tid)] = (int(f[0]), int(f[1]))
                ch = self._read(base + "children")
                if ch:
                    todo.extend(c.decode() for c in ch.split())
        cpu = sum(v[0] for v in self.last.values())
        wait = sum(v[1] for v in self.last.values())
        return cpu, wait
