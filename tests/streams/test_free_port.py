"""free_port draws a port below the ephemeral range, so a client's outgoing connection cannot take it first."""

from __future__ import annotations

import socket

from streams.embedded import LISTEN_PORTS, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    port = free_port()
    assert port in LISTEN_PORTS
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))  # nothing holds it


def test_a_port_in_use_is_never_returned() -> None:
    held = []
    try:
        for port in LISTEN_PORTS[:200]:  # hold the first 200 ports and draw until one of them would come up
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                sock.close()
                continue
            sock.listen()
            held.append(sock)
        taken = {sock.getsockname()[1] for sock in held}
        drawn = {free_port() for _ in range(300)}
        assert not drawn & taken
    finally:
        for sock in held:
            sock.close()
