"""Runs a browser-use agent for a Polar session and prints one JSON line.

browser-use is a library, not a CLI: this is the small driver the preset runs. It starts the
task's web app (`serve`, a shell command, when the task has one) inside the same sandbox, so the
browser reaches it on 127.0.0.1 with no network path beside the proxy; launches the system's
Chromium headless with its profile under HOME; and runs one agent whose LLM is browser-use's
ChatOpenAI pointed at the proxy (OpenAI Chat Completions, screenshots as image parts).
With `display: "xvfb"` the browser runs with a window on a virtual X display (Xvfb, started
here, inside the sandbox) instead of headless.
Settings come from the JSON file named in argv[1]; the API key from POLAR_API_KEY.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request


def start_app(command: str) -> subprocess.Popen:
    # Its own process group, so stopping it stops whatever the command started.
    return subprocess.Popen(["sh", "-c", command], start_new_session=True)


def wait_for(url: str, app: subprocess.Popen | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if app is not None and app.poll() is not None:
            raise RuntimeError(f"the task's app exited with {app.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception as err:  # refused while the app starts
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {timeout_s:.0f} s: {err}") from err
            time.sleep(0.1)


def start_xvfb(screen: str) -> tuple[subprocess.Popen, str]:
    """Xvfb on the first free display (it writes the number it took to -displayfd), no TCP."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", screen, "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        number = f.readline().strip()
    if not number.isdigit():
        stop_app(xvfb)
        raise RuntimeError(f"Xvfb did not start (exit {xvfb.poll()}): no display number")
    return xvfb, f":{number}"


def stop_app(app: subprocess.Popen | None) -> None:
    if app is None or app.poll() is not None:
        return
    os.killpg(app.pid, signal.SIGTERM)
    try:
        app.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(app.pid, signal.SIGKILL)


async def run_agent(settings: dict, instruction: str) -> dict:
    from browser_use import Agent, BrowserProfile, BrowserSession
    from browser_use.llm.openai.chat import ChatOpenAI

    llm = ChatOpenAI(
        model=settings["model"],
        base_url=settings["base_url"],
        api_key=os.environ["POLAR_API_KEY"],
        max_retries=settings["max_retries"],
        **settings["llm"],
    )
    profile = BrowserProfile(
        **{
            "executable_path": settings["chromium"],
            "headless": settings["display"] == "headless",
            # The session's sandbox leaves Chromium no user namespaces for its own sandbox.
            "chromium_sandbox": False,
            "user_data_dir": settings["profile_dir"],
            "downloads_path": settings["downloads_dir"],
            # browser-use would fetch ad-block extensions from the Chrome Web Store.
            "enable_default_extensions": False,
            # The preset's Chromium flags (no name lookups, no background fetches), then the task's.
            **settings["browser"],
        }
    )
    agent_kwargs = dict(settings["agent"])
    max_steps = agent_kwargs.pop("max_steps")
    start_url = settings.get("start_url")
    if start_url:
        agent_kwargs.setdefault("initial_actions", [{"navigate": {"url": start_url, "new_tab": False}}])
    session = BrowserSession(browser_profile=profile)
    # Started here, so a browser that cannot start fails the session (exit 1) instead of ending an
    # episode in which the agent never saw a page.
    await session.start()
    agent = Agent(
        task=instruction,
        llm=llm,
        browser_session=session,
        file_system_path=settings["file_system_dir"],
        **agent_kwargs,
    )
    history = await agent.run(max_steps=max_steps)
    return {
        "done": history.is_done(),
        "success": history.is_successful(),
        "answer": history.final_result(),
        "steps": history.number_of_steps(),
        "errors": [e for e in history.errors() if e],
    }


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        settings = json.load(f)
    if settings["display"] not in ("headless", "xvfb"):
        raise SystemExit(f'display: "headless" or "xvfb", not {settings["display"]!r}')
    xvfb = None
    if settings["display"] == "xvfb":
        xvfb, os.environ["DISPLAY"] = start_xvfb(settings["screen"])
    app = start_app(settings["serve"]) if settings.get("serve") else None
    try:
        if settings.get("start_url"):
            wait_for(settings["start_url"], app, settings["app_ready_seconds"])
        result = asyncio.run(run_agent(settings, sys.argv[2]))
        result["display"] = os.environ.get("DISPLAY") if xvfb else "headless"
    finally:
        stop_app(app)
        stop_app(xvfb)
    print(json.dumps({"polar_result": result}))
    # Whether the agent finished (`done`) is the preset's to read from the result line.
    return 0


if __name__ == "__main__":
    sys.exit(main())
