"""A minimal Chrome DevTools Protocol driver for the view's browser test: Debian's headless Chromium, no
browser download, driven over its debugging websocket with aiohttp."""

from __future__ import annotations

import asyncio
import base64
import itertools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,900",
)  # fmt: skip


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, binary: str, profile: Path) -> None:
        self._binary, self._profile = binary, profile
        self._process: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)

    async def start(self, timeout_s: float = 30.0) -> None:
        args = [self._binary, *FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-port=0", "about:blank"]
        self._process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self._profile / "DevToolsActivePort"
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not port_file.is_file() or not port_file.read_text().strip():
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("chromium did not open its debugging port")
            await asyncio.sleep(0.05)
        port = port_file.read_text().split()[0]
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as response:
            page = next(t for t in await response.json() if t["type"] == "page")
        self._ws = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._ws is not None
        message_id = next(self._ids)
        await self._ws.send_json({"id": message_id, "method": method, "params": params})
        while True:
            reply = await self._ws.receive_json()
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout_s: float = 10.0, interval_s: float = 0.02) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            value = await self.evaluate(expression)
            if value or asyncio.get_running_loop().time() > deadline:
                return value
            await asyncio.sleep(interval_s)

    async def goto(self, url: str) -> None:
        await self.send("Page.enable")
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'")

    async def reload(self) -> None:
        """Reload the page (as F5 does) and wait until the new document has loaded."""
        await self.evaluate("window.beforeReload = true")
        await self.send("Page.reload")
        await self.wait_for("window.beforeReload === undefined && document.readyState === 'complete'")

    async def screenshot(self, path: Path) -> None:
        data = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(data["data"]))

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
