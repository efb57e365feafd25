/**
 * Calls `release` once the answer is over: at once for a complete body, or, for a stream, when the
 * client has read its end, the stream failed, or the client went away. A live stream keeps its
 * call in flight until then, as it keeps the engine busy.
 */
export function releaseOnEnd(res: Response, release: () => void): Response {
  const type = res.headers.get("content-type") ?? "";
  if (!res.body || !type.startsWith("text/event-stream")) {
    release();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
