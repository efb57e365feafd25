import type { Server } from "node:http";
import type { Socket } from "node:net";

/** How long a Node server of ours waits for a connection's first request (its headers, whole). */
export const FIRST_REQUEST_MS = 20_000;

/**
 * Closes a connection whose first request has not arrived (its headers complete) within `ms` of
 * its accept. Node's own `headersTimeout` only watches a connection once its first byte came: one
 * that sends nothing was held until the client left (issue 49: a connect-and-hold flood needs no
 * credential). Later requests on a kept-alive connection are Node's `headersTimeout` and
 * `keepAliveTimeout` to bound.
 */
export function closeSilentConnections(server: Server, ms: number): void {
  const timers = new WeakMap<Socket, ReturnType<typeof setTimeout>>();
  const settle = (socket: Socket) => {
    clearTimeout(timers.get(socket));
    timers.delete(socket);
  };
  server.on("connection", (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), ms);
    timer.unref();
    timers.set(socket, timer);
    socket.once("close", () => settle(socket));
  });
  server.on("request", (req) => settle(req.socket));
}
