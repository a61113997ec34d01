# SPDX-License-Identifier: Apache-2.0
# A process's memory as /proc/PID/status counts it: for the tests that bound what stapled holds under load.


def status_kb(pid, field="VmRSS"):
    """The value in kB of field ("VmRSS", "RssAnon") of pid's status; -1 when it has none."""
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1
