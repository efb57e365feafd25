/**
 * Every error class the proxy throws on purpose, in one list; each is defined beside the code that
 * throws it. All of them end as an answer in the client's provider shape (`provider-error.ts`).
 */

// The capture store failed after retries: the call is answered 503 so the client retries.
export { CaptureWriteError } from "./capture.ts";
// A request a codec refuses (400, or the status it carries); never sent upstream.
export { CodecError } from "./codecs/codec.ts";
export { BodyTooLargeError } from "./limits.ts";
// A change to the engine replica set the control API refused (unknown replica, the last one, a repeat).
export { ReplicaSetError } from "./routing/replicas.ts";
// The Worker's environment is unusable: the Worker refuses to start.
export { WorkerConfigError } from "./worker-config.ts";
