#!/usr/bin/env python3
"""An independent UDP relay that adds delay: none of Arena's code runs in it.

    udp-relay.py --listen 127.0.0.1:27400 --server 127.0.0.1:27015 --delay-ms 125

Datagrams from each client address go to the server from a socket of their
own, and the server's replies back to that client; each is held for
--delay-ms on the way (so the round trip grows by twice that). Prints a
summary line when stopped (SIGTERM or Ctrl+C): datagrams each way, and each
client's UDP payload each way in kbit/s (bytes over the time from its
first datagram to its last, as they passed the relay).
"""
import time
import argparse
import asyncio
import signal


def addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


class Upstream(asyncio.DatagramProtocol):
    """One client's socket towards the server."""

    def __init__(self, relay, client):
        self.relay, self.client = relay, client

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, _):
        self.relay.down += 1
        self.relay.count(self.client, 1, len(data))
        self.relay.later(lambda: self.relay.listener.sendto(data, self.client))


class Relay(asyncio.DatagramProtocol):
    def __init__(self, server, delay_s):
        self.server, self.delay_s = server, delay_s
        self.upstreams = {}
        self.up = self.down = 0
        # Per client: [first seen, last seen, bytes up, bytes down].
        self.bytes = {}

    def count(self, client, way, n):
        now = time.monotonic()
        entry = self.bytes.setdefault(client, [now, now, 0, 0])
        entry[1] = now
        entry[2 + way] += n

    def connection_made(self, transport):
        self.listener = transport

    def later(self, action):
        asyncio.get_running_loop().call_later(self.delay_s, action)

    def datagram_received(self, data, client):
        self.up += 1
        self.count(client, 0, len(data))
        upstream = self.upstreams.get(client)
        if upstream is None:
            upstream = self.upstreams[client] = asyncio.ensure_future(
                asyncio.get_running_loop().create_datagram_endpoint(
                    lambda: Upstream(self, client), remote_addr=self.server
                )
            )

        async def send():
            transport, _ = await upstream
            transport.sendto(data)

        self.later(lambda: asyncio.ensure_future(send()))


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=addr, required=True)
    parser.add_argument("--server", type=addr, required=True)
    parser.add_argument("--delay-ms", type=float, required=True, help="added each way")
    args = parser.parse_args()
    loop = asyncio.get_running_loop()
    _, relay = await loop.create_datagram_endpoint(
        lambda: Relay(args.server, args.delay_ms / 1000.0), local_addr=args.listen
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    print(f"udp-relay: {relay.up} datagrams up, {relay.down} down, {len(relay.upstreams)} clients", flush=True)
    for client, (first, last, up, down) in relay.bytes.items():
        span = max(last - first, 1e-9)
        print(f"udp-relay: {client[0]}:{client[1]}: {span:.1f} s, up {up * 8 / span / 1000:.2f} kbit/s "
              f"({up} bytes), down {down * 8 / span / 1000:.2f} kbit/s ({down} bytes)", flush=True)


asyncio.run(main())
