#!/usr/bin/env node
// Runs INSIDE a sandbox whose network is cut: listens on 127.0.0.1:<port> and forwards each connection
// to a Unix socket bind-mounted from the host (where socket-bridge.ts forwards on to the proxy), then
// runs the given command. So the agent reaches the proxy, and nothing else.
// Usage: node sandbox-bridge.mjs <socket> <port> -- <argv...>
// Plain JavaScript without dependencies: it must run on whatever node the sandbox sees.
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { connect, createServer } from "node:net";
import { basename, dirname } from "node:path";

const [socketPath, port, sep, ...argv] = process.argv.slice(2);
if (!socketPath || !port || sep !== "--" || argv.length === 0) {
  process.stderr.write("usage: sandbox-bridge.mjs <socket> <port> -- <argv...>\n");
  process.exit(2);
}

// sun_path holds 108 bytes: a longer path (a deep sessions dir, a long session id) is reached
// through an open descriptor of its directory, as socket-bridge.ts binds it on the host.
const address =
  Buffer.byteLength(socketPath) <= 107
    ? socketPath
    : `/proc/self/fd/${openSync(dirname(socketPath), "r")}/${basename(socketPath)}`;

const server = createServer((client) => {
  const upstream = connect(address);
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", close);
  upstream.on("error", close);
});

server.listen(Number(port), "127.0.0.1", () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: "inherit" });
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
  child.on("error", (err) => {
    process.stderr.write(`sandbox-bridge: ${argv[0]}: ${err.message}\n`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 9 : 1)));
});
server.on("error", (err) => {
  process.stderr.write(`sandbox-bridge: cannot listen on 127.0.0.1:${port}: ${err.message}\n`);
  process.exit(125);
});
