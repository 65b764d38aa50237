"""The launchers two environment variables put under every Kernel launch, as launch hooks
(api.add_launch_hook):

* PTXJIT_BACKEND=ray (`distributed_launcher`): a launch not on a stream runs across Ray actors
  (ptxjit.distributed); cooperative and cluster launches cannot be distributed (ValueError).
* PTXJIT_CHECK=memcheck,racecheck,... (`check_launcher`): a launch runs under ptxjit.check's tools
  (ptxjit/checking/env.py prints the reports, the summary at exit).  A launch on a stream first waits for
  the stream's earlier work and then runs at once; cooperative and cluster launches (asked for, or the
  kernel's own: `__cluster_dims__`, Numba's grid sync) and launches asked unchecked run unchecked.

`import ptxjit` installs them (install_from_config) when either variable is set, before a program can
install a hook of its own: they are the innermost hooks, so the program's hooks see every launch first and
what those pass on reaches these before ptxjit runs it.  The check's is installed first, Ray's over it: a
launch Ray takes is not checked.  Instrumented launches (the check's own, ptxjit.trace's) go through no
hook, and a launch either makes otherwise goes to ptxjit directly (add_launch_hook).  Without either
variable this module is not loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxjit import config
from ptxjit.api import Launch, LaunchHook, add_launch_hook


def distributed_launcher(launch: Launch, proceed: Callable[..., object]):
    """PTXJIT_BACKEND=ray: the launch runs across the Ray actors (ptxjit.distributed.driver.launch), a
    launch on a stream here."""
    if launch.cooperative or launch.cluster is not None:
        raise ValueError(f"kernel '{launch.kernel.name}': cooperative and cluster launches cannot be instrumented "
                         "or distributed")
    if launch.stream is not None:
        return proceed()
    from ptxjit.distributed.driver import launch as distributed  # Ray loads with it, at the first launch

    return distributed(launch.kernel, launch.grid, launch.block, launch.args, launch.shared_mem, launch.timeout,
                       launch.checked, launch.unchecked)


def check_launcher(tools: str) -> LaunchHook:
    """PTXJIT_CHECK=`tools`: a launch hook that runs each launch under those tools (see the module doc)."""
    from ptxjit.checking.env import checked_launch, start

    start(tools)

    def check(launch: Launch, proceed: Callable[..., object]):
        k = launch.kernel
        if launch.stream is not None:  # checked or not, it runs now: after the stream's earlier work
            launch.stream.synchronize()
            launch = launch.replace(stream=None)
        if not (launch.cooperative or launch.cluster is not None or k._declared_cluster or k._auto_cooperative) \
                and checked_launch(k, tools, launch.grid, launch.block, launch.args, launch.shared_mem,
                                   launch.timeout, launch.checked, launch.unchecked):
            return None
        if "initcheck" in tools:  # what it writes goes unseen: no later read is to be reported for it
            from ptxjit.checking.initcheck import assume_written

            assume_written()
        return proceed(launch)  # not checked (checked_launch said so, or a cooperative or cluster launch)

    return check


def install(backend: str = "", check: str = "") -> Callable[[], None]:
    """Install the launchers `backend` ("ray") and `check` (PTXJIT_CHECK's tools) ask for; the function
    returned removes them."""
    removers = []
    if check:
        removers.append(add_launch_hook(check_launcher(check)))
    if backend == "ray":
        removers.append(add_launch_hook(distributed_launcher))

    def remove() -> None:
        for r in reversed(removers):
            r()

    return remove


def install_from_config() -> Callable[[], None]:
    """The launchers PTXJIT_BACKEND and PTXJIT_CHECK ask for, read once (`import ptxjit` calls this)."""
    return install(config.BACKEND.text().lower(), config.CHECK.text())
