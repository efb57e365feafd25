import { connect, type Socket } from "node:net";

/**
 * A raw TCP connection to a local server, with when it closed: for tests of connection deadlines
 * and caps. What the server sends is read (into `received`): a socket whose unread bytes sit in
 * its buffer never sees the server's FIN, so it would stay open (CLOSE-WAIT) after the server
 * closed it. Node's own headers deadline answers `408` before closing, and on a busy machine it
 * can fire before the proxy's (which sends nothing), so a deadline test saw "still held".
 */
export function openSocket(
  port: number,
): Promise<{ socket: Socket; closedAt: Promise<number>; received: () => string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const closedAt = new Promise<number>((r) => socket.on("close", () => r(Date.now())));
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
    });
    socket.on("error", () => {});
    socket.once("connect", () => resolve({ socket, closedAt, received: () => text }));
    socket.once("error", reject);
  });
}

/** `p`'s value, or null when it has not settled within `ms`. */
export const within = <T>(ms: number, p: Promise<T>): Promise<T | null> =>
  Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), ms))]);
