# SPDX-License-Identifier: MIT
"""Helpers of samples/gpu/run_top_validation.sh:

  top_check.py compare HSDIR SNAPDIR STEPS [--dry]
      For each step K of STEPS (K,K,...): what the training script said at
      step K (HSDIR/step-K.json: torch.cuda.memory_reserved(),
      memory_allocated()) against `top --once --format json` taken then
      (SNAPDIR/snap-K.json): PyTorch's reserve (from its block layer) equal
      to memory_reserved(), its tensors to memory_allocated(), the step to
      K. --dry (the simulated device, no PyTorch): live bytes equal to what
      the script holds. Prints a table; exit 1 on any difference.
  top_check.py viewed CLI DIR -- COMMAND...
      `CLI top --interval 0.5 DIR` in a pseudo-terminal while COMMAND runs,
      then q: prints one JSON line (COMMAND's status, the view's CPU
      seconds and wall seconds from wait4)."""
import json
import os
import pty
import select
import subprocess
import sys
import threading
import time


def compare(hs, snapdir, steps, dry):
    bad = 0
    print(f"{'step':>5} {'memory_reserved':>16} {'top reserve':>16} {'memory_allocated':>17} {'top tensors':>16} "
          f"{'top live':>14} {'top step':>8}  verdict")
    for k in steps:
        with open(os.path.join(hs, f"step-{k}.json")) as f:
            torch_says = json.load(f)
        with open(os.path.join(snapdir, f"snap-{k}.json")) as f:
            doc = json.load(f)
        procs = [p for p in doc["processes"] if "top_train.py" in p["command"]]
        if len(procs) != 1 or not procs[0]["devices"]:
            print(f"{k:>5} no single traced process with a device in the snapshot: {doc}")
            bad += 1
            continue
        p = procs[0]
        d = p["devices"][0]
        problems = []
        if p["step"] != k:
            problems.append(f"step {p['step']} != {k}")
        if dry:
            if d["live_bytes"] != torch_says["memory_reserved"]:
                problems.append("live != held")
        else:
            if d["reserve_from"] != "blocks":
                problems.append(f"reserve from {d['reserve_from']}, not PyTorch's block layer")
            if d["holders"]["pytorch_reserve"] != torch_says["memory_reserved"]:
                problems.append("reserve != memory_reserved()")
            if d["pytorch_tensors"] != torch_says["memory_allocated"]:
                problems.append("tensors != memory_allocated()")
            if d["live_bytes"] < d["holders"]["pytorch_reserve"]:
                problems.append("live < reserve")
        bad += bool(problems)
        print(f"{k:>5} {torch_says['memory_reserved']:>16} {d['holders']['pytorch_reserve']:>16} "
              f"{str(torch_says['memory_allocated']):>17} {str(d['pytorch_tensors']):>16} {d['live_bytes']:>14} "
              f"{str(p['step']):>8}  {'; '.join(problems) or 'equal'}")
    print(f"top_check: {len(steps) - bad} of {len(steps)} snapshots equal")
    return 1 if bad else 0


def viewed(cli, d, command):
    master, slave = pty.openpty()
    env = dict(os.environ, TERM=os.environ.get("TERM", "xterm-256color"))
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.execve(cli, [cli, "top", "--interval", "0.5", d], env)
    os.close(slave)
    stop = []

    def drain():
        while not stop:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    os.read(master, 65536)
                except OSError:
                    return

    th = threading.Thread(target=drain, daemon=True)
    th.start()
    status = subprocess.run(command).returncode
    time.sleep(1.0)
    os.write(master, b"q")
    _, _, ru = os.wait4(pid, 0)
    stop.append(1)
    th.join()
    print(json.dumps({"status": status, "viewer_cpu_s": ru.ru_utime + ru.ru_stime,
                      "viewer_wall_s": time.monotonic() - t0}))
    return status


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "compare":
        steps = [int(k) for k in sys.argv[4].split(",") if k]
        sys.exit(compare(sys.argv[2], sys.argv[3], steps, "--dry" in sys.argv[5:]))
    if len(sys.argv) >= 6 and sys.argv[1] == "viewed" and sys.argv[4] == "--":
        sys.exit(viewed(sys.argv[2], sys.argv[3], sys.argv[5:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
