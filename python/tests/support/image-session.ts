/**
 * For the Python image tests: the session of test/support/image-session.ts (three screenshots
 * through the real proxy, each re-sent on later turns) written to a store directory with its
 * result and group shard. Prints one JSON line
 * `{task_id, session_id, images: [base64 of each PNG, in order], blobs: [store keys]}`.
 *   node python/tests/support/image-session.ts STORE_DIR
 */
import { DirectoryStore } from "../../../shared/node/directory-store.ts";
import { IMAGE_SESSION, IMAGE_TASK, writeImageSession } from "../../../test/support/image-session.ts";

const store = new DirectoryStore(process.argv[2] as string);
const { pngs } = await writeImageSession(store);
const images = pngs.map((p) => Buffer.from(p).toString("base64"));
const blobs = await store.list("blobs/sha256/");
process.stdout.write(
  `${JSON.stringify({ task_id: IMAGE_TASK, session_id: IMAGE_SESSION, images, blobs })}\n`,
);
