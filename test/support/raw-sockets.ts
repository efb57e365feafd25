import { connect, type Socket } from "node:net";

/** A raw TCP connection to a local server, with when it closed: for tests of connection deadlines and caps. */
export function openSocket(port: number): Promise<{ socket: Socket; closedAt: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const closedAt = new Promise<number>((r) => socket.on("close", () => r(Date.now())));
    socket.on("error", () => {});
    socket.once("connect", () => resolve({ socket, closedAt }));
    socket.once("error", reject);
  });
}

/** `p`'s value, or null when it has not settled within `ms`. */
export const within = <T>(ms: number, p: Promise<T>): Promise<T | null> =>
  Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), ms))]);
